using System.Runtime.InteropServices;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>
/// What the workers of one run share: the run's phase (warm-up, measure, stop), the
/// WaitDie timestamp counter, and how many transactions may still be drawn.
/// </summary>
/// <remarks>
/// Every worker reads <see cref="Phase"/> once a transaction, while the counters are written:
/// each written word has a cache line of its own, so that a write does not take the line the
/// phase is read from away from every other core.
/// <code>
///   +0    Phase, Failed       read by every worker, written at a phase change
///   +64   Timestamps          incremented once a transaction (WaitDie's ages, in arrival
///                             order: taken in blocks per worker instead, WaitDie ran TPC-C at
///                             0.84x, docs/measured/Core.md)
///   +128  Quota               decremented by every draw of a batch protocol
/// </code>
/// </remarks>
[StructLayout(LayoutKind.Explicit, Size = 192)]
internal sealed class RunControl
{
    [FieldOffset(0)] public int Phase;
    /// <summary>1 once a worker has failed (an exception left its thread): the other workers
    /// return from the protocol, leaving whatever batch they are in unfinished. Set by <see cref="Fail"/>.</summary>
    [FieldOffset(4)] public int Failed;
    [FieldOffset(64)] public long Timestamps;
    /// <summary>Transactions that may still be drawn, over all workers (a run of fixed size);
    /// long.MaxValue for a timed run.</summary>
    [FieldOffset(128)] public long Quota;

    public RunControl(int phase, long quota)
    {
        Phase = phase;
        Quota = quota;
    }

    /// <summary>A worker has failed: the run stops, and, failed, does not wait for its batches to end.</summary>
    public void Fail()
    {
        Volatile.Write(ref Failed, 1);
        Volatile.Write(ref Phase, WorkerPool.Stop);
    }

    /// <summary>A control for a run outside the pool (a test): measuring from the start,
    /// <paramref name="transactions"/> transactions in all.</summary>
    public static RunControl Fixed(long transactions) => new(WorkerPool.Measure, transactions);
}

/// <summary>
/// One worker of the pool as a batch protocol sees it: its transaction context, its own
/// transaction source, its counters, and the run's control. Only its own thread uses it.
/// </summary>
internal sealed class BatchWorker(TxnContext ctx, ITransactionSource source, WorkerStats stats, ulong rng, RunControl control)
{
    public TxnContext Ctx { get; } = ctx;
    public WorkerStats Stats { get; } = stats;
    public RunControl Control { get; } = control;
    /// <summary>The worker's back-off and sampling generator.</summary>
    public ulong Rng = rng;
    bool _measuring;

    /// <summary>Told of each transaction's end (its commit or its logic's abort), on the worker
    /// that ran it, while <see cref="TxnContext.Results"/> and <see cref="TxnContext.Tag"/> are
    /// still its: how <see cref="ContendEngine"/> answers a request. Null for the pool, and then
    /// a protocol need not call <see cref="Ended"/>.</summary>
    public Action<TxnContext, TxnOutcome>? OnEnded { get; init; }

    /// <summary>Told of a transaction whose program threw (a bug in it) and whose attempt was
    /// undone, on the worker that ran it, while <see cref="TxnContext.Tag"/> is still its: that
    /// transaction alone fails and the batch goes on. Null for the pool, whose run a throwing
    /// body ends (as it ends the engine's when the attempt could not be undone).</summary>
    public Action<TxnContext, Exception>? OnFailed { get; init; }

    /// <summary>False once the run is stopping: start no new batch.</summary>
    public bool Running => Volatile.Read(ref Control.Phase) != WorkerPool.Stop; // a failure sets Stop too

    /// <summary>True once a worker of the run has failed: return as soon as nothing is left to
    /// take, without waiting for the batch to end (it never will).</summary>
    public bool Failed => Volatile.Read(ref Control.Failed) != 0;

    /// <summary>True while a new batch could still get transactions.</summary>
    public bool CanDraw => Running && Volatile.Read(ref Control.Quota) > 0;

    /// <summary>Takes up to <paramref name="wanted"/> transactions from the run's quota and returns
    /// how many it may draw (0 when the run is stopping or the quota is spent).</summary>
    public int TakeQuota(int wanted)
    {
        if (!Running) return 0;
        while (true)
        {
            long left = Volatile.Read(ref Control.Quota);
            if (left <= 0) return 0;
            long take = Math.Min(left, wanted);
            if (Interlocked.CompareExchange(ref Control.Quota, left - take, left) == left) return (int)take;
        }
    }

    /// <summary>The worker's next transaction: its program, and its arguments (and the source's
    /// <see cref="TxnContext.Tag"/>, if it sets one) in <see cref="Ctx"/>.</summary>
    public TxnProgram Draw() => source.Next(Ctx);

    /// <summary>Reserves <paramref name="count"/> consecutive WaitDie timestamps; returns the first.</summary>
    public long NextTimestamps(int count) => Interlocked.Add(ref Control.Timestamps, count) - count + 1;

    /// <summary>Counts an attempt's outcome; the counters restart when measuring starts. Outcomes
    /// after the stop count too: the pool measures until the last batch is done.</summary>
    public void Count(Outcome outcome, AbortReason reason, long startTimestamp)
    {
        if (Volatile.Read(ref Control.Phase) != WorkerPool.Warmup && !_measuring)
        {
            Stats.Reset();
            _measuring = true;
        }
        Stats.Count(outcome, reason, startTimestamp);
    }

    /// <summary>A transaction has ended after <paramref name="attempts"/> attempts: tells
    /// <see cref="OnEnded"/>, then forgets the transaction's tag.</summary>
    public void Ended(Outcome outcome, AbortReason reason, int attempts)
    {
        OnEnded?.Invoke(Ctx, TxnOutcome.Of(Ctx, outcome, reason, attempts));
        Ctx.Tag = null;
    }

    /// <summary>A transaction's program threw and its attempt was undone: tells
    /// <see cref="OnFailed"/>, then forgets the transaction's tag.</summary>
    public void EndedByFailure(Exception error)
    {
        OnFailed!.Invoke(Ctx, error);
        Ctx.Tag = null;
    }
}
