using System.Buffers.Binary;
using Contend.Engine.Durability;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote.Durability;

/// <summary>
/// A durable engine over the simulated disk (specs/Durability/Durability.tla): two submitters
/// increment two rows, one row or both a transaction, while the workers commit into their
/// buffers and the loggers write, mark and sync; the disk crashes at whatever point Coyote's
/// schedule reaches once some call was answered, keeping the synced bytes and, from the seed,
/// some of the rest. An engine opened again on the disk must show every increment a submitter
/// was told committed (a row holds at least the committed increments that were acknowledged,
/// and at most those that committed). The twins are the spec's mutants in the engine: a call
/// answered at commit, and the durable epoch taken as the greatest over two loggers.
/// </summary>
public static class DurabilityTests
{
    const uint Steps = 60_000;
    const int A = 0, B = 1;
    const string Lost = "AcknowledgedRecoveredInv";

    public static IEnumerable<CoyoteTest> All =>
    [
        new("DurableOneLogger", () => Run(DurabilityMutants.None, loggers: 1), MaxSteps: Steps, Iterations: Runs),
        new("DurableTwoLoggers", () => Run(DurabilityMutants.None, loggers: 2), MaxSteps: Steps, Iterations: Runs),
        new("DurableTwoLoggersPrioritized", () => Run(DurabilityMutants.None, loggers: 2), MaxSteps: Steps, Prioritized: true, Iterations: Runs),
        new("DurableTwinAcknowledgeAtCommit", () => Run(DurabilityMutants.AcknowledgeAtCommit, loggers: 1), CaughtBy: Lost, MaxSteps: Steps),
        new("DurableTwinDurableIsMax", () => Run(DurabilityMutants.DurableIsMax, loggers: 2), CaughtBy: Lost, MaxSteps: Steps, Prioritized: true),
    ];

    /// <summary>Schedules per correct run: each starts, crashes and recovers two engines.</summary>
    const int Runs = 400;

    static (Database Db, Table Rows, TxnProgram[] Programs) Open()
    {
        var db = new Database(); // the engine disposes it
        var rows = db.Create("rec", sizeof(long), 2);
        rows.Load(A);
        rows.Load(B);
        OpBody increment = (row, _, _) =>
        {
            long next = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
            BinaryPrimitives.WriteInt64LittleEndian(row, next);
            return next;
        };
        var programs = new[]
        {
            new ProgramBuilder("a", db, 0).Write("a", "rec", KeySource.Computed((_, _) => A), increment).Build(),
            new ProgramBuilder("b", db, 0).Write("b", "rec", KeySource.Computed((_, _) => B), increment).Build(),
            new ProgramBuilder("ab", db, 0).Write("a", "rec", KeySource.Computed((_, _) => A), increment)
                                           .Write("b", "rec", KeySource.Computed((_, _) => B), increment).Build(),
        };
        return (db, rows, programs);
    }

    static EngineOptions Options(ILogStorage disk, int loggers) => new()
    {
        Protocol = "NoWait", Workers = 2, Loggers = loggers, Pin = false, Name = "coyote-durable",
        Durability = DurabilityMode.Durable, Storage = disk, EpochLength = TimeSpan.FromMilliseconds(1),
    };

    static async Task Run(DurabilityMutants mutant, int loggers)
    {
        var disk = new SimulatedDisk(seed: 11);
        var (db, _, programs) = Open();
        var engine = new ContendEngine(db, Options(disk, loggers), mutant == DurabilityMutants.None ? null : mutant, taskRequests: true);
        // Per row: the increments acknowledged, and those that committed (acknowledged or not).
        var acknowledged = new int[2];
        int submitted = 0;
        var firstAnswer = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var submitters = Enumerable.Range(0, 2).Select(s => Task.Run(async () =>
        {
            for (int i = 0; i < 3; i++)
            {
                int t = (s + i) % programs.Length;
                Interlocked.Increment(ref submitted);
                try
                {
                    var outcome = await engine.ExecuteAsync(programs[t], []);
                    Specification.Assert(outcome.Committed, $"an increment ended {outcome}: conflicts are retried inside the engine");
                    lock (acknowledged)
                    {
                        if (t != B) acknowledged[A]++;
                        if (t != A) acknowledged[B]++;
                    }
                    firstAnswer.TrySetResult();
                }
                catch (ContendException)
                {
                    return; // the disk crashed under it: its outcome is unknown
                }
            }
        })).ToArray();
        var crasher = Task.Run(async () =>
        {
            await firstAnswer.Task;
            disk.Crash();
        });
        await Task.WhenAll(submitters);
        firstAnswer.TrySetResult(); // every call ended before the crash: it crashes now
        await crasher;
        engine.Drain();
        engine.Dispose();

        var (again, rows, _) = Open();
        var reopened = new ContendEngine(again, Options(disk, loggers), mutant == DurabilityMutants.None ? null : mutant, taskRequests: true);
        reopened.Drain();
        foreach (int row in new[] { A, B })
        {
            long held = BinaryPrimitives.ReadInt64LittleEndian(rows.Payload(rows.Find(row)));
            Specification.Assert(held >= acknowledged[row],
                $"{Lost}: row {row} recovered {held} increments, and {acknowledged[row]} were acknowledged");
            Specification.Assert(held <= submitted, $"row {row} recovered {held} increments of {submitted} submitted");
        }
        reopened.Dispose();
    }
}
