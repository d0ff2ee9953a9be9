namespace Contend.Engine.History;

/// <summary>A dependency of the direct serialization graph, from the transaction that must come first.</summary>
public enum EdgeKind : byte
{
    /// <summary>ww: the target overwrote the source's version.</summary>
    WriteWrite,
    /// <summary>wr: the target read the source's version.</summary>
    WriteRead,
    /// <summary>rw (anti-dependency): the source read a version the target overwrote.</summary>
    ReadWrite,
}

/// <summary>An edge of the direct serialization graph: <paramref name="To"/> depends on
/// <paramref name="From"/> through <paramref name="Row"/>.</summary>
/// <param name="From">the transaction that must come first</param>
/// <param name="To">the transaction that must come after it</param>
/// <param name="Kind">what <paramref name="To"/> did to the row after <paramref name="From"/></param>
/// <param name="Row">the row, as <see cref="SerializabilityChecker.RowName"/> names it</param>
public readonly record struct Edge(long From, long To, EdgeKind Kind, long Row);

/// <summary>One anomaly: a cycle of the direct serialization graph, or a history no
/// serializable execution can produce at all (a read of an uncommitted version, two
/// committed writers overwriting the same version).</summary>
public sealed record Anomaly(string Kind, string Description, IReadOnlyList<Edge> Cycle);

/// <summary>
/// Checks a recorded history for serializability (Adya's direct serialization graph).
/// Versions are writers' transaction ids, so reads-from is exact and the version order of a
/// row is the chain of "overwrote" links its writes recorded. A cycle is reported with its
/// transactions, rows and edge kinds, and named as in Adya's thesis: G0 (ww only), G1c
/// (ww and wr), G2 (with an anti-dependency; G-single when exactly one).
/// </summary>
public static class SerializabilityChecker
{
    /// <summary>What <see cref="Check"/> found.</summary>
    /// <param name="Transactions">committed transactions checked</param>
    /// <param name="Edges">edges of the graph built</param>
    /// <param name="Anomalies">the anomalies described (at most the number asked for)</param>
    public sealed record Report(int Transactions, long Edges, IReadOnlyList<Anomaly> Anomalies)
    {
        /// <summary>True when no anomaly was found: the history has a serial equivalent.</summary>
        public bool Serializable => Anomalies.Count == 0;
    }

    /// <summary>Builds the direct serialization graph of <paramref name="history"/> and reports
    /// its cycles and the versions no serial execution could have read.</summary>
    /// <param name="history">every committed transaction of a run (<see cref="Runtime.ContendEngine.History"/>)</param>
    /// <param name="maxReported">cycles beyond this many are counted in the SCCs but not described</param>
    public static Report Check(IReadOnlyList<CommittedTxn> history, int maxReported = 5)
    {
        var anomalies = new List<Anomaly>();
        var committed = new HashSet<long>(history.Count);
        foreach (var t in history) committed.Add(t.Id);

        // Version order per row: who overwrote (row, version).
        var overwriter = new Dictionary<(long Row, long Version), long>();
        foreach (var t in history)
        {
            foreach (var a in t.Accesses)
            {
                if (!a.IsWrite || a.Version == HistoryRecorder.NewRow) continue;
                if (!overwriter.TryAdd((a.Row, a.Version), t.Id) && anomalies.Count < maxReported)
                {
                    long other = overwriter[(a.Row, a.Version)];
                    anomalies.Add(new Anomaly("lost update",
                        $"transactions {Txn(other)} and {Txn(t.Id)} both overwrote version {Txn(a.Version)} of {RowName(a.Row)}",
                        []));
                }
            }
        }

        var adjacency = new Dictionary<long, List<Edge>>(history.Count);
        long edgeCount = 0;
        void AddEdge(long from, long to, EdgeKind kind, long row)
        {
            if (from == to) return;
            if (!adjacency.TryGetValue(from, out var list)) adjacency[from] = list = new List<Edge>(4);
            list.Add(new Edge(from, to, kind, row));
            edgeCount++;
        }

        foreach (var t in history)
        {
            foreach (var a in t.Accesses)
            {
                if (a.Version == HistoryRecorder.NewRow) continue;
                if (a.Version != 0)
                {
                    if (!committed.Contains(a.Version))
                    {
                        if (anomalies.Count < maxReported)
                            anomalies.Add(new Anomaly("G1a", $"transaction {Txn(t.Id)} {(a.IsWrite ? "overwrote" : "read")} version {Txn(a.Version)} of {RowName(a.Row)}, which no committed transaction wrote", []));
                        continue;
                    }
                    AddEdge(a.Version, t.Id, a.IsWrite ? EdgeKind.WriteWrite : EdgeKind.WriteRead, a.Row);
                }
                if (!a.IsWrite && overwriter.TryGetValue((a.Row, a.Version), out long next))
                    AddEdge(t.Id, next, EdgeKind.ReadWrite, a.Row);
            }
        }

        foreach (var component in StronglyConnectedComponents(adjacency))
        {
            if (anomalies.Count >= maxReported) break;
            var cycle = ShortestCycle(component, adjacency);
            anomalies.Add(new Anomaly(Classify(cycle), Describe(cycle), cycle));
        }
        return new Report(history.Count, edgeCount, anomalies);
    }

