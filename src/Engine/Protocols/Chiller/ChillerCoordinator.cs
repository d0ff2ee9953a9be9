using Contend.Engine.Cluster;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// Chiller's coordinator slot (<see cref="SlotCoordinator"/>): an attempt runs Section 3.3's
/// steps 1-5: plan the regions, lock and read the outer region op by op (NO_WAIT), delegate the
/// inner region, learn its outcome from the copies of the inner partition, and commit or release
/// the outer region. A node's slots overlap one another's network waits, as the paper's
/// co-routines do.
/// </summary>
internal sealed class ChillerCoordinator : SlotCoordinator
{
    enum Phase : byte { Idle, Locking, Preparing, Delegated, Finishing }

    readonly ChillerCluster _cluster;
    /// <summary>Partitions the attempt asked to lock something, those off the host with inserts to
    /// claim, and which of them still owe an answer.</summary>
    readonly bool[] _touched, _inserts, _waiting;
    int _waitingCount;
    Regions _regions;
    /// <summary>Bit i: outer op i is locked at the inner host's partition.</summary>
    ulong _lockedAtHost;
    /// <summary>True once the attempt locked something off the inner host's partition: a two-region transaction.</summary>
    bool _elsewhere;
    /// <summary>Bit c: copy c of the inner partition has notified.</summary>
    ulong _notified;
    /// <summary>The configuration as this node last learned it.</summary>
    ClusterView _view;
    /// <summary>Per partition, the copy this attempt's last message went to (its primary then), or -1.</summary>
    readonly int[] _sentTo;
    /// <summary>Per partition, the message waiting for the partition's next primary to be elected.</summary>
    readonly object?[] _heldFor;
    /// <summary>The copy the inner region was delegated to, or -1.</summary>
    int _delegatedTo;
    int _position;
    Phase _phase;
    bool _commit;
    AbortReason _reason;
    string? _failure;

    readonly MutantFlag _takesUnaddressedNotice;

    public ChillerCoordinator(int node, int slot, ChillerCluster cluster, ITransactionSource source, ulong seed)
        : base(node, slot, cluster, source, seed)
    {
        _cluster = cluster;
        _takesUnaddressedNotice = new MutantFlag(cluster.Options.Mutants, ChillerMutants.CoordinatorTakesUnaddressedNotice);
        _view = cluster.Membership.Current;
        _touched = new bool[cluster.Topology.Partitions];
        _waiting = new bool[cluster.Topology.Partitions];
        _inserts = new bool[cluster.Topology.Partitions];
        _sentTo = new int[cluster.Topology.Partitions];
        _heldFor = new object?[cluster.Topology.Partitions];
    }

    /// <summary>This node has stopped (crash-stop): its slots take no further step, not even a
    /// timer's; the inner partition's primary takes their transactions over (RecoverCoordinator).</summary>
    bool Stopped => _cluster.IsDown(Node);

    protected override void BeginAttempt()
    {
        if (Stopped) return;
        Array.Clear(_touched);
        Array.Clear(_waiting);
        Array.Clear(_inserts);
        Array.Fill(_sentTo, -1);
        Array.Clear(_heldFor);
        _delegatedTo = -1;
        _waitingCount = 0;
        _lockedAtHost = 0;
        _elsewhere = false;
        _notified = 0;
        _position = 0;
        _reason = AbortReason.None;
        _failure = null;
        _regions = _cluster.Program(Ctx.Program.Name).Plan(Ctx.Args, _cluster.Lookup, _cluster.HomePartition(Node));
        _phase = Phase.Locking;
        NextOuter();
    }

    /// <summary>Step 3: the next outer op in the program's order, or step 4 once every one is locked.</summary>
    void NextOuter()
    {
        var program = Ctx.Program;
        while (_position < program.Order.Length && _regions.IsInner(program.Order[_position])) _position++;
        if (_position == program.Order.Length)
        {
            PrepareOrDelegate();
            return;
        }
        int op = program.Order[_position];
        var o = program.Ops[op];
        long key = o.ResolveKey(Ctx.Args, Ctx.Results);
        // A replicated table's read goes to the inner host, which holds it like every partition.
        int partition = _cluster.Lookup.Map.Replicates(o.TableId) ? _regions.Host : _cluster.Lookup.Map.PartitionOf(o.TableId, key);
        _touched[partition] = true;
        if (partition == _regions.Host) _lockedAtHost |= RegionProgram.Bit(op);
        else
        {
            _elsewhere = true;
            if (o.Mode == Programs.AccessMode.Insert) _inserts[partition] = true;
        }
        Send(partition, new LockOuter(Txn, partition, _regions.Host, Ctx.Timestamp, program.Name, op, key, _regions.IsDeferred(op),
                                      Ctx.Args.AsSpan(0, program.ArgCount).ToArray(), Ctx.Results.AsSpan(0, program.Ops.Length).ToArray()));
    }

