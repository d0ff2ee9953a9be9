using System.Diagnostics;
using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// A partition's primary copy: an outer participant for the transactions that lock records here
/// in step 3 (NO_WAIT), and the inner host for those whose inner region is here (step 4). Both
/// roles share one attempt per transaction, so a transaction's outer locks on the inner host's
/// partition commit with its inner region. Every change it commits goes first to the partition's
/// replicas as an entry of its one log, in sequence order (Section 5.1; the spec's D3 for the
/// outer writes), and commits here once every replica has acknowledged receiving it.
/// </summary>
/// <remarks>
/// Decision (the issue's, recorded in the spec's header as D10): the paper's inner host commits on
/// the NIC's acknowledgement of its RDMA write; over this transport the equivalent is the
/// replica's acknowledgement of receipt (<see cref="ReplicaAck"/>), sent before it applies
/// anything. Committing when the messages are only sent is the weaker choice the spec refutes
/// (ChillerMutantCommitBeforeAcks: a host that dies before any replica has the message loses a
/// transaction that an outer partition may already have committed).
/// </remarks>
internal sealed class ChillerPrimary
{
    readonly int _node;
    readonly int _partition;
    /// <summary>Which copy of the partition this is (0 until a recovery elects another).</summary>
    readonly int _copy;
    readonly Database _db;
    readonly LockingProtocol _protocol;
    readonly ChillerCluster _cluster;
    readonly Dictionary<long, Share> _live = new();
    readonly Stack<Share> _free = new();
    readonly Dictionary<long, bool> _outcomes = new();
    readonly MutantFlag _abortsUnilaterally, _releasesEarly, _waitsForRemoved, _commitsOnSend, _participantTakesOver;
    /// <summary>Every inner region committed here, with its results: what a host left with no
    /// replica notifies again, and what it answers as a crashed coordinator's successor. Kept for
    /// the run, as the outcome log is.</summary>
    readonly Dictionary<long, long[]> _innerCommitted = new();
    /// <summary>As a crashed coordinator's successor: the partitions asking for the outcome of a
    /// transaction this primary cannot answer yet (its inner region replicating, or the
    /// coordinator not yet cut off in the view this node has).</summary>
    readonly Dictionary<long, HashSet<int>> _asked = new();
    /// <summary>The transactions whose coordinator this primary has taken over.</summary>
    readonly HashSet<long> _tookOver = new();
    /// <summary>The view this node last learned.</summary>
    ClusterView _view;
    /// <summary>Bit r: copy r is a replica in the configuration this primary knows.</summary>
    ulong _replicas;
    long _lastSeq;

