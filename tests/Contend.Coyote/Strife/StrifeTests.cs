using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Locks;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote.Strife;

/// <summary>
/// Strife on the engine: two workers run the protocol's own loop over two batches. Checked on
/// every schedule, by <see cref="StrifeChecker"/> as each event happens (the invariants of
/// specs/Strife, under their names):
/// <list type="bullet">
/// <item>PartitionInv and ConflictFreeInv when a batch's analysis ends (recomputed from the
/// workload, not from the engine's access sets);</item>
/// <item>NoResidualBeforeClustersInv and BatchOrderInv when a transaction starts;</item>
/// <item>LocksMatchAttemptInv when a residual attempt aborts: it holds no lock;</item>
/// <item>ExactlyOnceInv when a transaction ends and when a batch ends;</item>
/// </list>
/// and once the workers return: the history is serializable (the checker), every row holds
/// the number of committed transactions that incremented it and the version of the last of
/// them (the end of the row's chain in the history), and the workload did what it is
/// there for (a residual, two clusters, a merge, where it claims them). Every batch ends
/// within the steps bound. Each twin is one of MCStrifeAnalysis.tla's or MCStrifeExec.tla's
/// mutants, put into the engine by a <see cref="Mutants"/> flag.
/// </summary>
public static class StrifeTests
{
    const uint Steps = 40_000;
    const int A = 0, B = 1, C = 2, D = 3;

    /// <summary>One op: a row, and whether it writes (increments) or reads it.</summary>
    internal sealed record OpSpec(int Row, bool Write = true);
    internal sealed record TxnSpec(OpSpec[] Ops, bool UserAbort = false)
    {
        public TxnSpec(params int[] writes) : this(writes.Select(r => new OpSpec(r)).ToArray()) { }
    }

    /// <summary>What a workload must make happen in every schedule, or its test proves nothing.</summary>
    [Flags]
    internal enum Expect
    {
        None = 0, Residual = 1, TwoClusters = 2, Merge = 4,
        /// <summary>Not in every schedule: the test asserts it never happens and must be "caught".</summary>
        Overlap = 8,
        /// <summary>The same, for the overlap with the conflict-free phase.</summary>
        OverlapClusters = 16,
    }

    /// <summary>Two hot rows: transactions on A, on B, and on both (in opposite orders), twice
    /// over; alpha 1 keeps the two clusters apart, so the ones on both are residuals that
    /// abort each other under NO_WAIT. Batch 2's clusters touch what batch 1's residuals lock.</summary>
    internal static readonly TxnSpec[] Spans =
    [
        new(A), new(B), new(A, B), new(A), new(B), new(B, A),
        new(A), new(B), new(A, B), new(A), new(B), new(B, A),
    ];

    /// <summary>One long residual (it writes A, B and five more rows) in a batch of six, then a
    /// batch of two: batch 2's analysis fits inside batch 1's residual phase (the overlap), and
    /// its clusters touch what that residual locks.</summary>
    internal static readonly TxnSpec[] LongResidual =
    [
        new(A), new(B), new(A, B, C, D, 4, 5, 6), new(A), new(B), new(A),
        new(A), new(B),
    ];

    /// <summary>Every transaction of batch 1 writes A (TPC-C's warehouse row at one warehouse):
    /// one cluster, so one worker runs it while the other, with no cluster to take, analyses
    /// batch 2 (the overlap with the conflict-free phase), whose transactions touch A and B.</summary>
    internal static readonly TxnSpec[] OneCluster =
    [
        new(A), new(A, B), new(A), new(A, C), new(A), new(A, D),
        new(B), new(A),
    ];

    /// <summary>A reader of A that writes C beside a writer of A, and a writer of D: with reads
    /// ignored, the reader may land in D's cluster while the writer of A is in another.</summary>
    internal static readonly TxnSpec[] ReadWrite =
    [
        new(A), new([new OpSpec(A, Write: false), new OpSpec(C)]), new(D), new(A), new(D), new([new OpSpec(A, Write: false), new OpSpec(D)], UserAbort: true),
        new(A), new([new OpSpec(A, Write: false), new OpSpec(C)]), new(D), new(A), new(D), new([new OpSpec(A, Write: false), new OpSpec(D)]),
    ];

    const int BatchSize = 6;

