using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Strife;

/// <summary>
/// The conflict-free phase (StrifeExec.tla ClusterOp): a clustered transaction touches rows
/// no other cluster touches, and its own cluster runs one transaction at a time, so it runs
/// with no concurrency control at all: no lock word is read or written. It keeps the
/// before-image of each row it writes only so that its own logic can abort it.
/// </summary>
internal sealed class Unlocked(ProtocolSetup setup) : LockingProtocol(setup)
{
    public override string Name => "Strife/cluster";

    protected override bool Lock(TxnContext ctx, Table table, int access, bool exclusive, out AbortReason reason)
    {
        reason = AbortReason.None;
        return true; // the mode stays None, so the release of LockingProtocol touches nothing
    }
}

/// <summary>
/// The residual phase (StrifeExec.tla ResidualOp with CC = "nowaitThenWaitDie"): 2PL that
/// aborts at the first held lock for a transaction's first <c>maxNoWait</c> conflict aborts
/// (the paper's NO_WAIT), and waits-or-dies by age after. NO_WAIT with retry alone can
/// livelock (StrifeExecTermination); WaitDie after a bounded number of NO_WAIT aborts cannot
/// (StrifeExecRetryThenWaitDie): waits only go from older to younger, and the NO_WAIT aborts
/// of each transaction are bounded.
/// </summary>
internal sealed class NoWaitThenWaitDie(ProtocolSetup setup, int maxNoWait) : LockingProtocol(setup)
{
    readonly bool _abortKeepsLocks = setup.Mutants.HasFlag(Mutants.StrifeAbortKeepsLocks);

    public override string Name => "Strife/residual";

    protected override bool Lock(TxnContext ctx, Table table, int access, bool exclusive, out AbortReason reason) =>
        LockOrDie(ctx, table, access, exclusive, noWait: ctx.ConflictRetries < maxNoWait, dieWhenYounger: true, out reason);

    protected override void Abort(TxnContext ctx)
    {
        if (_abortKeepsLocks) RestoreImages(ctx); // the twin: the locks stay, held by no attempt
        else base.Abort(ctx);
    }
}