    /// <param name="db">the copy it serves</param>
    /// <param name="takeover">the replica this primary takes over from, after recovery (ElectPrimary):
    /// its outcomes, its log's numbers and its prepared outer shares, whose locks it takes again (D3)</param>
    public ChillerPrimary(int node, int partition, Database db, HistoryRecorder history, ChillerCluster cluster, ChillerReplica? takeover = null)
    {
        var protocol = (LockingProtocol)ProtocolRegistry.Create("NoWait", ProtocolSetup.For(db, 1));
        Debug.Assert(protocol.RunsAcrossPartitions, $"partition {partition}: protocol {protocol.Name} does not run across partitions");
        _node = node;
        _partition = partition;
        _copy = takeover?.Copy ?? 0;
        _db = db;
        _protocol = protocol;
        History = history;
        _cluster = cluster;
        _abortsUnilaterally = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterAbortsUnilaterally);
        _releasesEarly = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterReleasesEarly);
        _waitsForRemoved = new MutantFlag(cluster.Options.Mutants, ChillerMutants.HostWaitsForRemovedReplica);
        _commitsOnSend = new MutantFlag(cluster.Options.Mutants, ChillerMutants.HostCommitsOnSend);
        _participantTakesOver = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterParticipantTakesOver);
        _view = cluster.Membership.Current;
        foreach (int copy in cluster.Membership.Current.ReplicasOf(partition)) _replicas |= 1UL << copy;
        if (takeover is not null) TakeOver(takeover);
    }

    public int Node => _node;
    public Database Database => _db;

    /// <summary>The transactions this primary committed itself (and recorded in its history).</summary>
    public IReadOnlySet<long> Recorded => _recorded;
    readonly HashSet<long> _recorded = new();

    /// <summary>Starts from a replica's state: what its log ended, its numbers, and every outer
    /// share it holds prepared, locked again with its step-3 writes in place (the locks the crashed
    /// primary held for it, D3). The copy has applied everything it holds, so no inner lock of the
    /// crashed host is left to keep (D4): this primary serves only from here.</summary>
    void TakeOver(ChillerReplica replica)
    {
        foreach (var (txn, committed) in replica.Outcomes) _outcomes[txn] = committed;
        foreach (var (txn, results) in replica.InnerCommitted) _innerCommitted[txn] = results;
        _lastSeq = replica.LastSeq;
        foreach (var entry in replica.Prepared)
        {
            var image = entry.Share!;
            var share = ShareOf(entry.Txn, image.Program, image.Host, image.Timestamp);
            var ctx = share.Context;
            image.Args.CopyTo(ctx.Args, 0);
            image.Results.CopyTo(ctx.Results, 0);
            for (int k = 0; k < image.Ops.Length; k++)
            {
                int op = image.Ops[k];
                // An insert is collected again; any other op locked again, its body not run again
                // (a step-3 body's write comes back from the image below).
                var step = ctx.Program.Ops[op].Mode == AccessMode.Insert
                    ? _protocol.TryOp(ctx, op, image.Keys[k], out _)
                    : _protocol.TryLockOp(ctx, op, image.Keys[k], out _);
                if (step != OpStep.Done)
                    throw new InvalidOperationException($"partition {_partition}: {ClusterTxnId.Describe(entry.Txn)}'s prepared op {ctx.Program.Ops[op].Name} could not be locked again on the copy that takes over");
                share.Locked |= RegionProgram.Bit(op);
                share.Keys[op] = image.Keys[k];
            }
            share.Deferred = image.Deferred;
            foreach (var row in image.Written)
            {
                if (row.Inserted) continue; // made again by the prepare below
                row.Payload.CopyTo(_db[row.Table].Payload(_db[row.Table].Find(row.Key)));
            }
            string? failure = null;
            if (!Prepare(ctx, ref failure).IsYes)
                throw new InvalidOperationException($"partition {_partition}: {ClusterTxnId.Describe(entry.Txn)}'s prepared inserts could not be claimed again on the copy that takes over{(failure is null ? "" : ": " + failure)}");
            share.Prepared = share.Shipped = true;
        }
    }

    public HistoryRecorder History { get; }

    /// <summary>Every attempt that ended here: true if it committed.</summary>
    public IReadOnlyDictionary<long, bool> Outcomes => _outcomes;

    /// <summary>Attempts holding anything here: none once every transaction has ended.</summary>
    public int Unfinished => _live.Count;

    /// <summary>The sequence number of the partition's last log entry.</summary>
    public long LastSeq => _lastSeq;

    public void Receive(object message)
    {
        switch (message)
        {
            case LockOuter m: OnLockOuter(m); break;
            case PrepareOuter m: OnPrepareOuter(m); break;
            case Delegate m: OnDelegate(m); break;
            case ReplicaAck m: OnReplicaAck(m); break;
            case OuterDecision m: OnOuterDecision(m); break;
            case AskOutcome m: OnAskOutcome(m); break;
            default: throw new InvalidOperationException($"partition {_partition}: its primary got {message.GetType().Name}");
        }
    }

    /// <summary>Step 3 here: lock the op's row without waiting; run the body unless it reads the inner region.</summary>
    void OnLockOuter(LockOuter m)
    {
        int coordinator = ClusterTxnId.NodeOf(m.Txn);
        if (_outcomes.TryGetValue(m.Txn, out bool committed))
        {
            // A doubled request of an attempt that ended here: a denial is answered again.
            if (!committed) Send(coordinator, new OuterLocked(m.Txn, _partition, m.Op, 0, AbortReason.LockBusy, null));
            return;
        }
        var share = ShareOf(m.Txn, m.Program, m.Host, m.Timestamp);
        if (share.Phase != Phase.Locking) return;
        var ctx = share.Context;
        if ((share.Locked & RegionProgram.Bit(m.Op)) != 0)
        {
            Send(coordinator, new OuterLocked(m.Txn, _partition, m.Op, ctx.Results[m.Op], AbortReason.None, null));
            return;
        }
        m.Args.CopyTo(ctx.Args, 0);
        m.Results.CopyTo(ctx.Results, 0);
        OpStep step;
        AbortReason reason;
        try
        {
            step = m.Deferred ? _protocol.TryLockOp(ctx, m.Op, m.Key, out reason) : _protocol.TryOp(ctx, m.Op, m.Key, out reason);
        }
        catch (Exception e)
        {
            End(share, commit: false);
            Send(coordinator, new OuterLocked(m.Txn, _partition, m.Op, 0, AbortReason.User, Describe(ctx, m.Op, e)));
            return;
        }
        Debug.Assert(step != OpStep.Wait, $"partition {_partition}: NO_WAIT asked to wait");
        if (step == OpStep.Refused)
        {
            End(share, commit: false);
            Send(coordinator, new OuterLocked(m.Txn, _partition, m.Op, 0, reason, null));
            _cluster.Trace(ChillerStep.CoordLockDenied, m.Txn, _partition, _node);
            // The twin: the attempts holding locks here are aborted too, whatever their inner region did.
            if (_abortsUnilaterally)
                foreach (var other in _live.Values.Where(s => s.Phase == Phase.Locking).ToList()) End(other, commit: false);
            return;
        }
        share.Locked |= RegionProgram.Bit(m.Op);
        if (m.Deferred) share.Deferred |= RegionProgram.Bit(m.Op);
        // The twin: the lock let go at once.
        if (_releasesEarly && ctx.Program.Ops[m.Op].Mode != AccessMode.Insert)
            _protocol.ReleaseForTwin(ctx, ctx.FindAccess(ctx.Program.Ops[m.Op].TableId, _db[ctx.Program.Ops[m.Op].TableId].Find(m.Key)));
        share.Keys[m.Op] = m.Key;
        Send(coordinator, new OuterLocked(m.Txn, _partition, m.Op, m.Deferred ? 0 : ctx.Results[m.Op], AbortReason.None, null));
        _cluster.Trace(ChillerStep.CoordLockOuter, m.Txn, _partition, _node, _cluster.Observed && !m.Deferred && ctx.Program.Ops[m.Op].Mode != AccessMode.Insert ? Reads(ctx, ctx.AccessCount - 1) : null);
    }

    /// <summary>The end of step 3 on an outer partition with inserts: claims their keys.</summary>
    void OnPrepareOuter(PrepareOuter m)
    {
        int coordinator = ClusterTxnId.NodeOf(m.Txn);
        if (_outcomes.TryGetValue(m.Txn, out bool committed))
        {
            if (!committed) Send(coordinator, new OuterPrepared(m.Txn, _partition, AbortReason.LockBusy, null));
            return;
        }
        if (!_live.TryGetValue(m.Txn, out var share))
            throw new InvalidOperationException($"partition {_partition}: prepare of {ClusterTxnId.Describe(m.Txn)}, which never locked anything here");
        if (share.Phase != Phase.Locking) return;
        if (!share.Prepared)
        {
            string? failure = null;
            var vote = Prepare(share.Context, ref failure);
            if (!vote.IsYes)
            {
                End(share, commit: false);
                Send(coordinator, new OuterPrepared(m.Txn, _partition, vote.Reason, failure));
                _cluster.Trace(ChillerStep.CoordLockDenied, m.Txn, _partition, _node);
                return;
            }
            share.Prepared = true;
            // D3: the share's locks and writes reach the replicas before the transaction is delegated.
            if (Ship(share, Phase.Preparing, EntryKind.OuterPrepared)) return;
        }
        Send(coordinator, new OuterPrepared(m.Txn, _partition, AbortReason.None, null));
    }

    /// <summary>Step 4 on the inner host: InnerExecute (lock, run, check, replicate) or InnerReject.</summary>
    void OnDelegate(Delegate m)
    {
        if (_outcomes.ContainsKey(m.Txn)) return; // a doubled delegation of an attempt decided here
        var share = ShareOf(m.Txn, m.Program, _partition, m.Timestamp);
        if (share.Phase != Phase.Locking) return; // a doubled delegation under way
        var ctx = share.Context;
        m.Args.CopyTo(ctx.Args, 0);
        m.Results.CopyTo(ctx.Results, 0);
        var (reason, failure) = ExecuteInner(share, m.Inner, m.HostDeferred);
        if (reason == AbortReason.None)
        {
            var vote = Prepare(ctx, ref failure);
            reason = vote.Reason;
        }
        int coordinator = ClusterTxnId.NodeOf(m.Txn);
        if (reason != AbortReason.None)
        {
            End(share, commit: false);
            Send(coordinator, new InnerAborted(m.Txn, _partition, reason, failure));
            _cluster.Trace(ChillerStep.InnerReject, m.Txn, _partition, _node);
            return;
        }
        share.InnerResults = ctx.Results.AsSpan(0, ctx.Program.Ops.Length).ToArray();
        bool shipped = Ship(share, Phase.Replicating, EntryKind.Inner);
        _cluster.Trace(ChillerStep.InnerExecute, m.Txn, _partition, _node, _cluster.Observed ? Reads(ctx, 0) : null);
        // The twin commits without waiting for a single acknowledgement.
        if ((!shipped || _commitsOnSend) && !_cluster.IsDown(_node)) InnerCommit(share);
    }

    (AbortReason, string?) ExecuteInner(Share share, ulong inner, ulong hostDeferred)
    {
        var ctx = share.Context;
        var program = ctx.Program;
        foreach (int i in program.Order)
        {
            bool isInner = (inner & RegionProgram.Bit(i)) != 0;
            if (!isInner && (hostDeferred & RegionProgram.Bit(i)) == 0) continue;
            var op = program.Ops[i];
            try
            {
                long key = isInner ? op.ResolveKey(ctx.Args, ctx.Results) : share.Keys[i];
                if (isInner && !_cluster.Lookup.Map.Replicates(op.TableId) && _cluster.Lookup.Map.PartitionOf(op.TableId, key) is var p && p != _partition)
                    return (AbortReason.User, $"program {program.Name}, op {op.Name}: its key {key} is on partition {p}, but the op runs in the inner region, whose host is partition {_partition} (an op keyed by an inner op's result must be placed with the inner host)");
                if (_protocol.TryOp(ctx, i, key, out var reason) != OpStep.Done) return (reason, null);
            }
            catch (Exception e)
            {
                return (AbortReason.User, Describe(ctx, i, e));
            }
        }
        return (AbortReason.None, null);
    }

    Vote Prepare(TxnContext ctx, ref string? failure)
    {
        try
        {
            return _protocol.PrepareParticipant(ctx);
        }
        catch (Exception e)
        {
            failure = $"program {ctx.Program.Name}, an insert's body on partition {_partition}: {e.GetType().Name}: {e.Message}";
            return new Vote(AbortReason.User);
        }
    }

    /// <summary>Sends the share's entry of kind <paramref name="kind"/> to every replica as the log's
    /// next, and waits for their acknowledgements in <paramref name="phase"/>; false when there is
    /// nothing to wait for (no replica, or an outer commit or release of a share whose prepared
    /// entry was never shipped and that wrote nothing).</summary>
    bool Ship(Share share, Phase phase, EntryKind kind)
    {
        var ctx = share.Context;
        var rows = kind is EntryKind.Inner or EntryKind.OuterCommit ? Rows(ctx) : [];
        if (_replicas == 0 || (kind is EntryKind.OuterCommit or EntryKind.OuterRelease && !share.Shipped && rows.Length == 0)) return false;
        var entry = new Replicate(ctx.TxnId, _partition, 0, 0, kind, rows,
                                  InnerResults: kind == EntryKind.Inner ? share.InnerResults : null,
                                  Share: kind == EntryKind.OuterPrepared ? Image(share) : null,
                                  Accesses: kind == EntryKind.Inner ? Accesses(ctx) : null, Program: ctx.Program.Name);
        share.Phase = phase;
        share.Seq = ++_lastSeq;
        share.Acked = 0;
        _cluster.LogEntries++;
        var copies = _cluster.Topology.CopiesOf(_partition);
        for (ulong r = _replicas; r != 0; r &= r - 1)
        {
            int copy = System.Numerics.BitOperations.TrailingZeroCount(r);
            _cluster.Send(_node, copies[copy], entry with { Copy = copy, Seq = share.Seq });
        }
        return true;
    }

    /// <summary>An outer share as its prepared entry keeps it (D3).</summary>
    ShareImage Image(Share share)
    {
        var ctx = share.Context;
        var ops = new List<int>();
        var keys = new List<long>();
        foreach (int i in ctx.Program.Order)
        {
            if ((share.Locked & RegionProgram.Bit(i)) == 0) continue;
            ops.Add(i);
            keys.Add(share.Keys[i]);
        }
        return new ShareImage(ctx.Program.Name, share.Host, ctx.Timestamp, ctx.Args.AsSpan(0, ctx.Program.ArgCount).ToArray(),
                              ctx.Results.AsSpan(0, ctx.Program.Ops.Length).ToArray(), ops.ToArray(), keys.ToArray(), share.Deferred, Rows(ctx));
    }

    /// <summary>For a trace: the rows the attempt accessed from access <paramref name="from"/> on, with
    /// the versions they had when it locked them.</summary>
    ChillerRead[] Reads(TxnContext ctx, int from)
    {
        var reads = new ChillerRead[Math.Max(0, ctx.AccessCount - from)];
        for (int i = from; i < ctx.AccessCount; i++)
            reads[i - from] = new ChillerRead(ctx.AccTable[i], _db[ctx.AccTable[i]].Key(ctx.AccRow[i]), ctx.AccVersion[i]);
        return reads;
    }

    /// <summary>The history's accesses of an inner region, for a copy that commits it in recovery.</summary>
    Access[] Accesses(TxnContext ctx)
    {
        var accesses = new Access[ctx.AccessCount + ctx.InsertCount];
        for (int i = 0; i < ctx.AccessCount; i++)
            accesses[i] = new Access(HistoryRecorder.RowKey(ctx.AccTable[i], ctx.AccRow[i]), ctx.AccVersion[i], _protocol.Wrote(ctx, i));
        for (int i = 0; i < ctx.InsertCount; i++)
            accesses[ctx.AccessCount + i] = new Access(HistoryRecorder.RowKey(ctx.Program.Ops[ctx.InsOp[i]].TableId, ctx.InsRow[i]), HistoryRecorder.NewRow, true);
        return accesses;
    }

    void OnReplicaAck(ReplicaAck m)
    {
        if (!_live.TryGetValue(m.Txn, out var share) || share.Seq != m.Seq) return;
        if (share.Phase is not (Phase.Replicating or Phase.Committing or Phase.Preparing or Phase.Releasing)) return;
        share.Acked |= 1UL << m.Copy;
        CommitIfAcked(share);
    }

    /// <summary>Commits the share once every replica in the configuration has acknowledged its entry.</summary>
    void CommitIfAcked(Share share)
    {
        if ((_replicas & ~share.Acked) != 0) return;
        switch (share.Phase)
        {
            case Phase.Replicating: InnerCommit(share); break;
            case Phase.Committing: FinishOuterCommit(share); break;
            case Phase.Releasing: FinishRelease(share); break;
            case Phase.Preparing:
                share.Phase = Phase.Locking;
                share.Shipped = true;
                Send(ClusterTxnId.NodeOf(share.Context.TxnId), new OuterPrepared(share.Context.TxnId, _partition, AbortReason.None, null));
                AskForOrphans();
                break;
        }
    }

    /// <summary>A new view: the replicas that serve now. A host no longer waits for a removed
    /// replica's acknowledgement (RecoverReplica); left with none, it tells the coordinators of what
    /// it has committed itself (D6), since a removed replica may have died before it notified.</summary>
    public void OnView(ClusterView view)
    {
        _view = view;
        ulong replicas = 0;
        foreach (int copy in view.ReplicasOf(_partition)) replicas |= 1UL << copy;
        // The twin: the host keeps waiting for replicas the configuration has dropped.
        if (_waitsForRemoved) replicas |= _replicas;
        bool lastGone = _replicas != 0 && replicas == 0;
        _replicas = replicas;
        foreach (var share in _live.Values.Where(s => s.Phase is Phase.Replicating or Phase.Committing or Phase.Preparing or Phase.Releasing).OrderBy(s => s.Seq).ToList())
            CommitIfAcked(share);
        if (lastGone)
            foreach (var (txn, results) in _innerCommitted)
                Send(ClusterTxnId.NodeOf(txn), new InnerNotify(txn, _partition, _copy, results));
        foreach (var (txn, askers) in _asked.ToList())
            if (view.CutOff.Contains(ClusterTxnId.NodeOf(txn)))
                foreach (int asker in askers.ToList()) Answer(txn, asker);
        AskForOrphans();
    }

    /// <summary>
    /// The shares here waiting for the outcome of a transaction whose coordinator this node's view
    /// has cut off: each asks the primary of its inner region's partition (again, when that
    /// partition has elected another), which takes the coordinator over (D7). A partition that is
    /// recovering is asked once it has a primary. A share waiting for its own log's acknowledgements
    /// asks once they are in.
    /// </summary>
    /// <remarks>Decision: the outcome is pulled by the participants rather than pushed by the new
    /// coordinator. Section 5.2 aggregates each partition's pending transactions, with their outer
    /// participants, at a designated node; here each partition that holds a share sends its own
    /// entry of that list to the one node that can decide it, so no node needs another's list, and
    /// a participant that itself fails over asks again from the copy that takes over.</remarks>
    void AskForOrphans()
    {
        foreach (var share in _live.Values.Where(s => s.Phase == Phase.Locking && _view.CutOff.Contains(ClusterTxnId.NodeOf(s.Context.TxnId))).ToList())
        {
            long txn = share.Context.TxnId;
            if (_participantTakesOver)
            {
                // The twin: the participant decides alone, and aborts what the host may have committed.
                if (!Ship(share, Phase.Releasing, EntryKind.OuterRelease)) FinishRelease(share);
                continue;
            }
            int copy = _view.PrimaryCopy(share.Host);
            if (copy < 0 || copy == share.AskedCopy) continue;
            share.AskedCopy = copy;
            if (share.Host == _partition) Answer(txn, _partition);
            else Send(_cluster.Topology.CopiesOf(share.Host)[copy], new AskOutcome(txn, share.Host, _partition));
        }
    }

    void OnAskOutcome(AskOutcome m)
    {
        if (!_asked.TryGetValue(m.Txn, out var askers)) _asked[m.Txn] = askers = new HashSet<int>();
        askers.Add(m.Asker);
        Answer(m.Txn, m.Asker);
    }

    /// <summary>
    /// RecoverCoordinator: as the node Section 5.2 names (the inner host, or the copy that took
    /// over from it), answers a share's question from what this copy's own log knows. The inner
    /// region committed here: commit, with the results the deferred bodies read. Rejected here,
    /// or never received: abort; a delegation can no longer come, since the coordinator's channels
    /// are closed, so the transaction is ended here as aborted first (with this partition's own
    /// share, if it has one). Replicating: the answer waits for the inner commit. And nothing is
    /// decided before this node's own view has the coordinator cut off.
    /// </summary>
    void Answer(long txn, int asker)
    {
        bool committed;
        if (_live.TryGetValue(txn, out var share) && share.Phase == Phase.Replicating) return;
        if (_innerCommitted.ContainsKey(txn)) committed = true;
        else if (!_view.CutOff.Contains(ClusterTxnId.NodeOf(txn))) return;
        else
        {
            committed = false;
            if (share is { Phase: Phase.Locking })
            {
                if (!Ship(share, Phase.Releasing, EntryKind.OuterRelease)) FinishRelease(share);
            }
            else if (share is null) _outcomes.TryAdd(txn, false);
        }
        if (_tookOver.Add(txn))
        {
            _cluster.DecidedBySuccessor(txn, committed, _node);
            _cluster.Trace(ChillerStep.RecoverCoordinator, txn, _partition, _node);
        }
        if (_cluster.IsDown(_node)) return;
        if (_asked.TryGetValue(txn, out var askers))
        {
            askers.Remove(asker);
            if (askers.Count == 0) _asked.Remove(txn);
        }
        if (asker == _partition) return; // this partition's own share has ended with the answer
        int copy = _view.PrimaryCopy(asker);
        // A partition recovering asks again from the copy it elects.
        if (copy >= 0)
            Send(_cluster.Topology.CopiesOf(asker)[copy], new OuterDecision(txn, asker, committed, committed ? _innerCommitted[txn] : []));
    }

    /// <summary>InnerCommit: every replica holds the entry; install, release the inner locks. The
    /// replicas notify the coordinator as they apply (D6); with none, the host does.</summary>
    void InnerCommit(Share share)
    {
        long txn = share.Context.TxnId;
        var results = share.InnerResults!;
        _cluster.InnerCommits++;
        _innerCommitted[txn] = results;
        End(share, commit: true);
        if (_replicas == 0)
            Send(ClusterTxnId.NodeOf(txn), new InnerNotify(txn, _partition, _copy, results));
        _cluster.Trace(ChillerStep.InnerCommit, txn, _partition, _node);
        if (_asked.TryGetValue(txn, out var askers) && !_cluster.IsDown(_node))
            foreach (int asker in askers.ToList()) Answer(txn, asker);
    }

    /// <summary>Step 5 here: OuterCommit (run the deferred bodies with the inner region's results,
    /// ship the writes, commit) or OuterRelease.</summary>
    void OnOuterDecision(OuterDecision m)
    {
        int coordinator = ClusterTxnId.NodeOf(m.Txn);
        if (_outcomes.ContainsKey(m.Txn))
        {
            // Answered from the log; an outcome other than the decision is the atomicity check's to report.
            Send(coordinator, new OuterDone(m.Txn, _partition));
            return;
        }
        if (!_live.TryGetValue(m.Txn, out var share))
        {
            if (m.Commit) throw new InvalidOperationException($"partition {_partition}: commit of {ClusterTxnId.Describe(m.Txn)}, which never locked anything here");
            _outcomes[m.Txn] = false;
            Send(coordinator, new OuterDone(m.Txn, _partition));
            return;
        }
        if (share.Phase != Phase.Locking) return; // a doubled decision, its commit under way
        if (!m.Commit)
        {
            // A prepared share's release goes through the log, so that no copy taking over locks it again.
            if (!Ship(share, Phase.Releasing, EntryKind.OuterRelease)) FinishRelease(share);
            return;
        }
        RunDeferred(share, m.Results);
        if (!Ship(share, Phase.Committing, EntryKind.OuterCommit)) FinishOuterCommit(share);
    }

    void FinishRelease(Share share)
    {
        long txn = share.Context.TxnId;
        End(share, commit: false);
        Send(ClusterTxnId.NodeOf(txn), new OuterDone(txn, _partition));
        _cluster.Trace(ChillerStep.OuterRelease, txn, _partition, _node);
    }

    /// <summary>The deferred bodies, on the rows locked in step 3. The transaction is committed, so
    /// a body that throws (a bug: the builder has made sure none aborts) loses its own write, not
    /// the others', and the run's failures name it.</summary>
    void RunDeferred(Share share, long[] results)
    {
        var ctx = share.Context;
        results.CopyTo(ctx.Results, 0);
        foreach (int i in ctx.Program.Order)
        {
            if ((share.Locked & RegionProgram.Bit(i)) == 0 || (share.Deferred & RegionProgram.Bit(i)) == 0) continue;
            _cluster.DeferredBodies++;
            try
            {
                var step = _protocol.TryOp(ctx, i, share.Keys[i], out _);
                Debug.Assert(step == OpStep.Done, $"partition {_partition}: a deferred op's held row was not granted again");
            }
            catch (Exception e)
            {
                var op = ctx.Program.Ops[i];
                int row = _db[op.TableId].Find(share.Keys[i]);
                _protocol.UndoWrite(ctx, ctx.FindAccess(op.TableId, row));
                _cluster.Failures.Add($"{ClusterTxnId.Describe(ctx.TxnId)}: {Describe(ctx, i, e)}; the transaction had committed at its inner host, so it commits without this op's write");
            }
        }
    }

    void FinishOuterCommit(Share share)
    {
        long txn = share.Context.TxnId;
        End(share, commit: true);
        Send(ClusterTxnId.NodeOf(txn), new OuterDone(txn, _partition));
        _cluster.Trace(ChillerStep.OuterCommit, txn, _partition, _node);
    }

    /// <param name="host">the partition of the transaction's inner region</param>
    Share ShareOf(long txn, string program, int host, long timestamp)
    {
        if (_live.TryGetValue(txn, out var share)) return share;
        share = _free.Count > 0 ? _free.Pop() : new Share(new TxnContext(0, History));
        share.Context.BeginParticipantAttempt(_cluster.Program(program).Program, txn, timestamp);
        share.Phase = Phase.Locking;
        share.Locked = share.Deferred = 0;
        share.Prepared = share.Shipped = false;
        share.InnerResults = null;
        share.Seq = 0;
        share.Host = host;
        share.AskedCopy = -1;
        _live.Add(txn, share);
        return share;
    }

    /// <summary>The after-images of every row the attempt wrote, and its new rows.</summary>
    RowImage[] Rows(TxnContext ctx)
    {
        var rows = new List<RowImage>();
        var db = _db;
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (!_protocol.Wrote(ctx, i)) continue;
            var table = db[ctx.AccTable[i]];
            rows.Add(new RowImage(table.Id, table.Key(ctx.AccRow[i]), false, table.Payload(ctx.AccRow[i]).ToArray()));
        }
        for (int i = 0; i < ctx.InsertCount; i++)
        {
            var table = db[ctx.Program.Ops[ctx.InsOp[i]].TableId];
            rows.Add(new RowImage(table.Id, ctx.InsKey[i], true, table.Payload(ctx.InsRow[i]).ToArray()));
        }
        return rows.ToArray();
    }

    void End(Share share, bool commit)
    {
        var ctx = share.Context;
        if (commit)
        {
            _protocol.CommitParticipant(ctx);
            _recorded.Add(ctx.TxnId);
        }
        else _protocol.AbortParticipant(ctx);
        _outcomes[ctx.TxnId] = commit;
        _live.Remove(ctx.TxnId);
        share.Phase = Phase.Ended;
        _free.Push(share);
    }

    string Describe(TxnContext ctx, int op, Exception e) =>
        $"program {ctx.Program.Name}, op {ctx.Program.Ops[op].Name} on partition {_partition}: {e.GetType().Name}: {e.Message}";

    void Send(int to, object message) => _cluster.Send(_node, to, message);

    /// <summary>A share's phase: locking (step 3, and prepared), waiting for the acks of its
    /// prepared entry, of its inner region's entry, of its outer commit's or of its release's, or ended.</summary>
    enum Phase : byte { Locking, Preparing, Replicating, Committing, Releasing, Ended }

    /// <summary>A transaction attempt's share on this partition, its context reused by later ones.</summary>
    sealed class Share(TxnContext context)
    {
        public readonly TxnContext Context = context;
        public readonly long[] Keys = new long[TxnContext.MaxOps];
        public Phase Phase;
        /// <summary>Bit i: op i's row is locked here.</summary>
        public ulong Locked;
        /// <summary>Bit i: op i's body waits for the inner region's results.</summary>
        public ulong Deferred;
        /// <summary>An outer partition's inserts have claimed their keys (and, with replicas, its
        /// prepared entry is on its way: <see cref="Shipped"/> once every replica has it).</summary>
        public bool Prepared;
        public bool Shipped;
        public long[]? InnerResults;
        /// <summary>The partition of the transaction's inner region.</summary>
        public int Host;
        /// <summary>The copy of <see cref="Host"/> last asked for the outcome, or -1 (<see cref="AskOutcome"/>).</summary>
        public int AskedCopy;
        public long Seq;
        /// <summary>Bit r: copy r acknowledged <see cref="Seq"/>.</summary>
        public ulong Acked;
    }
}