    public static IEnumerable<CoyoteTest> All =>
    [
        new("StrifeSpans", () => Run(Spans, StrifeMutants.None, Expect.Residual | Expect.TwoClusters), MaxSteps: Steps),
        new("StrifeSpansNoOverlap", () => Run(Spans, StrifeMutants.None, Expect.Residual | Expect.TwoClusters, overlap: false), MaxSteps: Steps),
        new("StrifeSpansMerge", () => Run(Spans, StrifeMutants.None, Expect.Merge, alpha: 0.2), MaxSteps: Steps),
        new("StrifeLongResidual", () => Run(LongResidual, StrifeMutants.None, Expect.Residual), MaxSteps: Steps),
        new("StrifeOverlapReachable", () => Run(LongResidual, StrifeMutants.None, Expect.Residual | Expect.Overlap),
            CaughtBy: "OverlapReachable", MaxSteps: Steps),
        new("StrifeOneCluster", () => Run(OneCluster, StrifeMutants.None, Expect.None), MaxSteps: Steps),
        new("StrifeOverlapClustersReachable", () => Run(OneCluster, StrifeMutants.None, Expect.OverlapClusters),
            CaughtBy: "OverlapClustersReachable", MaxSteps: Steps),
        new("StrifeReadWrite", () => Run(ReadWrite, StrifeMutants.None, Expect.TwoClusters), MaxSteps: Steps),
        new("StrifeTwinAllocateAcross", () => Run(Spans, StrifeMutants.AllocateAcross, Expect.None),
            CaughtBy: "ConflictFreeInv", MaxSteps: Steps),
        new("StrifeTwinIgnoreReads", () => Run(ReadWrite, StrifeMutants.IgnoreReads, Expect.None),
            CaughtBy: "ConflictFreeInv", MaxSteps: Steps),
        new("StrifeTwinNoBarrier", () => Run(Spans, StrifeMutants.NoBarrier, Expect.None),
            CaughtBy: "NoResidualBeforeClustersInv", MaxSteps: Steps),
        new("StrifeTwinAbortKeepsLocks", () => Run(Spans, StrifeMutants.AbortKeepsLocks, Expect.None),
            CaughtBy: "LocksMatchAttemptInv", MaxSteps: Steps),
        new("StrifeTwinOverlapEarly", () => Run(LongResidual, StrifeMutants.OverlapEarly, Expect.None),
            CaughtBy: "BatchOrderInv", MaxSteps: Steps),
        new("StrifeTwinRetryAfterCommit", () => Run(Spans, StrifeMutants.RetryAfterCommit, Expect.None),
            CaughtBy: "ExactlyOnceInv", MaxSteps: Steps),
    ];

    internal static async Task Run(TxnSpec[] workload, StrifeMutants mutants, Expect expect, bool overlap = true, double alpha = 1.0)
    {
        using var db = new Database();
        var table = db.Create("rec", sizeof(long), 8);
        for (int key = 0; key < 8; key++) table.Load(key);
        var programs = workload.Select((t, i) => Build(db, $"t{i}", t)).ToArray();
        var specOf = programs.Select((p, i) => (p, i)).ToDictionary(x => x.p, x => workload[x.i]);

        const int workers = 2;
        var recorder = new HistoryRecorder(workers);
        var checker = new StrifeChecker(table, specOf, message => Specification.Assert(false, message));
        var protocol = new StrifeProtocol(new ProtocolSetup(db, workers) { Mutants = mutants },
                                          new StrifeOptions(BatchSize: BatchSize, Alpha: alpha, SpotRounds: 4, NoWaitRetries: 1, Overlap: overlap, Seed: 3))
        { Observer = checker };
        var control = RunControl.Fixed(workload.Length);
        var source = new ListSource(programs, workload);

        await Task.WhenAll(Enumerable.Range(0, workers).Select(w => Task.Run(() =>
            protocol.Work(new BatchWorker(new TxnContext(w, recorder), source, new WorkerStats(), Rng.Seed(5, w), control)))));

        int batches = (workload.Length + BatchSize - 1) / BatchSize;
        Specification.Assert(checker.BatchesDone == batches, $"{checker.BatchesDone} of {batches} batches ended");
        var history = recorder.Collect();
        var report = SerializabilityChecker.Check(history);
        Specification.Assert(report.Serializable,
            $"history not serializable: {report.Anomalies.FirstOrDefault()?.Kind} {report.Anomalies.FirstOrDefault()?.Description}");
        var finalVersions = SerializabilityChecker.FinalVersions(history);
        for (int key = 0; key < 8; key++)
        {
            int row = table.Find(key);
            long expected = checker.CommittedWrites(key);
            long actual = BinaryPrimitives.ReadInt64LittleEndian(table.Payload(row));
            Specification.Assert(actual == expected, $"row {key} holds {actual}, but {expected} committed transactions incremented it");
            long lastWriter = finalVersions.GetValueOrDefault(HistoryRecorder.RowKey(table.Id, row), 0);
            long installed = Volatile.Read(ref table.Version(row));
            Specification.Assert(installed == lastWriter,
                $"row {key} holds the version of {SerializabilityChecker.Txn(installed)}, but its last committed write, by the history, is {SerializabilityChecker.Txn(lastWriter)}'s");
        }
        if (expect.HasFlag(Expect.Residual)) Specification.Assert(checker.SawResidual, "no batch left a residual: the workload exercises no residual phase");
        if (expect.HasFlag(Expect.TwoClusters)) Specification.Assert(checker.SawTwoClusters, "no batch had two clusters: the workload exercises no parallel clusters");
        if (expect.HasFlag(Expect.Merge)) Specification.Assert(checker.SawMerge, "no batch merged two clusters");
        // Whether the overlap happens depends on the schedule, so it is shown as TLC shows a step is
        // reachable: an assertion that it never happens, which Coyote must break.
        if (expect.HasFlag(Expect.Overlap))
            Specification.Assert(!checker.Overlapped, "OverlapReachable: a batch was analysed while the one before it ran its residuals");
        if (expect.HasFlag(Expect.OverlapClusters))
            Specification.Assert(!checker.OverlappedClusters, "OverlapClustersReachable: a batch was analysed while the one before it ran its clusters");
    }

