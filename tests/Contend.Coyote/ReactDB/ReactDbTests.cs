using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote.ReactDB;

/// <summary>
/// ReactDB's engine under Coyote: two containers of one executor each, and roots whose
/// sub-transactions cross between them, as in specs/ReactDB's workloads. On every schedule the
/// committed history is serializable and the invariants of ReactDB.tla that the workload can
/// break hold: the money is all there (atomicity, results before commit), a root whose calls all
/// stay in its container never takes the conservative abort, and a sub-transaction's abort ends
/// its root. A twin per mutant of the spec that applies to code (ReactDbMutants), each caught.
/// </summary>
/// <remarks>ReactDBMutantSharedContext's lost write needs two threads inside one write-set update,
/// which has no scheduling point here; its twin is caught as the spec's
/// <c>...SharedContextThreads</c> is, by two sub-transactions of one root inside one container's
/// context at once (OneThreadPerContextInv).</remarks>
public static class ReactDbTests
{
    const uint Steps = 20_000;
    const int CorrectRuns = 300;

    public static IEnumerable<CoyoteTest> All =>
    [
        new("ReactDBTransfers", () => Transfers(ReactDbMutants.None), MaxSteps: Steps, Iterations: CorrectRuns),
        new("ReactDBBlindWrite", () => BlindWrite(ReactDbMutants.None), MaxSteps: Steps, Iterations: CorrectRuns),
        // The schedules that catch the commit's twins hold one root's commit back at one point
        // while the other commits whole: prioritized, as those twins run.
        new("ReactDBTransfersPrioritized", () => Transfers(ReactDbMutants.None), MaxSteps: Steps, Prioritized: true, Iterations: CorrectRuns),
        new("ReactDBBlindWritePrioritized", () => BlindWrite(ReactDbMutants.None), MaxSteps: Steps, Prioritized: true, Iterations: CorrectRuns),
        new("ReactDBSynchronousCalls", () => SynchronousCalls(ReactDbMutants.None), MaxSteps: Steps, Iterations: 50),
        new("ReactDBChildAbort", () => ChildAbort(ReactDbMutants.None), MaxSteps: Steps, Iterations: 50),
        new("ReactDBTwinCommitBeforeWaiting", () => Transfers(ReactDbMutants.CommitBeforeWaiting), CaughtBy: Money, MaxSteps: Steps),
        new("ReactDBTwinSkipRemoteValidation", () => Transfers(ReactDbMutants.SkipRemoteValidation), CaughtBy: Money, MaxSteps: Steps, Prioritized: true),
        new("ReactDBTwinPartialWrite", () => Transfers(ReactDbMutants.PartialWrite), CaughtBy: Money, MaxSteps: Steps),
        new("ReactDBTwinInstallAtValidation", () => Transfers(ReactDbMutants.InstallAtValidation), CaughtBy: Money, MaxSteps: Steps, Prioritized: true),
        new("ReactDBTwinPaperLinear", () => BlindWrite(ReactDbMutants.PaperLinear), CaughtBy: Serializable, MaxSteps: Steps, Prioritized: true),
        new("ReactDBTwinReadIgnoresLocks", () => BlindWrite(ReactDbMutants.ReadIgnoresLocks), CaughtBy: Serializable, MaxSteps: Steps),
        new("ReactDBTwinEnqueueSameContainer", () => SynchronousCalls(ReactDbMutants.EnqueueSameContainer), CaughtBy: "ConservativeAbortInv", MaxSteps: Steps),
        new("ReactDBTwinChildAbortNotPropagated", () => ChildAbort(ReactDbMutants.ChildAbortNotPropagated), CaughtBy: "AbortRootInv", MaxSteps: Steps),
        // The front door: its disposal racing calls that wait for a slot.
        new("ReactDBDisposeRacesSubmissions", () => DisposeRacesSubmissions(ReactDbMutants.None), MaxSteps: Steps, Iterations: CorrectRuns),
        new("ReactDBTwinStartsAfterClose", () => DisposeRacesSubmissions(ReactDbMutants.StartsAfterClose), CaughtBy: "Deadlock", MaxSteps: Steps),
        // Containers of two executors: two sub-transactions of one root may be dequeued at once.
        new("ReactDBTwoChildrenOneContainer", () => TwoChildrenOneContainer(ReactDbMutants.None), MaxSteps: Steps, Iterations: CorrectRuns),
        new("ReactDBTwinSharedContext", () => TwoChildrenOneContainer(ReactDbMutants.SharedContext), CaughtBy: OneThread, MaxSteps: Steps),
        // Non-vacuity: the schedules above do reach the conservative abort.
        new("ReactDBConservativeAbortReachable", () => TwoChildrenOneContainer(ReactDbMutants.None, assertNoConservativeAbort: true),
            CaughtBy: "ConservativeAbortReachable", MaxSteps: Steps),
        new("ReactDBExactlyOnce", () => ExactlyOnce(ReactDbMutants.None), MaxSteps: Steps, Iterations: 50),
        new("ReactDBTwinDoubleDequeue", () => ExactlyOnce(ReactDbMutants.DoubleDequeue), CaughtBy: "ExactlyOnceInv", MaxSteps: Steps),
        new("ReactDBTwinFailedRootHangs", () => ChildAbort(ReactDbMutants.FailedRootHangs), CaughtBy: "Deadlock", MaxSteps: Steps),
    ];

