using System.Diagnostics;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Strife;

/// <param name="BatchSize">transactions per batch (the paper's figure is lost in our copy)</param>
/// <param name="Alpha">merge's alpha: a smaller one merges more (fewer residuals, fewer clusters)</param>
/// <param name="SpotRounds">spot's random picks, k; 0: eight per worker ("a small factor times
/// the number of cores", Section 3.1), at most 256</param>
/// <param name="NoWaitRetries">conflict aborts under NO_WAIT before a residual turns to WaitDie</param>
/// <param name="Overlap">analyse batch n+1 while batch n runs: in its residual phase (Section 4.1),
/// and in its conflict-free phase once a worker has no cluster left to take</param>
/// <param name="Seed">seeds spot's picks (per batch) and allocate's random cluster</param>
public sealed record StrifeOptions(int BatchSize = 1000, double Alpha = 0.2, int SpotRounds = 0, int NoWaitRetries = 3,
                                   bool Overlap = true, ulong Seed = 1) : ProtocolOptions
{
    internal override void Validate(int workers) => Resolve(workers);

    internal static readonly ProtocolKnobs CommandLine = new(
        [new("--batch", "transactions per batch", new StrifeOptions().BatchSize),
         new("--alpha", "merge's alpha in (0, 1]", new StrifeOptions().Alpha),
         new("--no-overlap", "analyse the next batch only once the current one is done", false)],
        value => new StrifeOptions(BatchSize: (int)value("--batch"), Alpha: (double)value("--alpha"), Overlap: !(bool)value("--no-overlap")));

    /// <summary>The most spot rounds an analysis makes (<see cref="SpotRounds"/>).</summary>
    public const int MaxSpotRounds = 256;

    /// <summary>Throws, naming the knob, when one is out of range.</summary>
    internal StrifeOptions Resolve(int workers)
    {
        if (BatchSize is < 1 or > 1_000_000) throw new ArgumentOutOfRangeException(nameof(BatchSize), $"Strife batch size {BatchSize}: must be 1..1000000");
        if (!(Alpha > 0 && Alpha <= 1)) throw new ArgumentOutOfRangeException(nameof(Alpha), $"Strife alpha {Alpha}: must be in (0, 1]");
        if (SpotRounds is < 0 or > MaxSpotRounds) throw new ArgumentOutOfRangeException(nameof(SpotRounds), $"Strife spot rounds {SpotRounds}: must be 0 (auto) .. {MaxSpotRounds}");
        if (NoWaitRetries < 0) throw new ArgumentOutOfRangeException(nameof(NoWaitRetries), $"Strife NO_WAIT retries {NoWaitRetries}: must be 0 or more");
        return SpotRounds > 0 ? this : this with { SpotRounds = Math.Min(MaxSpotRounds, 8 * Math.Max(1, workers)) };
    }
}

/// <summary>
/// Strife (seed 002; specs/Strife/StrifeExec.tla, proofs/Strife.md): batch after batch, the
/// analysis splits the batch into conflict-free clusters and a residual; the clusters run in
/// parallel with no concurrency control, one worker a cluster; a barrier; the residuals run
/// under NO_WAIT 2PL, then WaitDie; then the next batch. With <see cref="StrifeOptions.Overlap"/>
/// a worker with no cluster and no residual left to take analyses the next batch meanwhile.
/// </summary>
/// <remarks>
/// Scheduling has no barrier that waits for every worker: every stage is a count of work
/// items, claimed by CAS, and the worker that completes a stage's last item takes the serial
/// step after it (spot, merge, the schedule) or opens the next phase. So a worker may be
/// anywhere, and a run of fixed size ends when no batch is left, whichever workers remain.
/// </remarks>
internal sealed class StrifeProtocol : IBatchProtocol
{
    readonly StrifeOptions _options;
    readonly Database _db;
    readonly StrifeAnalysis _analysis;
    readonly Unlocked _cluster;
    readonly NoWaitThenWaitDie _residual;
    readonly StrifeBatch[] _buffers;
    readonly MutantFlag _noBarrier, _overlapEarly, _retryAfterCommit;
    /// <summary>The batch whose clusters or residuals run (0: none yet); batch n is in buffer n mod 2.</summary>
    long _current;
    long _batches, _transactions, _residuals, _clusters, _analysisTicks;

