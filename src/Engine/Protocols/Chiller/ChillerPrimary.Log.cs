using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

// A primary's one log: every change it commits shipped to the partition's replicas in sequence order.
internal sealed partial class ChillerPrimary
{
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
}
