using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;
using Contend.Coyote.Strife;
using static Contend.Coyote.Strife.StrifeTests;

namespace Contend.Coyote.Runtime;

/// <summary>
/// The engine as a service embeds it: <see cref="ContendEngine"/>'s own concurrency, around
/// Strife (the protocol <see cref="StrifeTests"/> explores, batches of the queue) and NoWait (a
/// per-transaction protocol, one request per worker at a time). Two submitters each submit three
/// increments one at a time, awaiting each, so the workers run dry and sleep between them
/// (with the backlog bounded at 1, the submitters take turns waiting for room); then a last
/// submission races the engine's drain (the first half of disposing it). On every schedule: every task the engine accepted ends (none
/// sleeps in the queue, none is dropped by the drain), the backlog stays within its bound, each
/// answer carries its own transaction's results, every row holds its committed increments,
/// and the history is serializable. The twins break the engine, not Strife: a lost wake-up, and a close that
/// does not wait for a submission under way.
/// </summary>
public static class EngineTests
{
    const uint Steps = 40_000;
    const int A = 0, B = 1;
    const string Dropped = "EveryAcceptedEndsInv";

    /// <remarks>The twins' bugs each need one thread held back at one point while the others
    /// run many steps (a submitter between its check and its enqueue, a worker between its look
    /// for work and its sleep), which Coyote's priority-based schedules do and random ones
    /// almost never; so they run prioritized, and so does a correct run beside them.</remarks>
    public static IEnumerable<CoyoteTest> All =>
    [
        new("StrifeEngine", () => Run(Strife, EngineMutants.None, workers: 2), MaxSteps: Steps, Iterations: CorrectRuns),
        new("StrifeEngineOneWorker", () => Run(Strife, EngineMutants.None, workers: 1), MaxSteps: Steps, Iterations: CorrectRuns),
        new("StrifeEngineBounded", () => Run(Strife, EngineMutants.None, workers: 2, maxPending: 1), MaxSteps: Steps, Iterations: CorrectRuns),
        // Non-vacuity: whether a submitter finds the backlog full depends on the schedule, so the
        // test asserts it never does, and Coyote must break that.
        new("StrifeEngineBoundedWaitReachable", () => Run(Strife, EngineMutants.None, workers: 2, maxPending: 1, assertNeverWaited: true),
            CaughtBy: "BoundedWaitReachable", MaxSteps: Steps),
        new("StrifeEnginePrioritized", () => Run(Strife, EngineMutants.None, workers: 2), MaxSteps: Steps, Prioritized: true, Iterations: CorrectRuns),
        // Every worker asleep while a submitter awaits a transaction left in the queue: a deadlock.
        new("StrifeEngineTwinLostWakeup", () => Run(Strife, EngineMutants.LostWakeup, workers: 2), CaughtBy: "Deadlock", MaxSteps: Steps, Prioritized: true),
        new("StrifeEngineTwinCloseWithoutWait", () => Run(Strife, EngineMutants.CloseWithoutWait, workers: 2), CaughtBy: Dropped, MaxSteps: Steps, Prioritized: true),
        // The per-transaction workers' loop: the same schedules, the same twins.
        new("NoWaitEngine", () => Run(NoWait, EngineMutants.None, workers: 2, maxPending: 1), MaxSteps: Steps, Prioritized: true, Iterations: CorrectRuns),
        new("NoWaitEngineTwinLostWakeup", () => Run(NoWait, EngineMutants.LostWakeup, workers: 2), CaughtBy: "Deadlock", MaxSteps: Steps, Prioritized: true),
        new("NoWaitEngineTwinCloseWithoutWait", () => Run(NoWait, EngineMutants.CloseWithoutWait, workers: 2), CaughtBy: Dropped, MaxSteps: Steps, Prioritized: true),
    ];

    const string Strife = "Strife", NoWait = "NoWait";

    /// <summary>Schedules per correct run: each takes 10-15 ms (a whole engine started and
    /// drained), so 10,000 took 2 minutes apiece; the twins are caught within a few hundred.</summary>
    const int CorrectRuns = 2_500;