    public StrifeProtocol(ProtocolSetup setup, StrifeOptions options)
    {
        _options = options.Resolve(setup.Workers);
        _db = setup.Database;
        foreach (var table in _db.Tables) table.EnsureStamps();
        _analysis = new StrifeAnalysis(_db, _options, setup.Mutants);
        _cluster = new Unlocked(setup);
        _residual = new NoWaitThenWaitDie(setup, _options.NoWaitRetries);
        _buffers =
        [
            new StrifeBatch(_options.BatchSize, _options.SpotRounds, 0, BatchPhase.Done), // batch 0: the empty one before the first
            new StrifeBatch(_options.BatchSize, _options.SpotRounds, 1, BatchPhase.Idle),
        ];
        _noBarrier = new(setup.Mutants, StrifeMutants.NoBarrier);
        _overlapEarly = new(setup.Mutants, StrifeMutants.OverlapEarly);
        _retryAfterCommit = new(setup.Mutants, StrifeMutants.RetryAfterCommit);
    }

    /// <summary>The name of <see cref="StrifeCounts.ResidualShare"/> among the shares the protocol reports (<see cref="ProtocolReport.Shares"/>).</summary>
    public const string ResidualShareName = "residual_share";

    internal static readonly ProtocolDescriptor Descriptor = new("Strife",
        "batches split into conflict-free clusters run with no locks, then the residual under NO_WAIT, then WaitDie",
        ProtocolKind.Batch, typeof(StrifeOptions), s => new StrifeProtocol(s, (StrifeOptions?)s.Options ?? new StrifeOptions()),
        counters:
        [
            new("contend.strife.batches", "{batch}", "batches Strife's analysis has split", p => ((StrifeProtocol)p).Counts.Batches),
            new("contend.strife.transactions.residual", "{transaction}", "transactions Strife's analysis left to the residual phase",
                p => ((StrifeProtocol)p).Counts.Residuals),
        ],
        report: (p, workerSeconds) => ((StrifeProtocol)p).Report(workerSeconds),
        mutants: typeof(StrifeMutants), knobs: StrifeOptions.CommandLine);

    public string Name => Descriptor.Name;
    public StrifeOptions Options => _options;
    /// <summary>Test hook (null in production).</summary>
    internal IStrifeObserver? Observer { get; init; }

    /// <summary>Batches analysed so far, and what their analyses made of them.</summary>
    public StrifeCounts Counts => new(Volatile.Read(ref _batches), Volatile.Read(ref _transactions), Volatile.Read(ref _residuals),
                                      Volatile.Read(ref _clusters), Stopwatch.GetElapsedTime(0, Volatile.Read(ref _analysisTicks)).TotalSeconds);

    /// <summary>What the analyses made of the batches so far, and what they cost of
    /// <paramref name="workerSeconds"/>, the worker time the runs took (warm-ups included:
    /// the counts are the instance's).</summary>
    ProtocolReport Report(double workerSeconds)
    {
        var c = Counts;
        return new ProtocolReport(new Dictionary<string, double> { [ResidualShareName] = c.ResidualShare },
            string.Create(System.Globalization.CultureInfo.InvariantCulture,
                $"Strife: {c.Batches:N0} batches of up to {_options.BatchSize:N0}, {c.Clusters / (double)Math.Max(1, c.Batches):F1} clusters per batch after merge, " +
                $"{c.ResidualShare:P1} residual; analysis {c.AnalysisSeconds:F2} of {workerSeconds:F1} worker-seconds (warm-up included)"));
    }

    StrifeBatch Buffer(uint number) => _buffers[number & 1];

    StrifeBatch? _alone;
    uint _aloneNumber = 1u << 31;