    /// <summary>Prepares every outer partition that claims inserts or has replicas (the host claims
    /// its own), then delegates.</summary>
    void PrepareOrDelegate()
    {
        for (int p = 0; p < _inserts.Length; p++)
        {
            // Claims inserts, and with replicas ships the share's locks to them first (D3).
            if (p == _regions.Host || !_touched[p] || !_inserts[p] && _view.Configuration[p].Length < 2) continue;
            _waiting[p] = true;
            _waitingCount++;
            Send(p, new PrepareOuter(Txn, p));
        }
        if (_waitingCount == 0) Delegate();
        else _phase = Phase.Preparing;
    }

    void Delegate()
    {
        var program = Ctx.Program;
        _phase = Phase.Delegated;
        Send(_regions.Host, new Delegate(Txn, _regions.Host, Ctx.Timestamp, program.Name, Ctx.Args.AsSpan(0, program.ArgCount).ToArray(),
                                         Ctx.Results.AsSpan(0, program.Ops.Length).ToArray(), _regions.Inner, _regions.Deferred & _lockedAtHost));
        _cluster.Trace(ChillerStep.CoordDelegate, Txn, _regions.Host, Node);
    }

    public void Receive(object message)
    {
        switch (message)
        {
            case OuterLocked m when m.Txn == Txn && _phase == Phase.Locking && _position < Ctx.Program.Order.Length && m.Op == Ctx.Program.Order[_position]:
                if (m.Reason != AbortReason.None)
                {
                    // The denying partition has released what the attempt held there already.
                    _touched[m.Partition] = false;
                    _failure = m.Failure;
                    Decide(commit: false, m.Reason);
                    return;
                }
                if (!_regions.IsDeferred(m.Op)) Ctx.Results[m.Op] = m.Result;
                _position++;
                NextOuter();
                break;
            case OuterPrepared m when m.Txn == Txn && _phase == Phase.Preparing && _waiting[m.Partition]:
                _waiting[m.Partition] = false;
                _waitingCount--;
                if (m.Reason != AbortReason.None)
                {
                    _touched[m.Partition] = false;
                    _failure = m.Failure;
                    Array.Clear(_waiting);
                    _waitingCount = 0;
                    Decide(commit: false, m.Reason);
                }
                else if (_waitingCount == 0) Delegate();
                break;
            case InnerNotify m when (m.Txn == Txn || _takesUnaddressedNotice) && _phase == Phase.Delegated && (_notified & (1UL << m.Copy)) == 0:
                _notified |= 1UL << m.Copy;
                // (Bounded by the notice's own results: the twin takes another attempt's, maybe another program's.)
                for (int i = 0; i < Math.Min(Ctx.Program.Ops.Length, m.Results.Length); i++)
                    if (_regions.IsInner(i)) Ctx.Results[i] = m.Results[i];
                if ((ExpectedNotifiers & ~_notified) == 0) LearnCommit();
                break;
            case Elected m when _phase == Phase.Delegated && m.Partition == _regions.Host && _delegatedTo >= 0 && _delegatedTo != m.Copy:
                // The host this attempt was delegated to crashed: recovery decided from the survivors.
                if (m.CommittedInner.Contains(Txn)) break;
                _cluster.Trace(ChillerStep.CoordLearnAbort, Txn, m.Partition, Node);
                if (Stopped) return;
                _touched[_regions.Host] = false;
                Decide(commit: false, AbortReason.NoReply);
                break;
            case InnerAborted m when m.Txn == Txn && _phase == Phase.Delegated:
                _cluster.Trace(ChillerStep.CoordLearnAbort, Txn, m.Partition, Node);
                if (Stopped) return;
                // The host ended its share, the outer locks it held with it.
                _touched[_regions.Host] = false;
                _failure = m.Failure;
                Decide(commit: false, m.Reason);
                break;
            case OuterDone m when m.Txn == Txn && _phase == Phase.Finishing && _waiting[m.Partition]:
                _waiting[m.Partition] = false;
                if (--_waitingCount == 0) End();
                break;
            // Anything else is a doubled copy for an attempt or a phase that is over.
        }
    }

