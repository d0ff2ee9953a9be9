using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Programs;

/// <summary>A program the builder rejects: the message names the program and the op.</summary>
public sealed class ProgramException : Exception
{
    internal ProgramException(string message) : base(message)
    {
    }
}

/// <summary>Where an op's key comes from.</summary>
public readonly struct KeySource
{
    internal readonly int Arg;
    internal readonly KeyFunction? Fn;
    internal readonly string[] Deps;

    KeySource(int arg, KeyFunction? fn, string[] deps) { Arg = arg; Fn = fn; Deps = deps; }

    /// <summary>The key is the instance argument at this index.</summary>
    public static KeySource FromArg(int index) => new(index, null, []);

    /// <summary>The key is computed from the results of the named ops (pk-dependencies).</summary>
    public static KeySource Computed(KeyFunction fn, params string[] dependsOn) => new(-1, fn, dependsOn);
}

/// <summary>
/// Builds a <see cref="TxnProgram"/> and checks it once: every table exists, every dependency
/// names an op, a key depends only on earlier ops (its value must be known when the op is
/// reached), arguments are in range, and the dependencies form no cycle; at most
/// <see cref="TxnContext.MaxOps"/> ops and <see cref="TxnContext.MaxArgs"/> arguments.
/// </summary>
public sealed class ProgramBuilder(string name, Database db, int argCount)
{
    sealed record Draft(string Name, string Table, AccessMode Mode, int ModeArg, KeySource Key, string[] ValueDeps, ReadBody? Reader, OpBody? Writer);

    readonly List<Draft> _drafts = new();
    readonly List<string> _neverAbort = new();
    bool _bodiesMayAbort = true;

    /// <summary>An op that reads the row of <paramref name="table"/> with the key
    /// <paramref name="key"/> gives; its body's result is the op's result, which later ops'
    /// keys and bodies see. A missing key aborts the transaction (<see cref="Protocols.AbortReason.KeyNotFound"/>).</summary>
    /// <param name="op">the op's name, unique in the program; later ops name it to depend on it</param>
    /// <param name="table">the table's name</param>
    /// <param name="key">where the key comes from</param>
    /// <param name="body">reads the row's payload, returns the op's result or <see cref="TxnProgram.UserAbort"/></param>
    /// <param name="valueDeps">ops whose results the body reads</param>
    public ProgramBuilder Read(string op, string table, KeySource key, ReadBody body, params string[] valueDeps) =>
        Add(new Draft(op, table, AccessMode.Read, -1, key, valueDeps, body, null));

    /// <summary>An op that writes the row with the key <paramref name="key"/> gives: its body
    /// changes the payload in place (undone if the transaction aborts).</summary>
    /// <inheritdoc cref="Read" path="/param"/>
    public ProgramBuilder Write(string op, string table, KeySource key, OpBody body, params string[] valueDeps) =>
        Add(new Draft(op, table, AccessMode.Write, -1, key, valueDeps, null, body));

    /// <summary>An op that reads or writes as args[modeArg] says (nonzero: write), with a body for each.</summary>
    public ProgramBuilder ReadOrWrite(string op, string table, KeySource key, int modeArg, ReadBody readBody, OpBody writeBody, params string[] valueDeps) =>
        Add(new Draft(op, table, AccessMode.ReadOrWrite, modeArg, key, valueDeps, readBody, writeBody));

    /// <summary>An op that inserts a row with the key <paramref name="key"/> gives, its body
    /// filling the new payload; the row is visible once the transaction commits. A key already in
    /// the table ends the transaction <see cref="Protocols.AbortReason.DuplicateKey"/>.</summary>
    /// <inheritdoc cref="Read" path="/param"/>
    public ProgramBuilder Insert(string op, string table, KeySource key, OpBody body, params string[] valueDeps) =>
        Add(new Draft(op, table, AccessMode.Insert, -1, key, valueDeps, null, body));

    /// <summary>Declares that no body of the program returns <see cref="TxnProgram.UserAbort"/>
    /// (its logic may still abort on a missing key). A body that does anyway throws when it runs.
    /// Strife's clusters then write such a program's rows in place with no before-image, so a
    /// body that throws leaves what it wrote.</summary>
    public ProgramBuilder BodiesNeverAbort()
    {
        _bodiesMayAbort = false;
        return this;
    }

    /// <summary>Declares that the bodies of the named ops never return <see cref="TxnProgram.UserAbort"/>;
    /// one that does anyway throws when it runs. Chiller needs it of every op whose body may run
    /// after its inner region has committed (an op that reads a result of the inner region), since
    /// nothing can abort the transaction then.</summary>
    /// <param name="ops">names of ops of this program (checked by <see cref="Build"/>)</param>
    public ProgramBuilder NeverAborts(params string[] ops)
    {
        _neverAbort.AddRange(ops);
        return this;
    }

    ProgramBuilder Add(Draft d)
    {
        if (d.Mode != AccessMode.Write && d.Mode != AccessMode.Insert && d.Reader is null)
            throw new ArgumentNullException(d.Mode == AccessMode.Read ? "body" : "readBody", $"program {name}, op {d.Name}: has no read body");
        if (d.Mode != AccessMode.Read && d.Writer is null)
            throw new ArgumentNullException(d.Mode == AccessMode.ReadOrWrite ? "writeBody" : "body", $"program {name}, op {d.Name}: has no body");
        _drafts.Add(d);
        return this;
    }