    /// <summary>
    /// Draws one batch from <paramref name="worker"/> and analyses it on the calling thread
    /// alone, running nothing: the analysis's own cost, for bench/. Its batch numbers start at
    /// 2^31, apart from the numbers <see cref="Work"/> stamps rows with; do not mix the two on
    /// one protocol instance at once.
    /// </summary>
    public StrifeBatchView AnalyseAlone(BatchWorker worker)
    {
        var b = _alone ??= new StrifeBatch(_options.BatchSize, _options.SpotRounds, _aloneNumber, BatchPhase.Idle);
        uint n = _aloneNumber;
        b.TryAdvance(n, BatchPhase.Idle, BatchPhase.Starting);
        b.Open(n, _options.BatchSize);
        for (int c = 0; c < b.Chunks; c++) _analysis.Fill(b, n, c, worker);
        _analysis.Spot(b, n);
        for (int c = 0; c < b.Chunks; c++) _analysis.Allocate(b, n, c, secondRound: false, ref worker.Rng);
        for (int c = 0; c < b.Chunks; c++) _analysis.Allocate(b, n, c, secondRound: true, ref worker.Rng);
        _analysis.Merge(b, n);
        for (int c = 0; c < b.Chunks; c++) _analysis.Reallocate(b, n, c);
        _analysis.Schedule(b, n);
        b.Recycle(++_aloneNumber);
        return new StrifeBatchView(b, n);
    }

    public void Work(BatchWorker worker)
    {
        var wait = new SpinWait();
        while (true)
        {
            uint current = (uint)Volatile.Read(ref _current);
            var batch = Buffer(current);
            if (batch.PhaseOf(current) is not { } phase) continue; // retired meanwhile: read _current again
            uint next = current + 1;
            var nextBatch = Buffer(next);
            var nextPhase = nextBatch.PhaseOf(next);
            bool worked =
                RunCluster(batch, current, phase, worker)
                || RunResidual(batch, current, phase, worker)
                || nextPhase is { } np && (Analyse(nextBatch, next, np, phase, worker)
                                           || _overlapEarly && RunCluster(nextBatch, next, np, worker)
                                           || np == BatchPhase.Analysed && phase == BatchPhase.Done && Retire(current));
            if (worked)
            {
                wait = new SpinWait();
                continue;
            }
            // Nothing runs, nothing is analysed, and no batch can start: the run is over.
            if (phase == BatchPhase.Done && nextPhase == BatchPhase.Idle && !worker.CanDraw) return;
            // Another worker died, so its batch will never end. Checked only here, with nothing
            // to do: a worker with work left reaches here once it has none.
            if (worker.Failed) return;
            Spin.Once(ref wait);
        }
    }

    /// <summary>The tags of the transactions drawn into a batch that never ended; call it only
    /// once every worker has returned from <see cref="Work"/> after a failure.</summary>
    public IEnumerable<object> Unfinished()
    {
        foreach (var b in _buffers)
        {
            for (int slot = 0; slot < b.Count; slot++)
            {
                if (b.Tag[slot] is { } tag) yield return tag;
            }
        }
    }

    // ---- analysis (StrifeAnalysis.tla) ----

