using Contend.Engine.Protocols;
using Contend.Engine.Runtime;

namespace Contend.Engine.Cluster;

/// <summary>What a coordinator slot needs of the simulated cluster it runs in.</summary>
internal interface ISlotCluster
{
    SimulatedTime Time { get; }
    WorkerStats Stats { get; }
    /// <summary>Transactions whose program threw, with where.</summary>
    List<string> Failures { get; }
    /// <summary>Set once the run's time is over: slots start nothing new.</summary>
    bool Stopping { get; }
    /// <summary>The unit of a conflict retry's random backoff, which grows with the retries.</summary>
    TimeSpan Backoff { get; }
    /// <summary>Commits that used more than one partition.</summary>
    long MultiPartitionCommits { get; set; }
}

/// <summary>
/// One coordinator slot of a node, whatever the protocol: runs its stream of transactions one
/// after another, each attempt a state machine of the protocol's (driven by messages and timers,
/// so that it never holds a thread while a message is away), and ends each the same way: a commit
/// counted with its latency, a final abort or a program's failure counted and the next
/// transaction started, a conflict retried after a random backoff that grows with the retries,
/// as a new attempt with the same age.
/// </summary>
internal abstract class SlotCoordinator
{
    readonly ITransactionSource _source;
    readonly Random _random;
    readonly ITimer _backoff;
    long _attempts, _timestamps, _startedAt;

    protected SlotCoordinator(int node, int slot, ISlotCluster cluster, ITransactionSource source, ulong seed)
    {
        Node = node;
        Slot = slot;
        Cluster = cluster;
        _source = source;
        Ctx = new TxnContext(0, null);
        _random = new Random((int)(seed ^ (seed >> 32)));
        _backoff = cluster.Time.CreateTimer(static s => ((SlotCoordinator)s!).AfterBackoff(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
    }

    protected int Node { get; }
    protected int Slot { get; }
    protected ISlotCluster Cluster { get; }
    /// <summary>The transaction under way: its program, arguments, results so far and age.</summary>
    protected TxnContext Ctx { get; }

    /// <summary>The attempt under way (or the last one).</summary>
    public long Txn { get; private set; }

    /// <summary>True while a transaction is under way (started and not ended), a backoff included.</summary>
    public bool Busy { get; private set; }

    /// <summary>Starts the next transaction of the stream, unless the run is stopping.</summary>
    public void StartNext()
    {
        if (Cluster.Stopping)
        {
            Busy = false;
            return;
        }
        var program = _source.Next(Ctx);
        // An age unique in the cluster without a shared counter: this slot's count, then its id.
        Ctx.Start(program, (++_timestamps << 16) | ((long)Node << 8) | (uint)Slot);
        _startedAt = Cluster.Time.GetTimestamp();
        Busy = true;
        NewAttempt();
    }

    void NewAttempt()
    {
        Txn = ClusterTxnId.Make(Node, Slot, ++_attempts);
        BeginAttempt();
    }

    /// <summary>Starts the protocol's state machine for attempt <see cref="Txn"/>.</summary>
    protected abstract void BeginAttempt();

    /// <summary>The attempt is over: count it, and start the next transaction or retry this one.</summary>
    /// <param name="failure">set when the program threw: the transaction is not retried</param>
    /// <param name="multiPartition">a commit that used more than one partition</param>
    protected void Finish(bool commit, AbortReason reason, string? failure, bool multiPartition)
    {
        var stats = Cluster.Stats;
        if (commit)
        {
            stats.Commits++;
            if (multiPartition) Cluster.MultiPartitionCommits++;
            stats.RecordLatency((long)Cluster.Time.GetElapsedTime(_startedAt).TotalNanoseconds);
            Ctx.ConflictRetries = 0;
            StartNext();
            return;
        }
        stats.Aborts[(int)reason]++;
        if (failure is not null) Cluster.Failures.Add($"{ClusterTxnId.Describe(Txn)}: {failure}");
        if (reason.IsFinal() || failure is not null || Cluster.Stopping)
        {
            if (reason.IsFinal() || failure is not null) stats.UserAborts++;
            Ctx.ConflictRetries = 0;
            StartNext();
            return;
        }
        Ctx.ConflictRetries++;
        long span = Cluster.Backoff.Ticks * Math.Min(Ctx.ConflictRetries, 16);
        _backoff.Change(TimeSpan.FromTicks(1 + _random.NextInt64(span + 1)), Timeout.InfiniteTimeSpan);
    }

    void AfterBackoff()
    {
        if (Cluster.Stopping) Busy = false;
        else NewAttempt();
    }
}