    /// <summary>Checks the ops (tables, names, dependencies, no cycle) and makes the program.</summary>
    /// <exception cref="ProgramException">what is wrong, naming the program and the op</exception>
    public TxnProgram Build()
    {
        if (_drafts.Count == 0) throw new ProgramException($"program {name}: has no ops");
        if (_drafts.Count > TxnContext.MaxOps)
            throw new ProgramException($"program {name}: {_drafts.Count} ops, more than the {TxnContext.MaxOps} a transaction may have");
        if (argCount is < 0 or > TxnContext.MaxArgs)
            throw new ProgramException($"program {name}: {argCount} arguments, outside the 0..{TxnContext.MaxArgs} a transaction may take");
        var index = new Dictionary<string, int>(StringComparer.Ordinal);
        for (int i = 0; i < _drafts.Count; i++)
        {
            if (!index.TryAdd(_drafts[i].Name, i))
                throw new ProgramException($"program {name}, op {_drafts[i].Name}: the name is used by an earlier op too");
        }

        foreach (string declared in _neverAbort)
            if (!index.ContainsKey(declared))
                throw new ProgramException($"program {name}: NeverAborts names op '{declared}', which the program does not have");

        var ops = new Op[_drafts.Count];
        for (int i = 0; i < _drafts.Count; i++)
        {
            var d = _drafts[i];
            string where = $"program {name}, op {d.Name}";
            if (!db.TryGet(d.Table, out var table))
                throw new ProgramException($"{where}: unknown table '{d.Table}' (known: {string.Join(", ", db.Tables.Select(t => t.Name))})");
            if (d.Key.Fn is null && (d.Key.Arg < 0 || d.Key.Arg >= argCount))
                throw new ProgramException($"{where}: key argument {d.Key.Arg} outside 0..{argCount - 1}");
            if (d.Mode == AccessMode.ReadOrWrite && (d.ModeArg < 0 || d.ModeArg >= argCount))
                throw new ProgramException($"{where}: mode argument {d.ModeArg} outside 0..{argCount - 1}");
            int[] keyDeps = Resolve(where, "key", d.Key.Deps, index);
            foreach (int k in keyDeps)
            {
                if (k >= i)
                    throw new ProgramException($"{where}: key depends on op {_drafts[k].Name}, which comes {(k == i ? "at" : "after")} it (a key may depend only on earlier ops)");
                if (_drafts[k].Mode == AccessMode.Insert)
                    throw new ProgramException($"{where}: key depends on op {_drafts[k].Name}, an insert, whose result exists only at commit");
            }
            int[] valueDeps = Resolve(where, "value", d.ValueDeps, index);
            foreach (int v in valueDeps)
            {
                if (_drafts[v].Mode == AccessMode.Insert)
                    throw new ProgramException($"{where}: depends on the value of op {_drafts[v].Name}, an insert, whose result exists only at commit");
            }
            ops[i] = new Op
            {
                Name = d.Name, Index = i, TableId = table.Id, Mode = d.Mode, ModeArg = d.ModeArg,
                KeyArg = d.Key.Fn is null ? d.Key.Arg : -1, KeyFn = d.Key.Fn,
                KeyDeps = keyDeps, ValueDeps = valueDeps, Reader = d.Reader, Writer = d.Writer,
                NeverAborts = !_bodiesMayAbort || _neverAbort.Contains(d.Name),
            };
        }
        return new TxnProgram(name, db, ops, TopologicalOrder(ops), argCount, ops.Any(o => !o.NeverAborts));
    }

    int[] Resolve(string where, string kind, string[] names, Dictionary<string, int> index)
    {
        var result = new int[names.Length];
        for (int j = 0; j < names.Length; j++)
        {
            if (!index.TryGetValue(names[j], out result[j]))
                throw new ProgramException($"{where}: {kind} depends on unknown op '{names[j]}'");
        }
        return result;
    }

    /// <summary>Kahn's algorithm taking the lowest ready index first; a leftover op lies on a cycle.</summary>
    int[] TopologicalOrder(Op[] ops)
    {
        int n = ops.Length;
        var indegree = new int[n];
        var dependents = new List<int>[n];
        for (int i = 0; i < n; i++) dependents[i] = new List<int>();
        foreach (var op in ops)
        {
            foreach (int d in op.KeyDeps.Concat(op.ValueDeps).Distinct())
            {
                indegree[op.Index]++;
                dependents[d].Add(op.Index);
            }
        }
        var ready = new SortedSet<int>(Enumerable.Range(0, n).Where(i => indegree[i] == 0));
        var order = new List<int>(n);
        while (ready.Count > 0)
        {
            int i = ready.Min;
            ready.Remove(i);
            order.Add(i);
            foreach (int j in dependents[i])
                if (--indegree[j] == 0) ready.Add(j);
        }
        if (order.Count < n) throw new ProgramException($"program {name}: dependency cycle {DescribeCycle(ops, indegree)}");
        return order.ToArray();
    }

    static string DescribeCycle(Op[] ops, int[] indegree)
    {
        // Every op left with indegree > 0 depends on another such op: walk back until one repeats.
        int start = Array.FindIndex(indegree, d => d > 0);
        var seen = new List<int>();
        int at = start;
        while (!seen.Contains(at))
        {
            seen.Add(at);
            at = ops[at].KeyDeps.Concat(ops[at].ValueDeps).First(d => indegree[d] > 0);
        }
        var cycle = seen.Skip(seen.IndexOf(at)).Reverse().Select(i => ops[i].Name).ToList();
        cycle.Add(cycle[0]);
        return string.Join(" -> ", cycle);
    }
}