    /// <summary>One step of the next batch's analysis, if there is one to take.</summary>
    bool Analyse(StrifeBatch b, uint n, BatchPhase phase, BatchPhase currentPhase, BatchWorker worker)
    {
        long start = Stopwatch.GetTimestamp();
        int chunk;
        switch (phase)
        {
            // StrifeExec.tla Analyze: without overlap, once batch n-1 is done; with it, once n-1
            // runs. The paper names only the residual phase; in the conflict-free phase a worker
            // gets here only when every cluster is taken, so it would otherwise idle (with one
            // cluster, as TPC-C at one warehouse has, one worker runs the batch alone). Safe in
            // either phase: the analysis reads the index and writes the stamps, and no
            // execution writes a stamp; a key inserted meanwhile is one the analysis sent to
            // the residual (StrifeAnalysis's remarks).
            case BatchPhase.Idle:
                if (!(currentPhase == BatchPhase.Done || _options.Overlap && currentPhase is BatchPhase.Clusters or BatchPhase.Residuals)
                    || !Start(b, n, worker))
                    return false;
                break;
            case BatchPhase.Filling:
                if (!StrifeBatch.TryClaim(ref b.FillClaim, n, b.Chunks, out chunk)) return false;
                _analysis.Fill(b, n, chunk, worker);
                if (Interlocked.Increment(ref b.FillDone) == b.Chunks)
                {
                    _analysis.Spot(b, n);
                    Open(b, n, BatchPhase.Filling, BatchPhase.Allocate1);
                }
                break;
            case BatchPhase.Allocate1:
                if (!StrifeBatch.TryClaim(ref b.Allocate1Claim, n, b.Chunks, out chunk)) return false;
                _analysis.Allocate(b, n, chunk, secondRound: false, ref worker.Rng);
                if (Interlocked.Increment(ref b.Allocate1Done) == b.Chunks) Open(b, n, BatchPhase.Allocate1, BatchPhase.Allocate2);
                break;
            case BatchPhase.Allocate2:
                if (!StrifeBatch.TryClaim(ref b.Allocate2Claim, n, b.Chunks, out chunk)) return false;
                _analysis.Allocate(b, n, chunk, secondRound: true, ref worker.Rng);
                if (Interlocked.Increment(ref b.Allocate2Done) == b.Chunks)
                {
                    _analysis.Merge(b, n);
                    Open(b, n, BatchPhase.Allocate2, BatchPhase.Reallocate);
                }
                break;
            case BatchPhase.Reallocate:
                if (!StrifeBatch.TryClaim(ref b.ReallocateClaim, n, b.Chunks, out chunk)) return false;
                _analysis.Reallocate(b, n, chunk);
                if (Interlocked.Increment(ref b.ReallocateDone) == b.Chunks)
                {
                    EndAnalysis(b, n);
                    Open(b, n, BatchPhase.Reallocate, BatchPhase.Analysed);
                }
                break;
            default:
                return false;
        }
        Interlocked.Add(ref _analysisTicks, Stopwatch.GetTimestamp() - start);
        return true;
    }

    /// <summary>Starts batch n if the run has transactions left for it.</summary>
    bool Start(StrifeBatch b, uint n, BatchWorker worker)
    {
        if (!b.TryAdvance(n, BatchPhase.Idle, BatchPhase.Starting)) return false;
        int count = worker.TakeQuota(_options.BatchSize);
        if (count == 0)
        {
            b.TryAdvance(n, BatchPhase.Starting, BatchPhase.Idle);
            return false;
        }
        b.Open(n, count);
        return true;
    }

    /// <summary>Moves batch n to its next stage; only the worker that completed the stage's last
    /// chunk calls it, after the serial step that follows the stage.</summary>
    static void Open(StrifeBatch b, uint n, BatchPhase from, BatchPhase to)
    {
        bool advanced = b.TryAdvance(n, from, to);
        Debug.Assert(advanced, $"batch {n}: stage {from} ended twice");
    }

    void EndAnalysis(StrifeBatch b, uint n)
    {
        _analysis.Schedule(b, n);
        Interlocked.Increment(ref _batches);
        Interlocked.Add(ref _transactions, b.Count);
        Interlocked.Add(ref _residuals, b.Residuals);
        Interlocked.Add(ref _clusters, b.WorkClusters);
        Observer?.Analysed(new StrifeBatchView(b, n));
    }

    // ---- execution (StrifeExec.tla) ----

    /// <summary>StrifeExec.tla StartClusters: batch n-1 is done, so batch n's clusters may start.
    /// The worker that moves _current on recycles n-1's buffer for batch n+1.</summary>
    bool Retire(uint current)
    {
        if (Interlocked.CompareExchange(ref _current, current + 1, current) != current) return false;
        Buffer(current).Recycle(current + 2);
        var b = Buffer(current + 1);
        b.TryAdvance(current + 1, BatchPhase.Analysed, BatchPhase.Clusters);
        if (Volatile.Read(ref b.ClustersDone) == b.WorkClusters) Barrier(b, current + 1);
        return true;
    }

