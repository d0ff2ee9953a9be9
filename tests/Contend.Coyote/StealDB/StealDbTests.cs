using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.StealDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote.StealDB;

/// <summary>
/// StealDB on the engine, one transaction per worker, on the workloads of specs/StealDB's CI
/// models. Every op increments its row. Checked on every schedule:
/// <list type="bullet">
/// <item>by <see cref="StealDbAudit"/>, as each event happens: ExactlyOnceInv and ExactlyOnceCoreInv,
/// MutualExclusionInv, TwoPhaseProp and StealTokenTakenOnceInv;</item>
/// <item>once all transactions have ended: the history is serializable (the checker), and every
/// row holds the number of committed transactions that incremented it (aborts left nothing);</item>
/// <item>every transaction ends (commits, or its logic aborts it) within the steps bound,
/// retries included;</item>
/// <item>a transaction whose body throws raises the exception on its own worker, not on the
/// thief that ran the op, and only once its locks are released (FailedTxnUndoneInv); its
/// writes are undone (the rows' counts).</item>
/// </list>
/// Each twin is one of MCStealDB.tla's mutants, put into the engine by a <see cref="Mutants"/>
/// flag, but for StealDBTwinFailureEscapes, the engine's own (the spec has no exceptions).
/// </summary>
public static class StealDbTests
{
    /// <summary>Idle rounds before a waiter gives up: small, so that Coyote reaches the timeouts
    /// that break the opposite-order and lock-order deadlocks within the steps bound.</summary>
    const int Threshold = 4;
    /// <summary>No threshold: the deadlock detector alone must end every deadlock, or the
    /// iteration hits the steps bound.</summary>
    const int NoThreshold = int.MaxValue;
    /// <summary>Iterations of the detector's no-bug tests: a quarter of the suite's, to keep CI in
    /// its budget; their twin and non-vacuity check are caught at 825.</summary>
    const int DetectIterations = 2_500;
    const uint Steps = 20_000;

    /// <summary>One op: the row it increments (or only reads, with <see cref="Reads"/>, taking its
    /// lock shared) and the ops (by index) it depends on.</summary>
    internal sealed record OpSpec(int Row, params int[] Deps)
    {
        public bool Reads { get; init; }
    }
    /// <summary>One transaction: its ops, and whether its last op aborts by the program's logic
    /// or throws (a bug in its body) after incrementing its row.</summary>
    internal sealed record TxnSpec(OpSpec[] Ops, bool UserAbort = false, bool Throws = false);

    /// <summary>What a throwing body throws: whose transaction it is, and which worker ran it.</summary>
    sealed class BodyFault(int txn, int ranOn) : Exception($"t{txn}'s body failed on worker {ranOn}")
    {
        public int Txn { get; } = txn;
        public int RanOn { get; } = ranOn;
    }

    /// <summary>The worker running on this thread: a test worker's transaction runs synchronously
    /// on one thread, stolen ops included, so a body learns from it who runs it.</summary>
    [ThreadStatic] static int t_worker;

    const int A = 0, B = 1, C = 2, Hot = 0;
    static int Private(int txn, int k) => 10 + 4 * txn + k;

    /// <summary>HotProg: every transaction increments the hot row, then two private rows that
    /// depend on it (the work waiters steal); the third's last op aborts.</summary>
    internal static readonly TxnSpec[] HotWorkload =
    [
        new([new(Hot), new(Private(0, 1), 0), new(Private(0, 2), 0)]),
        new([new(Hot), new(Private(1, 1), 0), new(Private(1, 2), 0)]),
        new([new(Hot), new(Private(2, 1), 0), new(Private(2, 2), 0)], UserAbort: true),
    ];

    /// <summary>HotProg with a bug: the first transaction's last op, which waiters steal, throws.</summary>
    internal static readonly TxnSpec[] ThrowingWorkload =
    [
        new([new(Hot), new(Private(0, 1), 0), new(Private(0, 2), 0)], Throws: true),
        new([new(Hot), new(Private(1, 1), 0), new(Private(1, 2), 0)]),
        new([new(Hot), new(Private(2, 1), 0), new(Private(2, 2), 0)]),
    ];

    /// <summary>OppositeProg: the textbook deadlock, with a private op each to steal.</summary>
    internal static readonly TxnSpec[] OppositeWorkload =
    [
        new([new(A), new(B, 0), new(Private(0, 1), 0)]),
        new([new(B), new(A, 0), new(Private(1, 1), 0)]),
    ];

