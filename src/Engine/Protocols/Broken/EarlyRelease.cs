using Contend.Engine.Locks;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Broken;

/// <summary>
/// NOT a correct protocol: the history checker's positive control (../../shared/DESIGN.md).
/// Locks like NoWait but releases each row right after its op, installing the write's
/// version then, so other transactions interleave between its ops: the checker must find
/// cycles in its histories. Not in ProtocolRegistry.Names: only the demo and the tests run
/// it, by its own name, as the control.
/// </summary>
internal sealed class EarlyRelease(ProtocolSetup setup) : LockingProtocol(setup)
{
    internal static readonly ProtocolDescriptor Descriptor = new("BrokenEarlyRelease",
        "NOT serializable: 2PL that releases each lock right after its op (the checker's control)",
        ProtocolKind.PerTransaction, null, s => new EarlyRelease(s), serializable: false);

    public override string Name => Descriptor.Name;

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason)
    {
        var result = TryLockWord(ctx, state, table, access, exclusive, out _);
        reason = result == LockResult.Acquired ? AbortReason.None : AbortReason.LockBusy;
        return result == LockResult.Acquired;
    }

    protected override void AfterOp(TxnContext ctx, Table table, int access)
    {
        var state = State(ctx);
        if (state.Image[access] >= 0) Volatile.Write(ref table.Version(ctx.AccessRow[access]), ctx.TxnId);
        Unlock(ctx, state, table, access);
    }
}
