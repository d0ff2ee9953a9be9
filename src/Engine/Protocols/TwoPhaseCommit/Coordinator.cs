using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.TwoPhaseCommit;

/// <summary>
/// One coordinator slot of a node: runs its stream of transactions one after another, each
/// as a state machine driven by replies and timers, so that it never holds a thread while a
/// message is away. An attempt runs its ops one at a time in the program's order on the
/// primaries of their keys' partitions, then asks every partition it touched to prepare,
/// then decides: commit if every vote is yes, else abort, and sends the decision to each
/// until each has acknowledged it. A reply that does not come within the reply timeout is a
/// no (presumed abort); a conflict abort is retried after a random backoff, as a new attempt
/// with the same age.
/// </summary>
internal sealed class Coordinator
{
    enum Phase : byte { Idle, Running, Preparing, Deciding }

    readonly int _node;
    readonly int _slot;
    readonly TwoPhaseCommitCluster _cluster;
    readonly ITransactionSource _source;
    readonly TxnContext _ctx;
    readonly Random _random;
    readonly ITimer _timer;
    readonly MutantFlag _forgetsAbort;
    readonly bool[] _touched;
    readonly bool[] _answered;
    int _touchedCount, _answeredCount;
    /// <summary>The first partition the attempt used, where it reads replicated tables; -1 before its first op.</summary>
    int _first;
    Phase _phase;
    long _attempts, _timestamps;
    int _position;
    bool _commit;
    AbortReason _reason;
    string? _failure;
    long _startedAt;

