using System.Diagnostics;
using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

// A primary as an outer participant: step 3's locks and prepares, and step 5's decision.
internal sealed partial class ChillerPrimary
{
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
}