    /// <summary>Serves the workload in order to whichever worker draws (a fixed batch content).</summary>
    sealed class ListSource(TxnProgram[] programs, TxnSpec[] workload) : ITransactionSource
    {
        int _next = -1;

        public TxnProgram Next(TxnContext ctx)
        {
            int i = Interlocked.Increment(ref _next);
            var spec = workload[i];
            for (int k = 0; k < spec.Ops.Length; k++) ctx.Args[k] = spec.Ops[k].Row;
            ctx.Args[spec.Ops.Length] = spec.UserAbort ? 1 : 0;
            return programs[i];
        }
    }

    internal static TxnProgram Build(Database db, string name, TxnSpec spec)
    {
        int abortArg = spec.Ops.Length;
        var b = new ProgramBuilder(name, db, spec.Ops.Length + 1);
        for (int i = 0; i < spec.Ops.Length; i++)
        {
            bool last = i == spec.Ops.Length - 1;
            if (spec.Ops[i].Write)
                b.Write($"op{i}", "rec", KeySource.FromArg(i), (row, a, r) =>
                {
                    if (last && a[abortArg] != 0) return TxnProgram.UserAbort;
                    long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
                    BinaryPrimitives.WriteInt64LittleEndian(row, v);
                    return v;
                });
            else
                b.Read($"op{i}", "rec", KeySource.FromArg(i), (row, a, r) =>
                    last && a[abortArg] != 0 ? TxnProgram.UserAbort : BinaryPrimitives.ReadInt64LittleEndian(row));
        }
        // The rest declare it, so clusters run both with before-images and without.
        if (!spec.UserAbort) b.BodiesNeverAbort();
        return b.Build();
    }

    /// <summary>Checks specs/Strife's invariants as Strife reports its steps.</summary>
    internal sealed class StrifeChecker(Table table, Dictionary<TxnProgram, TxnSpec> specOf, Action<string> fail) : IStrifeObserver
    {
        readonly object _gate = new();
        readonly Dictionary<uint, StrifeBatchView> _batches = new();
        readonly Dictionary<(uint, int), int> _ended = new();
        readonly HashSet<(uint, int)> _committed = new();
        readonly HashSet<uint> _done = new();

        public bool SawResidual { get; private set; }
        public bool SawTwoClusters { get; private set; }
        public bool SawMerge { get; private set; }
        /// <summary>A batch analysed while the one before it ran its residuals (the paper's overlap).</summary>
        public bool Overlapped { get; private set; }
        /// <summary>A batch analysed while a clustered transaction of the one before it had not ended (ours).</summary>
        public bool OverlappedClusters { get; private set; }
        public int BatchesDone { get { lock (_gate) return _done.Count; } }

