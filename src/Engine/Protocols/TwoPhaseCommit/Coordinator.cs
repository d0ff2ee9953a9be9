using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.TwoPhaseCommit;

/// <summary>
/// Two-phase commit's coordinator slot (<see cref="SlotCoordinator"/>): an attempt runs its ops
/// one at a time in the program's order on the primaries of their keys' partitions, then asks
/// every partition it touched to prepare, then decides: commit if every vote is yes, else abort,
/// and sends the decision to each until each has acknowledged it. A reply that does not come
/// within the reply timeout is a no (presumed abort).
/// </summary>
internal sealed class Coordinator : SlotCoordinator
{
    enum Phase : byte { Idle, Running, Preparing, Deciding }

    readonly TwoPhaseCommitCluster _cluster;
    readonly ITimer _timer;
    readonly MutantFlag _forgetsAbort;
    readonly bool[] _touched;
    readonly bool[] _answered;
    int _touchedCount, _answeredCount;
    /// <summary>The first partition the attempt used, where it reads replicated tables; -1 before its first op.</summary>
    int _first;
    Phase _phase;
    int _position;
    bool _commit;
    AbortReason _reason;
    string? _failure;

    public Coordinator(int node, int slot, TwoPhaseCommitCluster cluster, ITransactionSource source, ulong seed, TwoPhaseCommitMutants mutants)
        : base(node, slot, cluster, source, seed)
    {
        _cluster = cluster;
        _timer = cluster.Time.CreateTimer(static s => ((Coordinator)s!).OnTimer(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _forgetsAbort = new MutantFlag(mutants, TwoPhaseCommitMutants.CoordinatorForgetsAbort);
        _touched = new bool[cluster.Topology.Partitions];
        _answered = new bool[cluster.Topology.Partitions];
    }

    protected override void BeginAttempt()
    {
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
        var program = Ctx.Program;
        if (_position == program.Order.Length)
        {
            Prepare();
            return;
        }
        int op = program.Order[_position];
        var o = program.Ops[op];
        long key = o.ResolveKey(Ctx.Args, Ctx.Results);
        int partition = !_cluster.Map.Replicates(o.TableId) ? _cluster.Map.PartitionOf(o.TableId, key)
                      : _first >= 0 ? _first : _cluster.HomePartition(Node);
        if (!_touched[partition])
        {
            _touched[partition] = true;
            _touchedCount++;
            if (_first < 0) _first = partition;
        }
        Send(partition, new OpRequest(Txn, partition, Ctx.Timestamp, program.Name, op, key,
                                      Ctx.Args.AsSpan(0, program.ArgCount).ToArray(), Ctx.Results.AsSpan(0, program.Ops.Length).ToArray()));
        ArmTimeout();
    }

    public void Receive(object message)
    {
        switch (message)
        {
            case OpReply r when r.Txn == Txn && _phase == Phase.Running && r.Op == Ctx.Program.Order[_position]:
                if (r.Reason != AbortReason.None)
                {
                    _failure = r.Failure;
                    Decide(commit: false, r.Reason);
                    return;
                }
                Ctx.Results[r.Op] = r.Result;
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
        }
    }

    void End()
    {
        _timer.Change(Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _phase = Phase.Idle;
        Finish(_commit, _reason, _failure, _touchedCount > 1);
    }

    void ClearAnswers()
    {
        Array.Clear(_answered);
        _answeredCount = 0;
    }

    void ArmTimeout() => _timer.Change(_cluster.Options.ReplyTimeout, Timeout.InfiniteTimeSpan);

    void Send(int partition, object message) =>
        _cluster.Transport.Send(new Envelope(Node, _cluster.Topology.PrimaryOf(partition), message));
}