    void LearnCommit()
    {
        _cluster.Trace(ChillerStep.CoordLearnCommit, Txn, _regions.Host, Node);
        if (!Stopped) Decide(commit: true, AbortReason.None);
    }

    /// <summary>D6: every copy of the inner partition in the configuration other than the host the
    /// inner region was delegated to (a replica promoted since still counts), or that host itself
    /// when there is none (as this node's view has it).</summary>
    ulong ExpectedNotifiers
    {
        get
        {
            ulong expected = 0;
            foreach (int copy in _view.Configuration[_regions.Host])
                if (copy != _delegatedTo) expected |= 1UL << copy;
            return expected == 0 ? 1UL << Math.Max(_delegatedTo, 0) : expected;
        }
    }

    /// <summary>A new view. A message held for a partition that has a primary again goes out. Before
    /// delegation, a partition whose primary changed under a lock or a prepare of this attempt
    /// fails it (CoordLearnParticipantFailed); after the outcome, the outcome goes again to a
    /// partition whose primary changed; a removed replica's notification is no longer awaited.</summary>
    public void OnView(ClusterView view)
    {
        _view = view;
        if (_phase is Phase.Locking or Phase.Preparing)
            for (int p = 0; p < _sentTo.Length; p++)
                if (_touched[p] && _sentTo[p] >= 0 && view.PrimaryCopy(p) != _sentTo[p])
                {
                    _cluster.Trace(ChillerStep.CoordLearnParticipantFailed, Txn, p, Node);
                    if (Stopped) return;
                    _failure = null;
                    Array.Clear(_waiting);
                    _waitingCount = 0;
                    Decide(commit: false, AbortReason.NoReply);
                    return;
                }
        if (_phase == Phase.Finishing)
            for (int p = 0; p < _sentTo.Length; p++)
                if (_waiting[p] && _sentTo[p] != view.PrimaryCopy(p))
                    Send(p, new OuterDecision(Txn, p, _commit, Ctx.Results.AsSpan(0, Ctx.Program.Ops.Length).ToArray()));
        for (int p = 0; p < _heldFor.Length; p++)
            if (_heldFor[p] is { } held && view.PrimaryCopy(p) >= 0)
            {
                _heldFor[p] = null;
                Send(p, held);
            }
        if (_phase == Phase.Delegated && _notified != 0 && (ExpectedNotifiers & ~_notified) == 0) LearnCommit();
    }

    /// <summary>Step 5: the outcome to every outer partition that holds something (the host's share
    /// has ended with its inner region, either way).</summary>
    void Decide(bool commit, AbortReason reason)
    {
        _commit = commit;
        _reason = reason;
        _cluster.Decided(Txn, commit);
        if (_phase == Phase.Delegated || commit) _touched[_regions.Host] = false;
        _phase = Phase.Finishing;
        long[] results = Ctx.Results.AsSpan(0, Ctx.Program.Ops.Length).ToArray();
        for (int p = 0; p < _touched.Length; p++)
        {
            if (!_touched[p]) continue;
            _waiting[p] = true;
            _waitingCount++;
            Send(p, new OuterDecision(Txn, p, commit, results));
        }
        if (_waitingCount == 0) End();
    }

    void End()
    {
        _cluster.Trace(ChillerStep.CoordFinish, Txn, _regions.Host, Node);
        _phase = Phase.Idle;
        if (!Stopped) Finish(_commit, _reason, _failure, _elsewhere);
    }

    /// <summary>To the partition's primary as this node's view has it; while the partition recovers,
    /// held for the primary it elects (a closed channel delivers nothing, D2).</summary>
    void Send(int partition, object message)
    {
        int copy = _view.PrimaryCopy(partition);
        if (copy < 0)
        {
            _heldFor[partition] = message;
            return;
        }
        _sentTo[partition] = copy;
        if (message is Delegate) _delegatedTo = copy;
        _cluster.Send(Node, _cluster.Topology.CopiesOf(partition)[copy], message);
    }
}
