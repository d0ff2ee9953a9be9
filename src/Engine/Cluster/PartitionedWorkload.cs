using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Cluster;

/// <summary>A workload whose records are split over partitions: each partition loads only the
/// records the map places on it, into tables of the same names and ids on every partition.</summary>
internal interface IPartitionedWorkload
{
    string Name { get; }

    /// <summary>Creates every table in <paramref name="db"/> (the same ones, in the same order,
    /// for every partition) and fills it with the records <paramref name="map"/> places on
    /// <paramref name="partition"/>; builds the programs.</summary>
    void Load(Database db, int partition, IPartitionMap map);

    /// <summary>The programs the sources draw from, once loaded: every node finds a program here by its name.</summary>
    IReadOnlyList<TxnProgram> Programs { get; }

    /// <summary>One coordinator slot's stream: <paramref name="stream"/> is unique in the cluster;
    /// <paramref name="homePartitions"/> are those whose primary is on the slot's node (none when
    /// the node holds no primary), for a workload whose transactions have a home, as TPC-C's
    /// warehouse, to draw it where its coordinator is (Deneva's clients do the same).</summary>
    ITransactionSource CreateSource(int stream, ulong seed, IReadOnlyList<int> homePartitions);
}

/// <summary>What a simulated run came to.</summary>
/// <param name="History">the committed transactions, each one's accesses gathered from every partition it touched (row keys name the partition)</param>
/// <param name="Atomicity">attempts whose partitions did not all end as the coordinator decided</param>
/// <param name="Unfinished">attempts still under way after the drain, at a coordinator or a participant</param>
/// <param name="Failures">transactions whose program threw, with where</param>
/// <param name="Events">timer firings the run took: the same seed gives the same count</param>
/// <param name="MultiPartitionCommits">committed transactions that used more than one partition</param>
internal sealed record ClusterRunResult(WorkerStats Stats, TimeSpan Elapsed, IReadOnlyList<CommittedTxn> History,
                                      IReadOnlyList<string> Atomicity, IReadOnlyList<string> Unfinished, IReadOnlyList<string> Failures,
                                      long Events, long MessagesSent, long MessagesDropped, long MessagesDuplicated, long MultiPartitionCommits)
{
    /// <summary>The share of commits that used more than one partition (distributed transactions).</summary>
    public double MultiPartitionShare => Stats.Commits == 0 ? 0 : MultiPartitionCommits / (double)Stats.Commits;

    /// <summary>Commits per second of virtual time: a model's figure, not this machine's speed.</summary>
    public double VirtualThroughput => Stats.Commits / Elapsed.TotalSeconds;
}

/// <summary>What every simulated cluster does with its partitions' records once a run is over.</summary>
internal static class PartitionedHistory
{
    /// <summary>Each committed transaction once, with every partition's share of its accesses
    /// (row keys name the partition: the recorders at i are partition i's, one for each primary it has had).</summary>
    public static List<CommittedTxn> Merge(IEnumerable<IEnumerable<HistoryRecorder>> partitions)
    {
        var parts = new Dictionary<long, (string Program, List<Access> Accesses)>();
        int p = 0;
        foreach (var recorders in partitions)
        {
            foreach (var t in recorders.SelectMany(r => r.Collect()))
            {
                if (!parts.TryGetValue(t.Id, out var entry)) parts[t.Id] = entry = (t.TxnProgram, new List<Access>());
                else if (entry.Program.Length == 0) parts[t.Id] = entry = (t.TxnProgram, entry.Accesses);
                foreach (var a in t.Accesses) entry.Accesses.Add(a with { Row = HistoryRecorder.PartitionRowKey(p, a.Row) });
            }
            p++;
        }
        return parts.OrderBy(kv => kv.Key).Select(kv => new CommittedTxn(kv.Key, kv.Value.Program, kv.Value.Accesses.ToArray())).ToList();
    }

    /// <summary>Atomicity: no partition ended an attempt otherwise than its coordinator decided
    /// (<paramref name="outcomes"/>[p]: every attempt that ended on partition p, true if it committed).</summary>
    public static List<string> CheckAtomicity(IEnumerable<IReadOnlyDictionary<long, bool>> outcomes, IReadOnlyDictionary<long, bool> decisions)
    {
        var wrong = new List<string>();
        int p = 0;
        foreach (var partition in outcomes)
        {
            foreach (var (txn, committed) in partition)
            {
                bool decided = decisions.TryGetValue(txn, out bool commit);
                if (committed && !(decided && commit))
                    wrong.Add($"{ClusterTxnId.Describe(txn)}: partition {p} committed, but its coordinator {(decided ? "decided abort" : "decided nothing")}");
                else if (!committed && decided && commit)
                    wrong.Add($"{ClusterTxnId.Describe(txn)}: partition {p} aborted, but its coordinator decided commit");
            }
            p++;
        }
        return wrong;
    }

    /// <summary>Every transaction ended: no partition holds an attempt (<paramref name="live"/>[p]:
    /// how many it holds) and no coordinator slot is busy.</summary>
    public static List<string> Unfinished(IEnumerable<int> live, IEnumerable<SlotCoordinator> slots)
    {
        var left = new List<string>();
        int p = 0;
        foreach (int n in live)
        {
            if (n > 0) left.Add($"partition {p}: {n} attempts still hold something");
            p++;
        }
        foreach (var c in slots)
            if (c.Busy) left.Add($"coordinator of {ClusterTxnId.Describe(c.Txn)}: its transaction has not ended");
        return left;
    }

    /// <summary>Refuses a workload whose partition <paramref name="partition"/> made other tables than partition 0.</summary>
    public static void CheckSameSchema(IPartitionedWorkload workload, IReadOnlyList<Database> databases, int partition)
    {
        var first = databases[0].Tables;
        var these = databases[partition].Tables;
        bool same = first.Count == these.Count && first.Zip(these).All(t => t.First.Name == t.Second.Name && t.First.PayloadSize == t.Second.PayloadSize);
        if (!same)
            throw new InvalidOperationException($"workload {workload.Name}: partition {partition}'s tables ({string.Join(", ", these.Select(t => t.Name))}) differ from partition 0's ({string.Join(", ", first.Select(t => t.Name))})");
    }
}