    /// <summary>Runs one cluster, its transactions one after another, with no concurrency control
    /// (StrifeExec.tla ClusterStart, ClusterOp, Finish).</summary>
    bool RunCluster(StrifeBatch b, uint n, BatchPhase phase, BatchWorker worker)
    {
        if (phase != BatchPhase.Clusters && !(_overlapEarly && phase == BatchPhase.Analysed)) return false;
        if (!StrifeBatch.TryClaim(ref b.ClusterClaim, n, b.WorkClusters, out int w)) return false;
        int end = b.WorkStart[w] + b.WorkLength[w];
        for (int i = b.WorkStart[w]; i < end; i++)
        {
            int slot = b.WorkOrder[i];
            if (i + 1 < end) PrefetchRows(b, b.WorkOrder[i + 1]);
            Load(b, n, slot, worker.Ctx, clustered: true);
            Outcome outcome;
            AbortReason reason;
            try
            {
                outcome = _cluster.Run(worker.Ctx, out reason);
            }
            catch (Exception e) when (worker.OnFailed is not null && _cluster.UndoesAFailedAttempt(worker.Ctx))
            {
                Fail(b, n, slot, worker, e); // undone: the cluster goes on without it
                continue;
            }
            Debug.Assert(outcome != Outcome.Aborted, $"batch {n}, slot {slot}: a clustered transaction met a conflict ({reason})");
            worker.Count(outcome, reason, b.StartTicks[slot]);
            Observer?.Ended(n, slot, outcome);
            if (worker.OnEnded is not null) Answer(b, slot, worker, outcome, reason, attempts: 1);
        }
        if (Interlocked.Increment(ref b.ClustersDone) == b.WorkClusters) Barrier(b, n);
        return true;
    }

    /// <summary>Asks the CPU for a clustered transaction's rows, which the analysis found: called
    /// one transaction ahead, the misses of the next overlap the running of this one.</summary>
    void PrefetchRows(StrifeBatch b, int slot)
    {
        int at = slot * b.MaxAccess;
        for (int i = 0; i < b.AccessCount[slot]; i++) _db[b.AccessTable(at + i)].PrefetchRowAt(b.AccessRow(at + i));
    }

    /// <summary>StrifeExec.tla Barrier: every cluster has finished; the residual phase starts.</summary>
    void Barrier(StrifeBatch b, uint n)
    {
        if (b.TryAdvance(n, BatchPhase.Clusters, BatchPhase.Residuals) && Volatile.Read(ref b.ResidualsDone) == b.Residuals)
            FinishBatch(b, n);
    }

    /// <summary>Runs one residual to its commit or its logic's abort, retrying conflict aborts
    /// (StrifeExec.tla ResidualStart, ResidualOp, Finish).</summary>
    bool RunResidual(StrifeBatch b, uint n, BatchPhase phase, BatchWorker worker)
    {
        bool open = phase == BatchPhase.Residuals
                    || _noBarrier && phase == BatchPhase.Clusters && Volatile.Read(ref b.ClusterClaim) == ((long)n << 32 | (uint)b.WorkClusters);
        if (!open || !StrifeBatch.TryClaim(ref b.ResidualClaim, n, b.Residuals, out int r)) return false;
        int slot = b.ResidualOrder[r];
        var ctx = worker.Ctx;
        Load(b, n, slot, ctx, clustered: false);
        var gate = new ResidualGate(Observer, worker, n, slot, b.StartTicks[slot]);
        for (bool runAgain = _retryAfterCommit; ; runAgain = false)
        {
            Outcome outcome;
            AbortReason reason;
            int attempts;
            try
            {
                outcome = Attempts.RunToEnd(_residual, ctx, ref worker.Rng, ref gate, out reason, out attempts);
            }
            catch (Exception e) when (worker.OnFailed is not null) // a residual attempt keeps images: undone
            {
                Fail(b, n, slot, worker, e);
                break;
            }
            Observer?.Ended(n, slot, outcome);
            if (worker.OnEnded is not null) Answer(b, slot, worker, outcome, reason, attempts);
            if (!(runAgain && outcome == Outcome.Committed)) break; // the twin: a worker runs the committed transaction once more
        }
        // Under the NoBarrier twin the residuals may all end before the barrier: then Barrier finishes the batch.
        if (Interlocked.Increment(ref b.ResidualsDone) == b.Residuals && b.PhaseOf(n) == BatchPhase.Residuals) FinishBatch(b, n);
        return true;
    }

