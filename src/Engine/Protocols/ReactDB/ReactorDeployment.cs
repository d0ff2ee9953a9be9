using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>A reactor: a named actor whose state is relations of its own, mapped to one
/// container at deployment (seed 004, Section 2.1). Its functions read and write only its own
/// relations; everything else they reach by calling another reactor.</summary>
public sealed class Reactor
{
    readonly Dictionary<string, Relation> _relations = new(StringComparer.Ordinal);

    internal Reactor(ReactorDeployment deployment, string name, int id, int container)
    {
        Deployment = deployment;
        Name = name;
        Id = id;
        Container = container;
    }

    internal ReactorDeployment Deployment { get; }
    /// <summary>Its name, unique in its deployment.</summary>
    public string Name { get; }
    /// <summary>Its place in <see cref="ReactorDeployment.Reactors"/>.</summary>
    public int Id { get; }
    /// <summary>The container it is mapped to: its relations' share of the database, and the
    /// executors its functions run on.</summary>
    public int Container { get; }

    /// <summary>The relation of this reactor with this name.</summary>
    /// <exception cref="ArgumentException">the reactor has no such relation (the message lists its relations)</exception>
    public Relation Relation(string name) =>
        _relations.TryGetValue(name, out var relation)
            ? relation
            : throw new ArgumentException($"reactor {Name} has no relation '{name}' (its relations: {string.Join(", ", _relations.Keys)})", nameof(name));

    internal void Add(Relation relation) => _relations.Add(relation.Name, relation);

    /// <summary>Its name.</summary>
    public override string ToString() => Name;
}

/// <summary>One of a reactor's relations: a table of the database that only this reactor's
/// functions read and write.</summary>
public sealed class Relation
{
    internal Relation(Reactor owner, string name, Table table)
    {
        Owner = owner;
        Name = name;
        Table = table;
    }

    /// <summary>The reactor whose relation it is.</summary>
    public Reactor Owner { get; }
    /// <summary>Its name in its reactor.</summary>
    public string Name { get; }
    internal Table Table { get; }

    /// <summary>reactor.relation: the name of its table.</summary>
    public override string ToString() => $"{Owner.Name}.{Name}";
}

/// <summary>
/// Where each reactor lives: the reactors, their relations (tables of one database) and the
/// container each is mapped to, chosen before the engine starts. The paper's two extremes are
/// one container that holds every reactor (its sync deployment, all executors sharing one queue)
/// and one container per reactor group with one executor each (async); everything between is a
/// map too.
/// </summary>
public sealed class ReactorDeployment
{
    readonly List<Reactor> _reactors = new();
    readonly Dictionary<string, Reactor> _byName = new(StringComparer.Ordinal);
    readonly HashSet<int> _ownedTables = new();

    /// <param name="db">the database whose tables are the reactors' relations</param>
    /// <param name="containers">how many containers the database is divided into, 1..<see cref="ReactDbOptions.MaxContainers"/></param>
    /// <exception cref="ArgumentOutOfRangeException">the containers out of range</exception>
    public ReactorDeployment(Database db, int containers)
    {
        ArgumentNullException.ThrowIfNull(db);
        if (containers is < 1 or > ReactDbOptions.MaxContainers)
            throw new ArgumentOutOfRangeException(nameof(containers), containers, $"a deployment has 1..{ReactDbOptions.MaxContainers} containers");
        Database = db;
        Containers = containers;
    }

    /// <summary>The database whose tables are the reactors' relations.</summary>
    public Database Database { get; }
    /// <summary>How many containers the database is divided into.</summary>
    public int Containers { get; }
    /// <summary>The reactors, in the order they were added (<see cref="Reactor.Id"/>).</summary>
    public IReadOnlyList<Reactor> Reactors => _reactors;

    /// <summary>Adds a reactor mapped to <paramref name="container"/>, whose relation R is the
    /// database's table named "<paramref name="name"/>.R".</summary>
    /// <exception cref="ArgumentException">the name is taken; the container is out of range; a
    /// relation's table is missing or already another reactor's</exception>
    /// <exception cref="InvalidOperationException">an engine serves the deployment already: it is
    /// fixed before the engine starts</exception>
    /// <exception cref="ObjectDisposedException">its database was disposed (with its engine)</exception>
    public Reactor Add(string name, int container, params string[] relations)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        Database.ThrowIfServedOrDisposed($"reactor {name}", "serves this deployment already", "a deployment is fixed before its engine starts");
        if (_byName.ContainsKey(name)) throw new ArgumentException($"reactor {name}: the name is taken", nameof(name));
        if ((uint)container >= (uint)Containers)
            throw new ArgumentOutOfRangeException(nameof(container), container, $"reactor {name}: container {container} outside 0..{Containers - 1}");
        var reactor = new Reactor(this, name, _reactors.Count, container);
        foreach (string relation in relations)
        {
            string tableName = $"{name}.{relation}";
            if (!Database.TryGet(tableName, out var table))
                throw new ArgumentException($"reactor {name}: relation {relation} needs table '{tableName}', which the database does not have", nameof(relations));
            if (!_ownedTables.Add(table.Id))
                throw new ArgumentException($"reactor {name}: table '{tableName}' is another relation's already", nameof(relations));
            reactor.Add(new Relation(reactor, relation, table));
        }
        _reactors.Add(reactor);
        _byName.Add(name, reactor);
        return reactor;
    }

    /// <summary>The reactor with this name.</summary>
    /// <exception cref="ArgumentException">none has it (the message lists the reactors)</exception>
    public Reactor this[string name] =>
        _byName.TryGetValue(name, out var reactor)
            ? reactor
            : throw new ArgumentException($"no reactor '{name}' (reactors: {string.Join(", ", _byName.Keys)})", nameof(name));
}
