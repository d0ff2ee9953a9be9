using Contend.Engine.Runtime;

namespace Contend.Engine.History;

/// <summary>What a committed transaction did to one row.</summary>
/// <param name="Row">table id in the high 24 bits, row in the low 40</param>
/// <param name="Version">for a read, the version seen; for a write, the version it overwrote
/// (<see cref="HistoryRecorder.NewRow"/> for an insert)</param>
/// <param name="IsWrite">true for a write or an insert</param>
public readonly record struct Access(long Row, long Version, bool IsWrite);

/// <summary>One committed transaction of a recorded history (<see cref="Runtime.ContendEngine.History"/>).</summary>
/// <param name="Id">its id: a version its writes installed carries it</param>
/// <param name="TxnProgram">its program's name</param>
/// <param name="Accesses">every row it read or wrote, in no particular order</param>
public sealed record CommittedTxn(long Id, string TxnProgram, Access[] Accesses);

/// <summary>
/// Records, per worker, each committed transaction's reads (which version it saw) and
/// writes (which version it overwrote; the version it installs is its own id). Turned on
/// per run; when off, protocols skip it with one null check per commit.
/// </summary>
internal sealed class HistoryRecorder
{
    public const long NewRow = -1;

    readonly List<CommittedTxn>[] _perWorker;

    public HistoryRecorder(int workers)
    {
        _perWorker = new List<CommittedTxn>[workers];
        for (int i = 0; i < workers; i++) _perWorker[i] = new List<CommittedTxn>();
    }

    public static long RowKey(int table, int row) => ((long)table << 40) | (uint)row;

    /// <summary>A row key of one partition, made unique in the cluster: partition + 1 in bits 56-62
    /// (a single node's keys have 0 there).</summary>
    public static long PartitionRowKey(int partition, long rowKey) => ((long)(partition + 1) << 56) | rowKey;

    /// <summary>Called by the committing worker, from the context's access set: every access
    /// with a version read or a write installed.</summary>
    public void Commit(TxnContext ctx, List<Access> accesses) =>
        _perWorker[ctx.Worker].Add(new CommittedTxn(ctx.TxnId, ctx.Program.Name, accesses.ToArray()));

    /// <summary>Records a transaction committed from a log entry rather than by a worker (a
    /// promoted copy's recovery commit), with the accesses the entry carries.</summary>
    public void Add(CommittedTxn txn) => _perWorker[0].Add(txn);

    /// <summary>All committed transactions; call only once the workers have stopped.</summary>
    public List<CommittedTxn> Collect() => _perWorker.SelectMany(l => l).ToList();
}
