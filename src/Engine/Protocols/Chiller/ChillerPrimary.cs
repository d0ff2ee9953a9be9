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
    readonly LockingProtocol _protocol;
    readonly ChillerCluster _cluster;
    readonly Dictionary<long, Share> _live = new();
    readonly Stack<Share> _free = new();
    readonly Dictionary<long, bool> _outcomes = new();
    readonly MutantFlag _abortsUnilaterally, _releasesEarly, _waitsForRemoved;
    /// <summary>Every inner region committed here, with its results: what a host left with no
    /// replica notifies again. Kept for the run, as the outcome log is.</summary>
    readonly List<(long Txn, long[] Results)> _innerCommitted = new();
    /// <summary>Bit r: copy r is a replica in the configuration this primary knows.</summary>
    ulong _replicas;
    long _lastSeq;

    public ChillerPrimary(int node, int partition, LockingProtocol protocol, HistoryRecorder history, ChillerCluster cluster)
    {
        Debug.Assert(protocol.RunsAcrossPartitions, $"partition {partition}: protocol {protocol.Name} does not run across partitions");
        _node = node;
        _partition = partition;
        _protocol = protocol;
        History = history;
        _cluster = cluster;
        _abortsUnilaterally = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterAbortsUnilaterally);
        _releasesEarly = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterReleasesEarly);
        _waitsForRemoved = new MutantFlag(cluster.Options.Mutants, ChillerMutants.HostWaitsForRemovedReplica);
        foreach (int copy in cluster.Membership.Current.ReplicasOf(partition)) _replicas |= 1UL << copy;
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
        var share = ShareOf(m.Txn, m.Program, m.Timestamp);
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
            _protocol.ReleaseForTwin(ctx, ctx.FindAccess(ctx.Program.Ops[m.Op].TableId, _cluster.Databases[_partition][ctx.Program.Ops[m.Op].TableId].Find(m.Key)));
        share.Keys[m.Op] = m.Key;
        Send(coordinator, new OuterLocked(m.Txn, _partition, m.Op, m.Deferred ? 0 : ctx.Results[m.Op], AbortReason.None, null));
        _cluster.Trace(ChillerStep.CoordLockOuter, m.Txn, _partition, _node);
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
        }
        Send(coordinator, new OuterPrepared(m.Txn, _partition, AbortReason.None, null));
    }

    /// <summary>Step 4 on the inner host: InnerExecute (lock, run, check, replicate) or InnerReject.</summary>
    void OnDelegate(Delegate m)
    {
        if (_outcomes.ContainsKey(m.Txn)) return; // a doubled delegation of an attempt decided here
        var share = ShareOf(m.Txn, m.Program, m.Timestamp);
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
        bool shipped = ShipLog(share, Phase.Replicating, share.InnerResults);
        _cluster.Trace(ChillerStep.InnerExecute, m.Txn, _partition, _node);
        if (!shipped && !_cluster.IsDown(_node)) InnerCommit(share);
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

    /// <summary>Sends the share's writes to every replica as the log's next entry, and waits for
    /// their acknowledgements in <paramref name="phase"/>; false when there is nothing to wait for
    /// (no replica, or, for an outer commit, nothing written).</summary>
    bool ShipLog(Share share, Phase phase, long[]? innerResults)
    {
        var rows = Rows(share.Context);
        if (_replicas == 0 || (rows.Length == 0 && innerResults is null)) return false;
        share.Phase = phase;
        share.Seq = ++_lastSeq;
        share.Acked = 0;
        _cluster.LogEntries++;
        var copies = _cluster.Topology.CopiesOf(_partition);
        for (ulong r = _replicas; r != 0; r &= r - 1)
        {
            int copy = System.Numerics.BitOperations.TrailingZeroCount(r);
            _cluster.Transport.Send(new Envelope(_node, copies[copy], new Replicate(share.Context.TxnId, _partition, copy, share.Seq, rows, innerResults)));
        }
        return true;
    }

    void OnReplicaAck(ReplicaAck m)
    {
        if (!_live.TryGetValue(m.Txn, out var share) || share.Seq != m.Seq) return;
        if (share.Phase is not (Phase.Replicating or Phase.Committing)) return;
        share.Acked |= 1UL << m.Copy;
        CommitIfAcked(share);
    }

    /// <summary>Commits the share once every replica in the configuration has acknowledged its entry.</summary>
    void CommitIfAcked(Share share)
    {
        if ((_replicas & ~share.Acked) != 0) return;
        if (share.Phase == Phase.Replicating) InnerCommit(share);
        else FinishOuterCommit(share);
    }

    /// <summary>A new view: the replicas that serve now. A host no longer waits for a removed
    /// replica's acknowledgement (RecoverReplica); left with none, it tells the coordinators of what
    /// it has committed itself (D6), since a removed replica may have died before it notified.</summary>
    public void OnView(ClusterView view)
    {
        ulong replicas = 0;
        foreach (int copy in view.ReplicasOf(_partition)) replicas |= 1UL << copy;
        // The twin: the host keeps waiting for replicas the configuration has dropped.
        if (_waitsForRemoved) replicas |= _replicas;
        bool lastGone = _replicas != 0 && replicas == 0;
        _replicas = replicas;
        foreach (var share in _live.Values.Where(s => s.Phase is Phase.Replicating or Phase.Committing).OrderBy(s => s.Seq).ToList())
            CommitIfAcked(share);
        if (lastGone)
            foreach (var (txn, results) in _innerCommitted)
                Send(ClusterTxnId.NodeOf(txn), new InnerNotify(txn, _partition, 0, results));
    }

    /// <summary>InnerCommit: every replica holds the entry; install, release the inner locks. The
    /// replicas notify the coordinator as they apply (D6); with none, the host does.</summary>
    void InnerCommit(Share share)
    {
        long txn = share.Context.TxnId;
        var results = share.InnerResults!;
        _cluster.InnerCommits++;
        _innerCommitted.Add((txn, results));
        End(share, commit: true);
        if (_replicas == 0)
            Send(ClusterTxnId.NodeOf(txn), new InnerNotify(txn, _partition, 0, results));
        _cluster.Trace(ChillerStep.InnerCommit, txn, _partition, _node);
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
            End(share, commit: false);
            Send(coordinator, new OuterDone(m.Txn, _partition));
            _cluster.Trace(ChillerStep.OuterRelease, m.Txn, _partition, _node);
            return;
        }
        RunDeferred(share, m.Results);
        if (!ShipLog(share, Phase.Committing, null)) FinishOuterCommit(share);
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
                int row = _cluster.Databases[_partition][op.TableId].Find(share.Keys[i]);
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

    Share ShareOf(long txn, string program, long timestamp)
    {
        if (_live.TryGetValue(txn, out var share)) return share;
        share = _free.Count > 0 ? _free.Pop() : new Share(new TxnContext(0, History));
        share.Context.BeginParticipantAttempt(_cluster.Program(program).Program, txn, timestamp);
        share.Phase = Phase.Locking;
        share.Locked = share.Deferred = 0;
        share.Prepared = false;
        share.InnerResults = null;
        share.Seq = 0;
        _live.Add(txn, share);
        return share;
    }

    /// <summary>The after-images of every row the attempt wrote, and its new rows.</summary>
    RowImage[] Rows(TxnContext ctx)
    {
        var rows = new List<RowImage>();
        var db = _cluster.Databases[_partition];
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
        if (commit) _protocol.CommitParticipant(ctx);
        else _protocol.AbortParticipant(ctx);
        _outcomes[ctx.TxnId] = commit;
        _live.Remove(ctx.TxnId);
        share.Phase = Phase.Ended;
        _free.Push(share);
    }

    string Describe(TxnContext ctx, int op, Exception e) =>
        $"program {ctx.Program.Name}, op {ctx.Program.Ops[op].Name} on partition {_partition}: {e.GetType().Name}: {e.Message}";

    void Send(int to, object message) => _cluster.Transport.Send(new Envelope(_node, to, message));

    enum Phase : byte { Locking, Replicating, Committing, Ended }

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
        /// <summary>An outer partition's inserts have claimed their keys.</summary>
        public bool Prepared;
        public long[]? InnerResults;
        public long Seq;
        /// <summary>Bit r: copy r acknowledged <see cref="Seq"/>.</summary>
        public ulong Acked;
    }
}