    const string Money = "MoneyInv", Serializable = "SerializableInv", OneThread = "OneThreadPerContextInv";
    internal const long Initial = 100;

    /// <summary>Reactors acct0..acct(n-1), acct i on container i % 2, each with rows 0 and 1 of "balance" at <see cref="Initial"/>.</summary>
    internal static ReactorDeployment Bank(int reactors)
    {
        var db = new Database();
        var payload = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(payload, Initial);
        for (int i = 0; i < reactors; i++)
        {
            var table = db.Create($"acct{i}.balance", 8, 2);
            table.Load(0, payload);
            table.Load(1, payload);
        }
        var deployment = new ReactorDeployment(db, 2);
        for (int i = 0; i < reactors; i++) deployment.Add($"acct{i}", i % 2, "balance");
        return deployment;
    }

    static ReactDbEngine Engine(ReactorDeployment deployment, ReactDbMutants mutants, int? maxAttempts = null, int executors = 1) =>
        new(deployment, new ReactDbOptions { ExecutorsPerContainer = executors, RecordHistory = true, MaxRootsInFlight = 4, MaxAttempts = maxAttempts }, mutants, taskAnswers: true);

    internal static long Add(Span<byte> row, long amount)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + amount;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }

    internal static long Value(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    /// <summary>args: row, amount.</summary>
    internal static readonly ReactorFunction Deposit = new("deposit", (call, args) =>
    {
        long row = args.Span[0], amount = args.Span[1];
        return ValueTask.FromResult(call.Write(call.Reactor.Relation("balance"), row, r => Add(r, amount)));
    });

    static readonly ReactorFunction ReadRow = new("read", (call, args) =>
        ValueTask.FromResult(call.Read(call.Reactor.Relation("balance"), args.Span[0], Value)));

    static async Task<long> Committed(ReactDbEngine engine, Reactor reactor, long row)
    {
        var r = await engine.ExecuteAsync(reactor, ReadRow, new[] { row });
        Specification.Assert(r.Outcome.Committed, $"reading {reactor}'s row {row} ended {r.Outcome.Outcome}");
        return r.Value;
    }

    /// <summary>Checks the history, then disposes the engine, which waits for its executors'
    /// threads to end: an iteration leaves no thread behind for the next (a twin's stray
    /// sub-transaction included), so every iteration starts from the same state.</summary>
    static async Task<SerializabilityChecker.Report> Quiesce(ReactDbEngine engine)
    {
        var report = SerializabilityChecker.Check(engine.History());
        await engine.DisposeAsync();
        return report;
    }

    static void AssertSerializable(SerializabilityChecker.Report report) =>
        Specification.Assert(report.Serializable, $"{Serializable}: {report.Anomalies.FirstOrDefault()?.Kind} {report.Anomalies.FirstOrDefault()?.Description}");

    /// <summary>
    /// The children workload's shape: T on container 0 takes 1 from its row 0 and deposits it in
    /// acct1's row 0 (container 1), awaiting the deposit; U on container 1 takes 1 from that same
    /// row and deposits it in acct0's row 1 without awaiting it. The two conflict on one row only,
    /// in T's remote container and U's own. Both retry their conflicts until they commit; then
    /// each row holds what the two transfers leave, and the history is serializable.
    /// </summary>
    static async Task Transfers(ReactDbMutants mutants)
    {
        var deployment = Bank(2);
        var engine = Engine(deployment, mutants);
        var a0 = deployment.Reactors[0];
        var a1 = deployment.Reactors[1];
        var awaiting = new ReactorFunction("transferAwaiting", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, -1));
            return await call.CallAsync(a1, Deposit, new long[] { 0, 1 });
        });
        var firing = new ReactorFunction("transferFiring", (call, none) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, -1));
            _ = call.CallAsync(a0, Deposit, new long[] { 1, 1 }); // its result never awaited
            return ValueTask.FromResult(0L);
        });
        var results = await Task.WhenAll(engine.ExecuteAsync(a0, awaiting, default).AsTask(), engine.ExecuteAsync(a1, firing, default).AsTask());
        long x0 = await Committed(engine, a0, 0), x1 = await Committed(engine, a0, 1), y0 = await Committed(engine, a1, 0);
        var report = await Quiesce(engine);
        Specification.Assert(results.All(r => r.Outcome.Committed), "a transfer did not commit: conflicts are retried");
        Specification.Assert(x0 == Initial - 1 && x1 == Initial + 1 && y0 == Initial,
            $"{Money}: after the two transfers, acct0 holds {x0} and {x1}, acct1 {y0}; expected {Initial - 1}, {Initial + 1}, {Initial}");
        AssertSerializable(report);
    }

    /// <summary>
    /// The blind-write workload (proofs/ReactDB.md, 4): T on container 0 reads x (its row 1) and
    /// has a child on container 1 overwrite w (acct1's row 1) without reading it; U on container 1
    /// increments w and has a child increment x. Linear validation lets T validate x, U commit
    /// both, and T then lock the free w: T read the old x but overwrote U's w.
    /// </summary>
    static async Task BlindWrite(ReactDbMutants mutants)
    {
        var deployment = Bank(2);
        var engine = Engine(deployment, mutants, maxAttempts: 1);
        var a0 = deployment.Reactors[0];
        var a1 = deployment.Reactors[1];
        var overwrite = new ReactorFunction("overwriteW", (call, _) =>
            ValueTask.FromResult(call.Overwrite(call.Reactor.Relation("balance"), 1, r => Add(r, 7))));
        var t = new ReactorFunction("readXOverwriteW", async (call, _) =>
        {
            long x = call.Read(call.Reactor.Relation("balance"), 1, Value);
            await call.CallAsync(a1, overwrite, default);
            return x;
        });
        var u = new ReactorFunction("incrementWAndX", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 1, r => Add(r, 1));
            return await call.CallAsync(a0, Deposit, new long[] { 1, 1 });
        });
        await Task.WhenAll(engine.ExecuteAsync(a0, t, default).AsTask(), engine.ExecuteAsync(a1, u, default).AsTask());
        AssertSerializable(await Quiesce(engine));
    }

    /// <summary>A root whose calls all stay in its container (acct0 and acct2 are both on
    /// container 0) runs them synchronously in its own context: it never takes the conservative
    /// abort, whatever runs beside it (ConservativeAbortInv).</summary>
    static async Task SynchronousCalls(ReactDbMutants mutants)
    {
        var deployment = Bank(3);
        var engine = Engine(deployment, mutants, maxAttempts: 1);
        var a0 = deployment.Reactors[0];
        var a2 = deployment.Reactors[2];
        var nested = new ReactorFunction("nested", async (call, _) =>
        {
            long here = await call.CallAsync(a2, Deposit, new long[] { 0, 1 });
            return here + await call.CallAsync(a2, Deposit, new long[] { 1, 1 });
        });
        ReactorResult r;
        try
        {
            r = await engine.ExecuteAsync(a0, nested, default);
        }
        catch (ReactorCallCycleException cycle)
        {
            // The twin's queued callee meets its own caller's context: the engine names that as a call cycle.
            Specification.Assert(false, $"ConservativeAbortInv: a root with only same-container calls ended on the conservative abort, as a call cycle ({cycle.Chain})");
            return;
        }
        var report = await Quiesce(engine);
        AssertSerializable(report);
        Specification.Assert(r.Outcome.Committed, $"ConservativeAbortInv: a root with only same-container calls ended {r.Outcome.Outcome} ({r.Outcome.Reason})");
    }

    /// <summary>
    /// The front door closing under load: one root slot, three callers depositing into one row
    /// and the disposal, all at once, so that calls wait for the slot while the engine closes.
    /// Every call ends, committed or refused with <see cref="EngineClosedException"/> (it did not
    /// run); the disposal ends; and the calls that committed are exactly the roots the history
    /// and the engine's counts hold (FrontDoorInv).
    /// </summary>
    static async Task DisposeRacesSubmissions(ReactDbMutants mutants)
    {
        var deployment = Bank(1);
        var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 1, RecordHistory = true, MaxRootsInFlight = 1 },
                                       mutants, taskAnswers: true);
        var a0 = deployment.Reactors[0];
        async Task<bool> Deposits()
        {
            try
            {
                var r = await engine.ExecuteAsync(a0, Deposit, new long[] { 0, 1 });
                Specification.Assert(r.Outcome.Committed, $"FrontDoorInv: a deposit ended {r.Outcome.Outcome}; nothing conflicts with it but another deposit, which is retried");
                return true;
            }
            catch (EngineClosedException)
            {
                return false;
            }
        }
        var calls = new[] { Task.Run(Deposits), Task.Run(Deposits), Task.Run(Deposits) };
        var disposal = Task.Run(async () => await engine.DisposeAsync());
        int committed = (await Task.WhenAll(calls)).Count(ran => ran);
        await disposal;
        var counts = engine.Counts();
        int roots = engine.History().Count;
        Specification.Assert(roots == committed && counts.Committed == committed,
            $"FrontDoorInv: {committed} calls answered Committed, the history holds {roots} roots, the engine counts {counts.Committed}");
    }

    /// <summary>A sub-transaction on the other container writes and aborts the root: the root ends
    /// UserAborted and nothing of it is written (AbortRootInv).</summary>
    static async Task ChildAbort(ReactDbMutants mutants)
    {
        var deployment = Bank(2);
        var engine = Engine(deployment, mutants);
        var a0 = deployment.Reactors[0];
        var a1 = deployment.Reactors[1];
        var refuse = new ReactorFunction("refuse", (call, none) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, 5));
            call.AbortRoot();
            return ValueTask.FromResult(0L);
        });
        var root = new ReactorFunction("payThenRefuse", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, -5));
            return await call.CallAsync(a1, refuse, default);
        });
        var r = await engine.ExecuteAsync(a0, root, default);
        long r0 = await Committed(engine, a0, 0), r1 = await Committed(engine, a1, 0);
        var report = await Quiesce(engine);
        AssertSerializable(report);
        Specification.Assert(r.Outcome.Outcome == Outcome.UserAborted, $"AbortRootInv: the root ended {r.Outcome.Outcome} ({r.Outcome.Reason}) after its sub-transaction aborted it");
        Specification.Assert(r0 == Initial && r1 == Initial, $"AbortRootInv: an aborted root left rows at {r0} and {r1}");
    }

    /// <summary>
    /// D2 with two executors a container: a root on container 0 calls acct1 and acct3 (both on
    /// container 1) without awaiting between the calls, and each callee yields its thread halfway.
    /// The second callee dequeued while the first holds the root's context there takes the
    /// conservative abort instead of entering it: never are both inside at once
    /// (OneThreadPerContextInv). The root commits both deposits, or ends on that abort.
    /// </summary>
    /// <param name="assertNoConservativeAbort">non-vacuity: fail once a root ends on the conservative abort</param>
    static async Task TwoChildrenOneContainer(ReactDbMutants mutants, bool assertNoConservativeAbort = false)
    {
        var deployment = Bank(4);
        var engine = Engine(deployment, mutants, maxAttempts: 1, executors: 2);
        var a0 = deployment.Reactors[0];
        int inside = 0;
        bool overlapped = false;
        var yieldingDeposit = new ReactorFunction("yieldingDeposit", async (call, _) =>
        {
            if (Interlocked.Increment(ref inside) > 1) overlapped = true;
            try
            {
                await Task.Yield(); // gives the thread back, holding the context (D1, D2)
                return call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, 1)); // throws once the root has failed
            }
            finally
            {
                Interlocked.Decrement(ref inside);
            }
        });
        var fanOut = new ReactorFunction("fanOutToOneContainer", async (call, _) =>
        {
            var first = call.CallAsync(deployment.Reactors[1], yieldingDeposit, default);
            var second = call.CallAsync(deployment.Reactors[3], yieldingDeposit, default);
            return await first + await second;
        });
        var r = await engine.ExecuteAsync(a0, fanOut, default);
        long b1 = await Committed(engine, deployment.Reactors[1], 0), b3 = await Committed(engine, deployment.Reactors[3], 0);
        var report = await Quiesce(engine);
        Specification.Assert(!overlapped, $"{OneThread}: two sub-transactions of one root ran inside container 1's context at once");
        Specification.Assert(r.Outcome.Committed || r.Outcome.Reason == AbortReason.SharedContext,
            $"the root ended {r.Outcome.Outcome} ({r.Outcome.Reason}); only the conservative abort may end it short");
        long expected = r.Outcome.Committed ? Initial + 1 : Initial;
        Specification.Assert(b1 == expected && b3 == expected, $"{Money}: the root ended {r.Outcome.Outcome} and left acct1 at {b1}, acct3 at {b3}");
        AssertSerializable(report);
        if (assertNoConservativeAbort)
            Specification.Assert(r.Outcome.Committed, "ConservativeAbortReachable: the second callee found the context held and the root ended on the conservative abort");
    }

    /// <summary>
    /// A root on container 0 awaits one call on container 1, whose logic counts its runs: a
    /// sub-transaction runs once (ExactlyOnceInv), and a committed root's callee ran.
    /// </summary>
    static async Task ExactlyOnce(ReactDbMutants mutants)
    {
        var deployment = Bank(2);
        var engine = Engine(deployment, mutants, maxAttempts: 1);
        int runs = 0;
        var counted = new ReactorFunction("countedDeposit", (call, _) =>
        {
            Interlocked.Increment(ref runs);
            return ValueTask.FromResult(call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, 1)));
        });
        var root = new ReactorFunction("callOnce", async (call, _) => await call.CallAsync(deployment.Reactors[1], counted, default));
        var r = await engine.ExecuteAsync(deployment.Reactors[0], root, default);
        var report = await Quiesce(engine);
        Specification.Assert(runs <= 1 && (!r.Outcome.Committed || runs == 1),
            $"ExactlyOnceInv: the root ended {r.Outcome.Outcome} and its one sub-transaction ran {runs} times");
        AssertSerializable(report);
    }
}