    /// <summary>LockOrderProg: sorted lock order that stealing breaks (StealDBPaperLockOrder).</summary>
    internal static readonly TxnSpec[] LockOrderWorkload =
    [
        new([new(A), new(B, 0), new(C, 0)]),
        new([new(A), new(Private(1, 1), 0)]),
        new([new(B), new(C, 0)]),
    ];

    /// <summary>Two waiters on two records share one predecessor's word (StealDBPaperTwoHot).
    /// Unlike TwoHotProg, T1 locks both records first (both are roots), and the waiters touch a
    /// private record before theirs, so both are usually queued behind T1 when it publishes.</summary>
    internal static readonly TxnSpec[] TwoHotWorkload =
    [
        new([new(A), new(B), new(Private(0, 1), 0, 1), new(Private(0, 2), 0, 1)]),
        new([new(Private(1, 1)), new(A, 0)]),
        new([new(Private(2, 1)), new(B, 0)]),
    ];

    /// <summary>MCStealDB.tla's HotReadProg: t1 and t2 read the hot row together, t0 writes it;
    /// every transaction then increments two private rows. t2's last op aborts (the spec's
    /// model has the writer's abort; either makes the readers' share meet an abort's undo).</summary>
    internal static readonly TxnSpec[] HotReadWorkload =
    [
        new([new(Hot), new(Private(0, 1), 0), new(Private(0, 2), 0)]),
        new([new(Hot) { Reads = true }, new(Private(1, 1), 0), new(Private(1, 2), 0)]),
        new([new(Hot) { Reads = true }, new(Private(2, 1), 0), new(Private(2, 2), 0)], UserAbort: true),
    ];

    /// <summary>SharedOppositeProg: each transaction reads one row, then writes the other; each
    /// write waits behind the other's granted reader, a deadlock only shared locks have.</summary>
    internal static readonly TxnSpec[] SharedOppositeWorkload =
    [
        new([new(A) { Reads = true }, new(B, 0), new(Private(0, 1), 0)]),
        new([new(B) { Reads = true }, new(A, 0), new(Private(1, 1), 0)]),
    ];

