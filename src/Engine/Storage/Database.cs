namespace Contend.Engine.Storage;

/// <summary>The tables of one run, by name and by id (the id is the index).</summary>
public sealed class Database : IDisposable
{
    readonly List<Table> _tables = new();
    readonly Dictionary<string, Table> _byName = new(StringComparer.Ordinal);

    public Table Create(string name, int payloadSize, int capacity)
    {
        if (_byName.ContainsKey(name)) throw new ArgumentException($"table {name} already exists");
        var t = new Table(name, _tables.Count, payloadSize, capacity);
        _tables.Add(t);
        _byName.Add(name, t);
        return t;
    }

    public Table this[int id] => _tables[id];

    public bool TryGet(string name, out Table table) => _byName.TryGetValue(name, out table!);

    public IReadOnlyList<Table> Tables => _tables;

    public long MemoryBytes => _tables.Sum(t => t.MemoryBytes);

    public void Dispose()
    {
        foreach (var t in _tables) t.Dispose();
    }
}