    /// <summary>
    /// The version each row the history writes must hold once the run is over: the end of the
    /// chain its writes record (loaded or inserted, then whoever overwrote that, and so on). A
    /// row not in the result was written by no committed transaction and must hold what it was
    /// loaded with (version 0). For a history <see cref="Check"/> finds no lost update in: where
    /// two writes overwrote one version, the chain follows the first recorded.
    /// </summary>
    public static Dictionary<long, long> FinalVersions(IReadOnlyList<CommittedTxn> history)
    {
        var overwriter = new Dictionary<(long Row, long Version), long>();
        var rows = new HashSet<long>();
        foreach (var t in history)
            foreach (var a in t.Accesses)
            {
                if (!a.IsWrite) continue;
                overwriter.TryAdd((a.Row, a.Version), t.Id);
                rows.Add(a.Row);
            }
        var final = new Dictionary<long, long>(rows.Count);
        foreach (long row in rows)
        {
            long version = overwriter.ContainsKey((row, HistoryRecorder.NewRow)) ? HistoryRecorder.NewRow : 0;
            // Ids are distinct, so a chain ends within as many steps as there are writes; the bound
            // only keeps a corrupt history (a write recorded as overwriting itself) from looping.
            for (int step = 0; step <= overwriter.Count && overwriter.TryGetValue((row, version), out long next); step++) version = next;
            final[row] = version;
        }
        return final;
    }

    static string Classify(List<Edge> cycle)
    {
        int rw = cycle.Count(e => e.Kind == EdgeKind.ReadWrite);
        if (rw == 1) return "G-single";
        if (rw > 1) return "G2";
        return cycle.Any(e => e.Kind == EdgeKind.WriteRead) ? "G1c" : "G0";
    }

    static string Describe(List<Edge> cycle) =>
        string.Join(", ", cycle.Select(e => $"{Txn(e.From)} -{KindName(e.Kind)}({RowName(e.Row)})-> {Txn(e.To)}"));

    static string KindName(EdgeKind k) => k switch
    {
        EdgeKind.WriteWrite => "ww",
        EdgeKind.WriteRead => "wr",
        _ => "rw",
    };

    /// <summary>A transaction id as worker.attempt, the way TxnContext builds it.</summary>
    public static string Txn(long id) => id == 0 ? "load" : $"w{id & 0xFF}.{id >> 8}";

    /// <summary>A row id (<see cref="Access.Row"/>) in words: partition, table and row.</summary>
    public static string RowName(long row) =>
        (row >> 56 == 0 ? "" : $"partition {(row >> 56) - 1} ") + $"table {(row >> 40) & 0xFFFF} row {row & ((1L << 40) - 1)}";

    /// <summary>Tarjan's algorithm, iterative (histories have millions of nodes); yields
    /// only components with more than one node (self-edges are never added).</summary>
    static IEnumerable<List<long>> StronglyConnectedComponents(Dictionary<long, List<Edge>> adjacency)
    {
        var index = new Dictionary<long, int>();
        var low = new Dictionary<long, int>();
        var onStack = new HashSet<long>();
        var stack = new Stack<long>();
        var work = new Stack<(long Node, int Next)>();
        int counter = 0;
        foreach (long root in adjacency.Keys)
        {
            if (index.ContainsKey(root)) continue;
            work.Push((root, 0));
            while (work.Count > 0)
            {
                var (v, i) = work.Pop();
                if (i == 0)
                {
                    index[v] = low[v] = counter++;
                    stack.Push(v);
                    onStack.Add(v);
                }
                var edges = adjacency.TryGetValue(v, out var l) ? l : null;
                bool descended = false;
                while (edges is not null && i < edges.Count)
                {
                    long w = edges[i].To;
                    i++;
                    if (!index.ContainsKey(w))
                    {
                        work.Push((v, i));
                        work.Push((w, 0));
                        descended = true;
                        break;
                    }
                    if (onStack.Contains(w)) low[v] = Math.Min(low[v], index[w]);
                }
                if (descended) continue;
                if (low[v] == index[v])
                {
                    var component = new List<long>();
                    long w;
                    do
                    {
                        w = stack.Pop();
                        onStack.Remove(w);
                        component.Add(w);
                    } while (w != v);
                    if (component.Count > 1) yield return component;
                }
                if (work.Count > 0)
                {
                    long parent = work.Peek().Node;
                    low[parent] = Math.Min(low[parent], low[v]);
                }
            }
        }
    }

    /// <summary>A shortest cycle through the component's first node, by breadth-first search inside it.</summary>
    static List<Edge> ShortestCycle(List<long> component, Dictionary<long, List<Edge>> adjacency)
    {
        var members = component.ToHashSet();
        long start = component[0];
        var via = new Dictionary<long, Edge>();
        var queue = new Queue<long>();
        queue.Enqueue(start);
        while (queue.Count > 0)
        {
            long v = queue.Dequeue();
            foreach (var e in adjacency[v])
            {
                if (!members.Contains(e.To)) continue;
                if (e.To == start)
                {
                    var cycle = new List<Edge> { e };
                    for (long at = v; at != start; at = via[at].From) cycle.Add(via[at]);
                    cycle.Reverse();
                    return cycle;
                }
                if (via.TryAdd(e.To, e)) queue.Enqueue(e.To);
            }
        }
        throw new InvalidOperationException("a strongly connected component without a cycle through its first node");
    }
}
