namespace Contend.Engine.Storage;

/// <summary>The tables of one run, by name and by id (the id is the index).</summary>
/// <remarks>An engine claims its database (<see cref="Runtime.ContendEngine"/>): from then on the
/// schema is frozen, since the protocols size their per-table state when they are made, and
/// only the engine disposes it, after its workers have stopped.</remarks>
public sealed class Database : IDisposable
{
    readonly List<Table> _tables = new();
    readonly Dictionary<string, Table> _byName = new(StringComparer.Ordinal);
    /// <summary>The name of the engine serving the database; null while none does.</summary>
    string? _servedBy;
    bool _disposed;

    /// <summary>Makes a table of <paramref name="capacity"/> rows of <paramref name="payloadSize"/>
    /// bytes each, memory taken at once; its keys are longs.</summary>
    /// <exception cref="InvalidOperationException">an engine serves the database: its schema is frozen</exception>
    /// <exception cref="ArgumentException">a table has the name already; a size out of range</exception>
    public Table Create(string name, int payloadSize, int capacity)
    {
        if (Volatile.Read(ref _servedBy) is { } engine)
            throw new InvalidOperationException($"table {name}: the schema is frozen while engine '{engine}' serves this database; create every table before making the engine");
        if (_byName.ContainsKey(name)) throw new ArgumentException($"table {name} already exists");
        var t = new Table(name, _tables.Count, payloadSize, capacity) { Owner = this };
        _tables.Add(t);
        _byName.Add(name, t);
        return t;
    }

    /// <summary>The table with this id (its place in <see cref="Tables"/>).</summary>
    public Table this[int id] => _tables[id];

    /// <summary>The table with this name, if there is one.</summary>
    public bool TryGet(string name, out Table table) => _byName.TryGetValue(name, out table!);

    /// <summary>Every table, in the order made (an id is its place).</summary>
    public IReadOnlyList<Table> Tables => _tables;

    /// <summary>The bytes every table's rows and index take.</summary>
    public long MemoryBytes => _tables.Sum(t => t.MemoryBytes);

    /// <summary>Marks the database served by the engine <paramref name="engine"/>, or throws if another serves it.</summary>
    internal void Claim(string engine)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        if (Interlocked.CompareExchange(ref _servedBy, engine, null) is { } other)
            throw new InvalidOperationException($"engine '{engine}': this database is already served by engine '{other}'; one engine per database (dispose that engine first)");
    }

    /// <summary>Throws when an engine serves the database or it was disposed: <paramref name="what"/>
    /// happens only while neither is so (by default, rows read and written outside transactions;
    /// <paramref name="served"/> and <paramref name="rule"/> word the error for another caller).</summary>
    internal void ThrowIfServedOrDisposed(string what, string served = "serves this database",
                                          string rule = "rows are loaded and read outside transactions only before an engine serves it")
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        if (Volatile.Read(ref _servedBy) is { } engine)
            throw new InvalidOperationException($"{what}: engine '{engine}' {served}; {rule}");
    }

    /// <summary>The serving engine has stopped.</summary>
    internal void Release() => Volatile.Write(ref _servedBy, null);

    /// <summary>Frees the tables' memory (again: nothing).</summary>
    /// <exception cref="InvalidOperationException">an engine serves the database: dispose the engine, which disposes it</exception>
    public void Dispose()
    {
        if (Volatile.Read(ref _servedBy) is { } engine)
            throw new InvalidOperationException($"the database is served by engine '{engine}', whose workers use its rows: dispose the engine, which disposes the database");
        _disposed = true;
        foreach (var t in _tables) t.Free();
    }
}