    /// <summary>A residual: counted from its batch's start, every conflict abort retried (the run
    /// measures until the last batch is done), and shown to the observer.</summary>
    readonly struct ResidualGate(IStrifeObserver? observer, BatchWorker worker, uint batch, int slot, long start) : IAttemptGate
    {
        public void Count(Outcome outcome, AbortReason reason) => worker.Count(outcome, reason, start);

        public bool Retry(TxnContext ctx)
        {
            observer?.AttemptAborted(batch, slot, ctx);
            return true;
        }
    }

    /// <summary>StrifeExec.tla FinishBatch, once: the worker whose CAS wins reports it first.</summary>
    void FinishBatch(StrifeBatch b, uint n)
    {
        if (Interlocked.CompareExchange(ref b.FinishClaim, 1, 0) != 0) return;
        Observer?.BatchDone(n);
        bool done = b.TryAdvance(n, BatchPhase.Residuals, BatchPhase.Done);
        Debug.Assert(done, $"batch {n}: finished outside its residual phase");
    }

    /// <summary>Tells the worker's listener (<see cref="Runtime.ContendEngine"/>) that the slot's transaction
    /// has ended, and forgets its tag: a tag left in a batch is one <see cref="Unfinished"/> reports.</summary>
    static void Answer(StrifeBatch b, int slot, BatchWorker worker, Outcome outcome, AbortReason reason, int attempts)
    {
        worker.Ctx.Tag = b.Tag[slot];
        worker.Ended(outcome, reason, attempts);
        b.Tag[slot] = null;
    }

    /// <summary>The slot's program threw and its attempt was undone: that transaction fails, as
    /// a per-transaction protocol's does (<see cref="Runtime.TransactionFailedException"/>), and
    /// the batch goes on. The observer sees it end as a logic abort does: nothing of it stays.
    /// Decided here; the paper does not say what a failing transaction does to its batch.</summary>
    void Fail(StrifeBatch b, uint n, int slot, BatchWorker worker, Exception error)
    {
        Observer?.Ended(n, slot, Outcome.UserAborted);
        worker.Ctx.Tag = b.Tag[slot];
        worker.EndedByFailure(error);
        b.Tag[slot] = null;
    }

    void Load(StrifeBatch b, uint n, int slot, TxnContext ctx, bool clustered)
    {
        var program = b.Program[slot];
        b.ArgsOf(slot)[..program.ArgCount].CopyTo(ctx.Args);
        ctx.Start(program, b.Timestamp[slot]);
        if (b.Analysable[slot])
        {
            b.OpRow.AsSpan(slot * b.MaxAccess, program.Ops.Length).CopyTo(ctx.OpRow);
            ctx.RowsKnown = true;
        }
        Observer?.Starting(n, slot, clustered);
    }
}

/// <summary>What Strife's analyses made of the batches so far.</summary>
/// <param name="AnalysisSeconds">worker time spent in analysis stages, summed over workers</param>
internal readonly record struct StrifeCounts(long Batches, long Transactions, long Residuals, long Clusters, double AnalysisSeconds)
{
    public double ResidualShare => Transactions == 0 ? 0 : Residuals / (double)Transactions;
}
