using Contend.Engine.Cluster;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// One replica copy of a partition (Section 5.1): acknowledges each log entry as it receives it
/// (ReplicaReceive), applies the entries in sequence order (ReplicaApply), and after applying an
/// inner region tells the transaction's coordinator, with the inner region's results (D6).
/// </summary>
internal sealed class ChillerReplica(int node, int partition, int copy, Database db, ChillerCluster cluster)
{
    readonly SortedDictionary<long, Replicate> _held = new();
    long _applied;

    public Database Database { get; } = db;

    /// <summary>The sequence number of the last entry applied: entries apply 1, 2, ... with no gap.</summary>
    public long Applied => _applied;

    /// <summary>Entries received and not applied yet, waiting for an earlier one.</summary>
    public int Held => _held.Count;

    public void Receive(int from, object message)
    {
        if (message is not Replicate m || m.Partition != partition || m.Copy != copy)
            throw new InvalidOperationException($"partition {partition}, copy {copy}: a replica got {message.GetType().Name}");
        // Acknowledged on receipt, a doubled copy again (the primary ignores a second ack).
        cluster.Transport.Send(new Envelope(node, from, new ReplicaAck(m.Txn, partition, copy, m.Seq)));
        if (m.Seq <= _applied || !_held.TryAdd(m.Seq, m)) return;
        cluster.Trace(ChillerStep.ReplicaReceive, m.Txn, partition, node);
        while (!cluster.IsDown(node) && _held.Remove(_applied + 1, out var next))
        {
            _applied++;
            Apply(next);
        }
    }

    void Apply(Replicate m)
    {
        foreach (var image in m.Rows)
        {
            var table = Database[image.Table];
            int row = image.Inserted ? table.Load(image.Key) : table.Find(image.Key);
            if (row < 0) throw new InvalidOperationException($"partition {partition}, copy {copy}: entry {m.Seq} of {ClusterTxnId.Describe(m.Txn)} writes table {table.Name} key {image.Key}, which this copy lacks");
            image.Payload.CopyTo(table.Payload(row));
            Volatile.Write(ref table.Version(row), m.Txn);
        }
        if (m.InnerResults is { } results)
            cluster.Transport.Send(new Envelope(node, ClusterTxnId.NodeOf(m.Txn), new InnerNotify(m.Txn, partition, copy, results)));
        cluster.Trace(ChillerStep.ReplicaApply, m.Txn, partition, node);
    }
}
