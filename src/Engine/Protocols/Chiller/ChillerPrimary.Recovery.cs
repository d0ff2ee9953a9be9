using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

// A primary in a recovery: taking over from a replica, learning views, and answering for a crashed coordinator.
internal sealed partial class ChillerPrimary
{
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
}