        public long CommittedWrites(int row)
        {
            lock (_gate)
                return _committed.Count(k => _batches[k.Item1].Program(k.Item2) is var p && specOf[p].Ops.Any(o => o.Write && o.Row == row));
        }

        public void Analysed(StrifeBatchView batch)
        {
            lock (_gate)
            {
                _batches[batch.Number] = batch;
                if (batch.Number > 1 && !_done.Contains(batch.Number - 1))
                {
                    bool clustersRun = _batches.TryGetValue(batch.Number - 1, out var before)
                                       && Enumerable.Range(0, before.Count).Any(s => before.Cluster(s) > 0 && !_ended.ContainsKey((before.Number, s)));
                    if (clustersRun) OverlappedClusters = true;
                    else Overlapped = true;
                }
                var clusters = new HashSet<int>();
                for (int s = 0; s < batch.Count; s++)
                {
                    int c = batch.Cluster(s);
                    if (c == 0 || c < -1) fail($"PartitionInv: batch {batch.Number}, slot {s} has placement {c}, neither a cluster nor the residual");
                    if (c > 0) clusters.Add(c);
                    else SawResidual = true;
                }
                SawTwoClusters |= clusters.Count >= 2;
                for (int s = 0; s < batch.Count; s++)
                    for (int u = s + 1; u < batch.Count; u++)
                    {
                        int cs = batch.Cluster(s), cu = batch.Cluster(u);
                        if (cs > 0 && cu > 0 && cs != cu && Conflict(specOf[batch.Program(s)], specOf[batch.Program(u)], out int row))
                            fail($"ConflictFreeInv: batch {batch.Number}, slots {s} and {u} conflict on row {row} but are in clusters {cs} and {cu}");
                    }
                SawMerge |= batch.Clusters < batch.AllocatedClusters;
            }
        }

        static bool Conflict(TxnSpec x, TxnSpec y, out int row)
        {
            foreach (var a in x.Ops)
                foreach (var b in y.Ops)
                    if (a.Row == b.Row && (a.Write || b.Write))
                    {
                        row = a.Row;
                        return true;
                    }
            row = -1;
            return false;
        }

        public void Starting(uint batch, int slot, bool clustered)
        {
            lock (_gate)
            {
                if (batch > 1 && !_done.Contains(batch - 1))
                    fail($"BatchOrderInv: batch {batch}, slot {slot} starts before batch {batch - 1} is done");
                if (clustered || !_batches.TryGetValue(batch, out var view)) return;
                for (int s = 0; s < view.Count; s++)
                    if (view.Cluster(s) > 0 && !_ended.ContainsKey((batch, s)))
                        fail($"NoResidualBeforeClustersInv: batch {batch}, residual slot {slot} starts while clustered slot {s} has not ended");
            }
        }

        public void AttemptAborted(uint batch, int slot, TxnContext ctx)
        {
            for (int i = 0; i < ctx.AccessCount; i++)
            {
                long word = Volatile.Read(ref table.Word(ctx.AccessRow[i]));
                if (LockWord.IsExclusive(word) && LockWord.Timestamp(word) == (ctx.Timestamp & ((1L << 48) - 1)))
                    fail($"LocksMatchAttemptInv: batch {batch}, slot {slot} aborted an attempt but still holds row {table.Key(ctx.AccessRow[i])}");
            }
        }

        public void Ended(uint batch, int slot, Outcome outcome)
        {
            lock (_gate)
            {
                _ended[(batch, slot)] = _ended.GetValueOrDefault((batch, slot)) + 1;
                if (_ended[(batch, slot)] > 1) fail($"ExactlyOnceInv: batch {batch}, slot {slot} ended twice (now {outcome})");
                if (outcome == Outcome.Committed) _committed.Add((batch, slot));
            }
        }

        public void BatchDone(uint batch)
        {
            lock (_gate)
            {
                if (!_batches.TryGetValue(batch, out var view)) fail($"ExactlyOnceInv: batch {batch} done but never analysed");
                else
                    for (int s = 0; s < view.Count; s++)
                        if (_ended.GetValueOrDefault((batch, s)) != 1)
                            fail($"ExactlyOnceInv: batch {batch} done with slot {s} ended {_ended.GetValueOrDefault((batch, s))} times");
                _done.Add(batch);
            }
        }
    }
}