    public Coordinator(int node, int slot, TwoPhaseCommitCluster cluster, ITransactionSource source, ulong seed, TwoPhaseCommitMutants mutants)
    {
        _node = node;
        _slot = slot;
        _cluster = cluster;
        _source = source;
        _ctx = new TxnContext(0, null);
        _random = new Random((int)(seed ^ (seed >> 32)));
        _timer = cluster.Time.CreateTimer(static s => ((Coordinator)s!).OnTimer(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _forgetsAbort = new MutantFlag(mutants, TwoPhaseCommitMutants.CoordinatorForgetsAbort);
        _touched = new bool[cluster.Topology.Partitions];
        _answered = new bool[cluster.Topology.Partitions];
    }

    public long Txn { get; private set; }

    /// <summary>True while a transaction is under way (started and not ended).</summary>
    public bool Busy => _phase != Phase.Idle;

    /// <summary>Starts the next transaction of the stream, unless the run is stopping.</summary>
    public void StartNext()
    {
        if (_cluster.Stopping)
        {
            _phase = Phase.Idle;
            return;
        }
        var program = _source.Next(_ctx);
        // An age unique in the cluster without a shared counter: this slot's count, then its id.
        _ctx.Start(program, (++_timestamps << 16) | ((long)_node << 8) | (uint)_slot);
        _startedAt = _cluster.Time.GetTimestamp();
        BeginAttempt();
    }

    void BeginAttempt()
    {
        Txn = ClusterTxnId.Make(_node, _slot, ++_attempts);
        Array.Clear(_touched);
        _touchedCount = 0;
        _first = -1;
        _position = 0;
        _reason = AbortReason.None;
        _failure = null;
        _phase = Phase.Running;
        NextOp();
    }

    void NextOp()
    {
        var program = _ctx.Program;
        if (_position == program.Order.Length)
        {
            Prepare();
            return;
        }
        int op = program.Order[_position];
        var o = program.Ops[op];
        long key = o.ResolveKey(_ctx.Args, _ctx.Results);
        int partition = !_cluster.Map.Replicates(o.TableId) ? _cluster.Map.PartitionOf(o.TableId, key)
                      : _first >= 0 ? _first : _cluster.HomePartition(_node);
        if (!_touched[partition])
        {
            _touched[partition] = true;
            _touchedCount++;
            if (_first < 0) _first = partition;
        }
        Send(partition, new OpRequest(Txn, partition, _ctx.Timestamp, program.Name, op, key,
                                      _ctx.Args.AsSpan(0, program.ArgCount).ToArray(), _ctx.Results.AsSpan(0, program.Ops.Length).ToArray()));
        ArmTimeout();
    }

    public void Receive(object message)
    {
        switch (message)
        {
            case OpReply r when r.Txn == Txn && _phase == Phase.Running && r.Op == _ctx.Program.Order[_position]:
                if (r.Reason != AbortReason.None)
                {
                    _failure = r.Failure;
                    Decide(commit: false, r.Reason);
                    return;
                }
                _ctx.Results[r.Op] = r.Result;
                _position++;
                NextOp();
                break;
            case VoteReply v when v.Txn == Txn && _phase == Phase.Preparing && !_answered[v.Partition]:
                if (v.Reason != AbortReason.None)
                {
                    _failure = v.Failure;
                    Decide(commit: false, v.Reason);
                    return;
                }
                _answered[v.Partition] = true;
                if (++_answeredCount == _touchedCount) Decide(commit: true, AbortReason.None);
                break;
            case DecisionAck a when a.Txn == Txn && _phase == Phase.Deciding && !_answered[a.Partition]:
                _answered[a.Partition] = true;
                if (++_answeredCount == _touchedCount) End();
                break;
            // Anything else is a late or doubled copy for an attempt or a phase that is over.
        }
    }

    void Prepare()
    {
        _phase = Phase.Preparing;
        ClearAnswers();
        for (int p = 0; p < _touched.Length; p++)
            if (_touched[p]) Send(p, new PrepareRequest(Txn, p));
        ArmTimeout();
    }

    void Decide(bool commit, AbortReason reason)
    {
        _commit = commit;
        _reason = reason;
        _cluster.Decided(Txn, commit);
        _phase = Phase.Deciding;
        ClearAnswers();
        // The twin: an abort is decided, and no participant is told.
        if (!commit && _forgetsAbort)
        {
            End();
            return;
        }
        SendDecisions();
    }

    void SendDecisions()
    {
        for (int p = 0; p < _touched.Length; p++)
            if (_touched[p] && !_answered[p]) Send(p, new DecisionRequest(Txn, p, _commit));
        _timer.Change(_cluster.Options.Retransmit, Timeout.InfiniteTimeSpan);
    }

    void OnTimer()
    {
        switch (_phase)
        {
            case Phase.Running:
            case Phase.Preparing:
                Decide(commit: false, AbortReason.NoReply);
                break;
            case Phase.Deciding:
                SendDecisions();
                break;
            case Phase.Idle when _ctx.ConflictRetries > 0 && !_cluster.Stopping:
                // The backoff before a retry has passed.
                BeginAttempt();
                break;
        }
    }

    void End()
    {
        _timer.Change(Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _phase = Phase.Idle;
        var stats = _cluster.Stats;
        if (_commit)
        {
            stats.Commits++;
            if (_touchedCount > 1) _cluster.MultiPartitionCommits++;
            stats.RecordLatency((long)_cluster.Time.GetElapsedTime(_startedAt).TotalNanoseconds);
            _ctx.ConflictRetries = 0;
            StartNext();
            return;
        }
        stats.Aborts[(int)_reason]++;
        if (_failure is not null) _cluster.Failures.Add($"{ClusterTxnId.Describe(Txn)}: {_failure}");
        if (_reason.IsFinal() || _failure is not null || _cluster.Stopping)
        {
            if (_reason.IsFinal() || _failure is not null) stats.UserAborts++;
            _ctx.ConflictRetries = 0;
            StartNext();
            return;
        }
        // A conflict: retry the same transaction after a backoff that grows with its retries.
        _ctx.ConflictRetries++;
        long span = _cluster.Options.Backoff.Ticks * Math.Min(_ctx.ConflictRetries, 16);
        _timer.Change(TimeSpan.FromTicks(1 + _random.NextInt64(span + 1)), Timeout.InfiniteTimeSpan);
    }

    void ClearAnswers()
    {
        Array.Clear(_answered);
        _answeredCount = 0;
    }

    void ArmTimeout() => _timer.Change(_cluster.Options.ReplyTimeout, Timeout.InfiniteTimeSpan);

    void Send(int partition, object message) =>
        _cluster.Transport.Send(new Envelope(_node, _cluster.Topology.PrimaryOf(partition), message));
}