    public static IEnumerable<CoyoteTest> All =>
    [
        new("StealDBHot", () => Run(HotWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBOpposite", () => Run(OppositeWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBLockOrder", () => Run(LockOrderWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBTwoHot", () => Run(TwoHotWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBBasicWSHot", () => Run(HotWorkload, StealPolicy.Basic, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBNoStealOpposite", () => Run(OppositeWorkload, StealPolicy.None, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBSharedHot", () => Run(HotReadWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBSharedUseReachable", () => Run(HotReadWorkload, StealPolicy.Queue, StealDbMutants.None, assertNoSharedUse: true),
            CaughtBy: "SharedUseReachable", MaxSteps: Steps),
        new("StealDBSharedOpposite", () => Run(SharedOppositeWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps, Iterations: DetectIterations),
        new("StealDBThrowingBody", () => Run(ThrowingWorkload, StealPolicy.Queue, StealDbMutants.None), MaxSteps: Steps),
        new("StealDBThrowingBodyStolenReachable", () => Run(ThrowingWorkload, StealPolicy.Queue, StealDbMutants.None, assertOwnerRanThrow: true),
            CaughtBy: "ThrowStolenReachable", MaxSteps: Steps),
        new("StealDBDetectOpposite", () => Run(OppositeWorkload, StealPolicy.Queue, StealDbMutants.None, threshold: NoThreshold), MaxSteps: Steps, Iterations: DetectIterations),
        new("StealDBDetectLockOrder", () => Run(LockOrderWorkload, StealPolicy.Queue, StealDbMutants.None, threshold: NoThreshold), MaxSteps: Steps, Iterations: DetectIterations),
        new("StealDBNoStealDetectOpposite", () => Run(OppositeWorkload, StealPolicy.None, StealDbMutants.None, threshold: NoThreshold), MaxSteps: Steps, Iterations: DetectIterations),
        new("StealDBBasicWSDetectLockOrder", () => Run(LockOrderWorkload, StealPolicy.Basic, StealDbMutants.None, threshold: NoThreshold), MaxSteps: Steps, Iterations: DetectIterations),
        new("StealDBDetectSharedOpposite", () => Run(SharedOppositeWorkload, StealPolicy.Queue, StealDbMutants.None, threshold: NoThreshold), MaxSteps: Steps, Iterations: DetectIterations),
        new("StealDBDetectStolenCycleReachable", () => Run(LockOrderWorkload, StealPolicy.Queue, StealDbMutants.None, threshold: NoThreshold, assertNoStolenCycle: true),
            CaughtBy: "StolenCycleReachable", MaxSteps: Steps),
        new("StealDBTwinDetectorIgnoresStolenFrames", () => Run(LockOrderWorkload, StealPolicy.Queue, StealDbMutants.DetectorIgnoresStolenFrames, threshold: NoThreshold),
            CaughtBy: CoyoteSuite.StepsBound, MaxSteps: Steps),
        new("StealDBTwinDetectorIgnoresReaders", () => Run(SharedOppositeWorkload, StealPolicy.Queue, StealDbMutants.DetectorIgnoresReaders, threshold: NoThreshold),
            CaughtBy: CoyoteSuite.StepsBound, MaxSteps: Steps),
        new("StealDBTwinReadThenClear", () => Run(TwoHotWorkload, StealPolicy.Queue, StealDbMutants.ReadThenClear),
            CaughtBy: "StealTokenTakenOnceInv", MaxSteps: Steps),
        new("StealDBTwinClaimTestThenSet", () => Run(HotWorkload, StealPolicy.Queue, StealDbMutants.ClaimTestThenSet),
            CaughtBy: "ExactlyOnceCoreInv", MaxSteps: Steps),
        new("StealDBTwinEarlyRelease", () => Run(HotWorkload, StealPolicy.Queue, StealDbMutants.EarlyRelease),
            CaughtBy: "TwoPhaseProp", MaxSteps: Steps),
        new("StealDBTwinRunWithoutLock", () => Run(HotWorkload, StealPolicy.Queue, StealDbMutants.RunWithoutLock),
            CaughtBy: "MutualExclusionInv", MaxSteps: Steps),
        new("StealDBBasicWSTwinEarlyRelease", () => Run(HotWorkload, StealPolicy.Basic, StealDbMutants.EarlyRelease),
            CaughtBy: "TwoPhaseProp", MaxSteps: Steps),
        new("StealDBNoStealTwinEarlyRelease", () => Run(OppositeWorkload, StealPolicy.None, StealDbMutants.EarlyRelease),
            CaughtBy: "TwoPhaseProp", MaxSteps: Steps),
        new("StealDBTwinTimeoutLeavesQueue", () => Run(HotWorkload, StealPolicy.Queue, StealDbMutants.TimeoutLeavesQueue),
            CaughtBy: "MutualExclusionInv", MaxSteps: Steps),
        new("StealDBTwinReleaseClearTail", () => Run(HotWorkload, StealPolicy.Queue, StealDbMutants.McsReleaseClearTail),
            CaughtBy: CoyoteSuite.StepsBound, MaxSteps: Steps),
        new("StealDBTwinFailureEscapes", () => Run(ThrowingWorkload, StealPolicy.Queue, StealDbMutants.FailureEscapes),
            CaughtBy: "FailedTxnUndoneInv", MaxSteps: Steps),
    ];

    /// <summary>Runs the workload, one transaction per worker, retrying aborts. With a trace, every
    /// step is recorded into it (<paramref name="rowKeys"/> then maps each row's history key to
    /// the workload's row number); with checks off, nothing is asserted (a twin's trace is
    /// recorded for trace validation to judge). <paramref name="assertOwnerRanThrow"/> turns the
    /// check that a thief can run a throwing op into an assertion that none did.</summary>
    internal static async Task Run(TxnSpec[] workload, StealPolicy policy, StealDbMutants mutants,
                                   StealDbTrace? trace = null, Dictionary<long, int>? rowKeys = null, bool checks = true,
                                   bool assertOwnerRanThrow = false, int threshold = Threshold, bool assertNoStolenCycle = false,
                                   bool assertNoSharedUse = false)
    {
        using var db = new Database();
        var table = db.Create("rec", sizeof(long), 32);
        for (int key = 0; key < 32; key++)
        {
            int row = table.Load(key);
            rowKeys?.Add(HistoryRecorder.RowKey(table.Id, row), key);
        }
        var programs = workload.Select((t, i) => Build(db, i, t)).ToArray();

        int workers = workload.Length;
        var recorder = new HistoryRecorder(workers);
        var audit = checks ? new StealDbAudit(message => Specification.Assert(false, message)) : null;
        var protocol = new StealDb(new ProtocolSetup(db, workers) { Mutants = mutants },
                                   policy, new StealDbOptions(WaitThreshold: threshold), "StealDB")
        {
            Audit = audit,
            Trace = trace,
        };
        var outcomes = new Outcome[workers];
        var reasons = new AbortReason[workers];
        var raised = new bool[workers];
        var timestamps = new long[1];

        Task Start(int worker) => Task.Run(() =>
        {
            t_worker = worker;
            var ctx = new TxnContext(worker, recorder);
            var spec = workload[worker];
            for (int i = 0; i < spec.Ops.Length; i++) ctx.Args[i] = spec.Ops[i].Row;
            ctx.Args[spec.Ops.Length] = spec.UserAbort ? 1 : 0;
            ctx.Args[spec.Ops.Length + 1] = spec.Throws ? 1 : 0;
            ctx.Start(programs[worker], Interlocked.Increment(ref timestamps[0]));
            ulong rng = Rng.Seed(11, worker);
            for (int retries = 0; ; retries++)
            {
                try
                {
                    outcomes[worker] = protocol.Run(ctx, out reasons[worker]);
                }
                catch (BodyFault fault)
                {
                    raised[worker] = true;
                    if (!checks) return;
                    Specification.Assert(fault.Txn == worker, $"FailedTxnUndoneInv: worker {worker} raised the exception of t{fault.Txn}'s body");
                    audit!.Raised(ctx.TxnId);
                    if (assertOwnerRanThrow)
                        Specification.Assert(fault.RanOn == worker, $"ThrowStolenReachable: t{worker}'s throwing op ran on worker {fault.RanOn}");
                    return;
                }
                if (outcomes[worker] != Outcome.Aborted) break;
                Spin.Backoff(retries, ref rng);
            }
        });

        await Task.WhenAll(Enumerable.Range(0, workers).Select(Start));
        if (!checks) return;

        if (assertNoSharedUse)
            Specification.Assert(audit!.MostReaders < 2, $"SharedUseReachable: {audit.MostReaders} transactions read one row at once");
        if (assertNoStolenCycle)
            Specification.Assert(audit!.StolenCycleVictims == 0, $"StolenCycleReachable: {audit.StolenCycleVictims} of {audit.Victims} deadlock victims were on a cycle through a stolen op");
        var report = SerializabilityChecker.Check(recorder.Collect());
        Specification.Assert(report.Serializable,
            $"history not serializable: {report.Anomalies.FirstOrDefault()?.Kind} {report.Anomalies.FirstOrDefault()?.Description}");
        for (int i = 0; i < workers; i++)
        {
            if (workload[i].Throws) Specification.Assert(raised[i], $"transaction t{i}'s body threw, but its worker raised nothing ({outcomes[i]})");
            else Specification.Assert(!raised[i] && outcomes[i] == (workload[i].UserAbort ? Outcome.UserAborted : Outcome.Committed),
                $"transaction t{i} ended {(raised[i] ? "with an exception" : outcomes[i])} ({reasons[i]})");
        }
        for (int key = 0; key < 32; key++)
        {
            long expected = workload.Where((t, i) => !raised[i] && outcomes[i] == Outcome.Committed && t.Ops.Any(o => o.Row == key && !o.Reads)).Count();
            long actual = BinaryPrimitives.ReadInt64LittleEndian(table.Payload(table.Find(key)));
            Specification.Assert(actual == expected, $"row {key} holds {actual}, but {expected} committed transactions incremented it");
        }
    }

    static TxnProgram Build(Database db, int txn, TxnSpec spec)
    {
        int abortArg = spec.Ops.Length, throwArg = abortArg + 1;
        var b = new ProgramBuilder($"t{txn}", db, spec.Ops.Length + 2);
        for (int i = 0; i < spec.Ops.Length; i++)
        {
            bool last = i == spec.Ops.Length - 1;
            if (spec.Ops[i].Reads)
            {
                b.Read($"op{i}", "rec", KeySource.FromArg(i), (row, a, r) =>
                    last && a[abortArg] != 0 ? TxnProgram.UserAbort : BinaryPrimitives.ReadInt64LittleEndian(row),
                    spec.Ops[i].Deps.Select(d => $"op{d}").ToArray());
                continue;
            }
            b.Write($"op{i}", "rec", KeySource.FromArg(i), (row, a, r) =>
            {
                if (last && a[abortArg] != 0) return TxnProgram.UserAbort;
                long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
                BinaryPrimitives.WriteInt64LittleEndian(row, v);
                if (last && a[throwArg] != 0) throw new BodyFault(txn, t_worker);
                return v;
            }, spec.Ops[i].Deps.Select(d => $"op{d}").ToArray());
        }
        return b.Build();
    }
}
