using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.Chiller;

// A primary as the inner host: step 4's inner region, committed once every replica has acknowledged it.
internal sealed partial class ChillerPrimary
{
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
}