    /// <param name="maxPending">the engine's bound on its backlog: at 1, the two submitters take
    /// turns, one waiting for room while the other's transaction is queued</param>
    static async Task Run(string protocol, EngineMutants mutants, int workers, int? maxPending = null, bool assertNeverWaited = false)
    {
        var db = new Database(); // the engine disposes it
        var table = db.Create("rec", sizeof(long), 2);
        table.Load(A);
        table.Load(B);
        TxnSpec[] specs = [new(A), new(B), new(A, B)];
        var programs = specs.Select((s, i) => Build(db, $"t{i}", s)).ToArray();
        long[] Args(TxnSpec s) => [.. s.Ops.Select(o => (long)o.Row), 0];

        var options = new EngineOptions
        {
            Protocol = protocol, Workers = workers, Pin = false, RecordHistory = true, Name = "coyote", QueueCapacity = maxPending ?? 1_000,
            ProtocolOptions = protocol == Strife ? new StrifeOptions(BatchSize: 2, Alpha: 1, SpotRounds: 4, NoWaitRetries: 1, Seed: 3) : null,
        };
        // Requests answered through tasks: Coyote controls those, not a pooled source's continuations.
        var engine = new ContendEngine(db, options, mutants, taskRequests: true);
        var answered = new List<(TxnSpec Spec, TxnOutcome Outcome, long[] Results)>();
        var submitters = Enumerable.Range(0, 2).Select(s => Task.Run(async () =>
        {
            for (int i = 0; i < 3; i++)
            {
                int t = (s + i) % specs.Length;
                var spec = specs[t];
                var results = new long[programs[t].Ops.Length];
                var submitted = engine.ExecuteAsync(programs[t], Args(spec), results);
                Specification.Assert(engine.Pending <= (maxPending ?? int.MaxValue), $"{engine.Pending} pending, over the bound {maxPending}");
                var outcome = await submitted;
                lock (answered) answered.Add((spec, outcome, results));
            }
        })).ToArray();
        await Task.WhenAll(submitters);
        if (assertNeverWaited)
            Specification.Assert(engine.Waited == 0, "BoundedWaitReachable: a submission found the backlog full and waited for room");

        // The last submission is refused (at once, or while it waits for room) or accepted and
        // run before the drain returns.
        Task<TxnOutcome>? last = null;
        var lastResults = new long[programs[2].Ops.Length];
        var racer = Task.Run(() => { last = engine.ExecuteAsync(programs[2], Args(specs[2]), lastResults).AsTask(); });
        engine.Drain();
        await racer;
        Specification.Assert(last!.IsCompleted, $"{Dropped}: a submission accepted before the drain was still {last.Status} after it");
        if (last.IsCompletedSuccessfully) answered.Add((specs[2], last.Result, lastResults));
        else Specification.Assert(last.Exception?.InnerException is EngineClosedException, $"the last submission ended {last.Status}: {last.Exception?.InnerException?.Message}");

        // Every increment of a row saw a different count: an answer carrying another
        // transaction's results, or an increment lost, shows here.
        foreach (int row in new[] { A, B })
        {
            var seen = answered.Where(a => a.Outcome.Committed)
                               .Select(a => Array.FindIndex(a.Spec.Ops, o => o.Row == row) is var k and >= 0 ? a.Results[k] : -1)
                               .Where(v => v >= 0).Order().ToArray();
            long held = BinaryPrimitives.ReadInt64LittleEndian(table.Payload(table.Find(row)));
            Specification.Assert(seen.SequenceEqual(Enumerable.Range(1, seen.Length).Select(v => (long)v)),
                $"row {row}: the answers saw counts {string.Join(",", seen)}, not 1..{seen.Length}");
            Specification.Assert(held == seen.Length, $"row {row} holds {held}, but {seen.Length} committed transactions incremented it");
        }
        Specification.Assert(answered.All(a => a.Outcome.Committed), "an increment did not commit: conflict aborts are retried inside the engine");
        var report = SerializabilityChecker.Check(engine.History());
        Specification.Assert(report.Serializable, $"history not serializable: {report.Anomalies.FirstOrDefault()?.Description}");
        engine.Dispose();
    }
}
