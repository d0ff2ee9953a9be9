namespace Contend.Engine.Cluster;

/// <summary>
/// Which nodes hold which partitions. A partition has <see cref="Replicas"/> copies on
/// distinct nodes; the first is its primary, where transactions run its ops (two-phase
/// commit uses the primaries alone; Chiller replicates its inner region to the others).
/// </summary>
/// <remarks>
/// Placement is round robin, partition p's copies on nodes p, p + 1, ... (mod nodes), so
/// every node holds the same share when the partitions are a multiple of the nodes, and no
/// two copies of a partition share a node. With <c>replicasApart</c>, copy r of partition p is
/// on node r * partitions + p instead: the primaries on nodes 0..partitions-1 and every replica
/// on a node of its own, so that a replica can fail without taking a primary or a coordinator
/// with it. A node id is 8 bits of every transaction id (<see cref="ClusterTxnId"/>), hence the limit.
/// </remarks>
internal sealed class ClusterTopology
{
    public const int MaxNodes = 256;
    /// <summary>A partition's number is 7 bits of a merged history's row key (<see cref="History.HistoryRecorder.PartitionRowKey"/>).</summary>
    public const int MaxPartitions = 127;

    readonly int[][] _copies;
    readonly int[][] _primaries;

    public int Nodes { get; }
    public int Partitions { get; }
    public int Replicas { get; }

    public ClusterTopology(int nodes, int partitions, int replicas = 1, bool replicasApart = false)
    {
        if (nodes is < 1 or > MaxNodes) throw new ArgumentOutOfRangeException(nameof(nodes), $"topology: {nodes} nodes, must be 1..{MaxNodes}");
        if (partitions is < 1 or > MaxPartitions) throw new ArgumentOutOfRangeException(nameof(partitions), $"topology: {partitions} partitions, must be 1..{MaxPartitions}");
        if (replicas < 1 || replicas > nodes) throw new ArgumentOutOfRangeException(nameof(replicas), $"topology: {replicas} copies of each partition on {nodes} nodes, must be 1..{nodes} (no two copies on one node)");
        if (replicasApart && nodes < partitions * replicas)
            throw new ArgumentOutOfRangeException(nameof(nodes), $"topology: {partitions} partitions of {replicas} copies each on nodes of their own need {partitions * replicas} nodes, not {nodes}");
        Nodes = nodes;
        Partitions = partitions;
        Replicas = replicas;
        _copies = new int[partitions][];
        for (int p = 0; p < partitions; p++)
        {
            _copies[p] = new int[replicas];
            for (int r = 0; r < replicas; r++) _copies[p][r] = replicasApart ? r * partitions + p : (p + r) % nodes;
        }
        _primaries = new int[nodes][];
        for (int n = 0; n < nodes; n++)
            _primaries[n] = Enumerable.Range(0, partitions).Where(p => _copies[p][0] == n).ToArray();
    }

    /// <summary>The node where partition <paramref name="partition"/>'s ops run.</summary>
    public int PrimaryOf(int partition) => _copies[partition][0];

    /// <summary>The nodes holding a copy of the partition, its primary first.</summary>
    public ReadOnlySpan<int> CopiesOf(int partition) => _copies[partition];

    /// <summary>The partitions whose primary is <paramref name="node"/>, ascending.</summary>
    public ReadOnlySpan<int> PrimariesOn(int node) => _primaries[node];

    /// <summary>Every (partition, copy) held by <paramref name="node"/>.</summary>
    public IEnumerable<(int Partition, int Copy)> CopiesOn(int node)
    {
        for (int p = 0; p < Partitions; p++)
            for (int r = 0; r < Replicas; r++)
                if (_copies[p][r] == node) yield return (p, r);
    }

    public override string ToString() => $"{Nodes} nodes, {Partitions} partitions, {Replicas} cop{(Replicas == 1 ? "y" : "ies")} each";
}

/// <summary>
/// A transaction id that names where it started:
/// <code>
///   63   62 ........................... 16   15 ........ 8   7 ......... 0
///  [ 0 ][ attempt, counted per coordinator ][ node, 8 b     ][ slot, 8 b   ]
/// </code>
/// Unique in the cluster without any shared counter, positive (Silo's lock bit stays clear
/// in a version), and never 0 (the loaded value's version): attempts count from 1.
/// </summary>
internal static class ClusterTxnId
{
    public const int MaxSlots = 256;

    public static long Make(int node, int slot, long attempt)
    {
        System.Diagnostics.Debug.Assert(attempt is > 0 and < 1L << 47, $"attempt {attempt}: must be 1..2^47");
        return (attempt << 16) | ((long)node << 8) | (uint)slot;
    }

    public static int NodeOf(long txn) => (int)((txn >> 8) & 0xFF);

    public static int SlotOf(long txn) => (int)(txn & 0xFF);

    public static string Describe(long txn) => txn == 0 ? "load" : $"n{NodeOf(txn)}.s{SlotOf(txn)}.{txn >> 16}";
}
