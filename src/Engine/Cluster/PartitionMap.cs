namespace Contend.Engine.Cluster;

/// <summary>Which partition holds a key. The same answer on every node, at every time
/// (moving records between partitions is not modelled).</summary>
internal interface IPartitionMap
{
    int Partitions { get; }

    int PartitionOf(int table, long key);

    /// <summary>True for a table that every partition holds whole and nothing writes (TPC-C's
    /// items, as Deneva and Chiller keep them): a read of it goes to a partition the transaction
    /// uses already, or its coordinator's own; a program that writes it is refused.</summary>
    bool Replicates(int table) => false;
}

/// <summary>Keys spread by a hash of the key alone, so a key has one partition whatever its table.</summary>
internal sealed class HashPartitionMap : IPartitionMap
{
    public int Partitions { get; }

    public HashPartitionMap(int partitions)
    {
        if (partitions is < 1 or > ClusterTopology.MaxPartitions)
            throw new ArgumentOutOfRangeException(nameof(partitions), $"hash partition map: {partitions} partitions, must be 1..{ClusterTopology.MaxPartitions}");
        Partitions = partitions;
    }

    public int PartitionOf(int table, long key)
    {
        // One SplitMix64 step from the key: consecutive keys land on unrelated partitions.
        ulong state = (ulong)key;
        return (int)(Runtime.Rng.Next(ref state) % (ulong)Partitions);
    }
}

/// <summary>
/// Keys by range, the same ranges in every table: partition i holds the keys from
/// <c>bounds[i - 1]</c> (from the smallest key for i = 0) up to but not including
/// <c>bounds[i]</c>, and the last partition every key from the last bound up. Workloads
/// whose keys start with a warehouse or a region in their high bits split by it this way.
/// </summary>
internal sealed class RangePartitionMap : IPartitionMap
{
    readonly long[] _bounds;

    public int Partitions => _bounds.Length + 1;

    /// <param name="bounds">the first key of partitions 1, 2, ...: strictly ascending</param>
    public RangePartitionMap(IReadOnlyList<long> bounds)
    {
        if (bounds.Count + 1 > ClusterTopology.MaxPartitions)
            throw new ArgumentOutOfRangeException(nameof(bounds), $"range partition map: {bounds.Count + 1} partitions, at most {ClusterTopology.MaxPartitions}");
        for (int i = 1; i < bounds.Count; i++)
            if (bounds[i] <= bounds[i - 1])
                throw new ArgumentException($"range partition map: bound {i} ({bounds[i]}) is not above bound {i - 1} ({bounds[i - 1]})", nameof(bounds));
        _bounds = bounds.ToArray();
    }

    public int PartitionOf(int table, long key)
    {
        int i = Array.BinarySearch(_bounds, key);
        // Found: the key is bound i, the first of partition i + 1. Not found: ~i is the first
        // bound above the key, and the partition's number.
        return i >= 0 ? i + 1 : ~i;
    }
}

/// <summary>
/// An explicit table of where given records live (Chiller's partitioner fills one, so that
/// the records one transaction touches together share a partition), and another map for
/// every record the table does not name. Filled before the run; read-only once it starts.
/// </summary>
internal sealed class LookupPartitionMap(IPartitionMap otherwise) : IPartitionMap
{
    readonly Dictionary<(int Table, long Key), int> _placed = new();

    public int Partitions => otherwise.Partitions;

    /// <summary>Places one record.</summary>
    public void Place(int table, long key, int partition)
    {
        if ((uint)partition >= (uint)Partitions)
            throw new ArgumentOutOfRangeException(nameof(partition), $"lookup partition map: table {table} key {key} placed on partition {partition}, but there are {Partitions}");
        _placed[(table, key)] = partition;
    }

    public int PartitionOf(int table, long key) =>
        _placed.TryGetValue((table, key), out int p) ? p : otherwise.PartitionOf(table, key);
}
