using Contend.Engine.Cluster;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// Chiller's lookup table (Sections 4.5.1 and 6): where every record lives, and which records
/// are contended. Placement is a partition map (hash, range, or a table the partitioner fills
/// for some records); contention is a list of hot records and of tables whose every record is
/// hot (a bucket per table, as TPC-C's warehouses and districts). The same on every node;
/// read-only once a run starts.
/// </summary>
internal sealed class ChillerLookup(IPartitionMap map)
{
    readonly HashSet<(int Table, long Key)> _hot = new();
    readonly HashSet<int> _hotTables = new();

    public IPartitionMap Map { get; } = map;

    /// <summary>Marks one record as contended.</summary>
    public ChillerLookup MarkHot(int table, long key)
    {
        _hot.Add((table, key));
        return this;
    }

    /// <summary>Marks every record of a table as contended.</summary>
    public ChillerLookup MarkHotTable(int table)
    {
        _hotTables.Add(table);
        return this;
    }

    public bool IsHot(int table, long key) => _hotTables.Contains(table) || _hot.Contains((table, key));

    public override string ToString() =>
        $"hot tables: {(_hotTables.Count == 0 ? "none" : string.Join(", ", _hotTables.Order()))}; hot records: {_hot.Count}";
}
