using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// One replica copy of a partition (Section 5.1): acknowledges each log entry as it receives it
/// (ReplicaReceive), applies the entries in sequence order (ReplicaApply), and after applying an
/// inner region tells the transaction's coordinator, with the inner region's results (D6). It
/// keeps every entry it received, so that, when its primary is cut off, the survivors can hand
/// each other what some of them lack (GatherPending); the candidate among them decides and takes
/// over (<see cref="ChillerCluster.Promote"/>).
/// </summary>
internal sealed class ChillerReplica(int node, int partition, int copy, Database db, ChillerCluster cluster)
{
    readonly SortedDictionary<long, Replicate> _log = new();
    readonly SortedDictionary<long, Replicate> _held = new();
    /// <summary>Outer shares prepared here and not ended yet, by transaction.</summary>
    readonly Dictionary<long, Replicate> _prepared = new();
    /// <summary>Every share the log ended: true if committed.</summary>
    readonly Dictionary<long, bool> _outcomes = new();
    /// <summary>The inner regions this copy applied, by transaction.</summary>
    readonly HashSet<long> _inner = new();
    readonly MutantFlag _decidesBeforeGather = new(cluster.Options.Mutants, ChillerMutants.DecideBeforeGather);
    readonly MutantFlag _servesBeforeCatchUp = new(cluster.Options.Mutants, ChillerMutants.ServesBeforeCatchUp);
    long _applied;
    Gathering? _gathering;

    public int Node => node;
    public int Copy => copy;
    public Database Database { get; } = db;

    /// <summary>The sequence number of the last entry applied: entries apply 1, 2, ... (a number
    /// nobody received skipped once its sender is cut off).</summary>
    public long Applied => _applied;

    /// <summary>Entries received and not applied yet, waiting for an earlier one.</summary>
    public int Held => _held.Count;

    /// <summary>True once this copy serves as the partition's primary: it takes no entries any more.</summary>
    public bool Promoted { get; private set; }

    public IReadOnlyDictionary<long, bool> Outcomes => _outcomes;
    public IEnumerable<Replicate> Prepared => _prepared.Values.OrderBy(e => e.Seq);
    public IReadOnlySet<long> InnerApplied => _inner;

    /// <summary>The inner regions' entries applied here.</summary>
    public IEnumerable<Replicate> InnerEntries => _log.Values.Where(e => e.Kind == EntryKind.Inner && e.Seq <= _applied);

    /// <summary>The inner regions applied here, with their results.</summary>
    public IEnumerable<(long Txn, long[] Results)> InnerCommitted => InnerEntries.Select(e => (e.Txn, e.InnerResults!));

    public void Receive(int from, object message)
    {
        if (Promoted) return;
        switch (message)
        {
            case Replicate m:
                // Acknowledged on receipt, a doubled copy again (the primary ignores a second ack).
                cluster.Send(node, from, new ReplicaAck(m.Txn, partition, copy, m.Seq));
                if (Hold(m)) ApplyInOrder();
                break;
            case GatherRequest m: OnGatherRequest(from, m); break;
            case GatherReply m: OnGatherReply(m); break;
            case GatherFill m: OnGatherFill(from, m); break;
            case GatherDone m: OnGatherDone(m); break;
            default: throw new InvalidOperationException($"partition {partition}, copy {copy}: a replica got {message.GetType().Name}");
        }
    }

    /// <summary>Keeps an entry not seen before, as <paramref name="step"/>: ReplicaReceive from the
    /// primary, GatherPending from another survivor during a recovery (the spec's GatherPending is
    /// that receipt, not a second step after it); false for a doubled one.</summary>
    bool Hold(Replicate m, ChillerStep step = ChillerStep.ReplicaReceive)
    {
        if (!_log.TryAdd(m.Seq, m)) return false;
        if (m.Seq > _applied) _held.Add(m.Seq, m);
        cluster.Trace(step, m.Txn, partition, node);
        return true;
    }

    void ApplyInOrder()
    {
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
            int row = table.Find(image.Key);
            if (image.Inserted == row >= 0)
            {
                // The log and this copy have parted: a protocol bug, which replica agreement reports.
                cluster.Diverged($"partition {partition}, copy {copy}: entry {m.Seq} of {ClusterTxnId.Describe(m.Txn)} {(image.Inserted ? "inserts" : "writes")} table {table.Name} key {image.Key}, which this copy {(image.Inserted ? "has already" : "lacks")}");
                if (row < 0) continue;
            }
            else if (image.Inserted) row = table.Load(image.Key);
            image.Payload.CopyTo(table.Payload(row));
            Volatile.Write(ref table.Version(row), m.Txn);
        }
        switch (m.Kind)
        {
            case EntryKind.Inner:
                _inner.Add(m.Txn);
                _outcomes[m.Txn] = true;
                cluster.Send(node, ClusterTxnId.NodeOf(m.Txn), new InnerNotify(m.Txn, partition, copy, m.InnerResults!));
                break;
            case EntryKind.OuterPrepared:
                _prepared[m.Txn] = m;
                break;
            case EntryKind.OuterCommit:
            case EntryKind.OuterRelease:
                _prepared.Remove(m.Txn);
                _outcomes[m.Txn] = m.Kind == EntryKind.OuterCommit;
                break;
        }
        cluster.Trace(ChillerStep.ReplicaApply, m.Txn, partition, node);
    }

    /// <summary>A new view: if this copy is the candidate of its partition's recovery, it gathers.</summary>
    public void OnView(ClusterView view)
    {
        if (Promoted || !view.Recovering.Contains(partition) || view.Configuration[partition][0] != copy) return;
        if (_gathering is { } g && g.Epoch == view.Epoch) return;
        if (_decidesBeforeGather)
        {
            // The twin: decides from its own log alone.
            _gathering = new Gathering(view.Epoch, [], []);
            Decide();
            return;
        }
        // Gather from the survivors of this view (a later view, after another crash, starts over).
        var others = view.Configuration[partition].Skip(1).ToHashSet();
        _gathering = new Gathering(view.Epoch, others, new HashSet<int>(others));
        foreach (int other in others)
            Send(other, new GatherRequest(partition, view.Epoch, copy, _applied + 1));
        if (others.Count == 0) FillOthers();
    }

    void OnGatherRequest(int from, GatherRequest m) =>
        cluster.Send(node, from, new GatherReply(partition, m.Epoch, copy, _applied, _log.Values.Where(e => e.Seq >= m.FromSeq).ToArray()));

    void OnGatherReply(GatherReply m)
    {
        if (_gathering is not { } g || g.Epoch != m.Epoch || !g.Replying.Remove(m.Copy)) return;
        g.Has[m.Copy] = (m.Applied, m.Entries.Select(e => e.Seq).ToHashSet());
        foreach (var entry in m.Entries) Hold(entry, ChillerStep.GatherPending);
        if (g.Replying.Count == 0) FillOthers();
    }

    /// <summary>Every survivor has answered: hand each the entries it lacks, then wait for each to hold them.</summary>
    void FillOthers()
    {
        var g = _gathering!;
        foreach (int other in g.Others)
        {
            // Everything this copy holds past what the other applied, but for what it said it holds.
            var (applied, has) = g.Has[other];
            Send(other, new GatherFill(partition, g.Epoch, copy, _log.Values.Where(e => e.Seq > applied && !has.Contains(e.Seq)).ToArray()));
        }
        if (g.Others.Count == 0) Decide();
    }

    void OnGatherFill(int from, GatherFill m)
    {
        foreach (var entry in m.Entries) Hold(entry with { Copy = copy }, ChillerStep.GatherPending);
        FlushSkippingGaps();
        cluster.Send(node, from, new GatherDone(partition, m.Epoch, copy));
    }

    void OnGatherDone(GatherDone m)
    {
        if (_gathering is not { } g || g.Epoch != m.Epoch || !g.Others.Remove(m.Copy)) return;
        if (g.Others.Count == 0) Decide();
    }

    /// <summary>DecidePending: every survivor holds every pending entry one of them received (D9);
    /// all of them commit (a survivor received them), anything else the crashed host ran aborted.
    /// This copy applies what it holds, then takes over.</summary>
    void Decide()
    {
        // The twin keeps what it gathered aside, takes over, and applies it half a millisecond later.
        var late = _servesBeforeCatchUp ? _held.Values.ToList() : [];
        if (late.Count > 0) _held.Clear();
        FlushSkippingGaps();
        cluster.Trace(ChillerStep.DecidePending, 0, partition, node);
        _gathering = null;
        if (cluster.IsDown(node)) return; // stopped right after deciding: the next survivor starts over
        Promoted = true;
        cluster.Promote(partition, this);
        if (late.Count > 0)
            cluster.Time.CreateTimer(_ => { foreach (var entry in late) Apply(entry); }, null, TimeSpan.FromMicroseconds(500), Timeout.InfiniteTimeSpan);
    }

    /// <summary>Applies every held entry in sequence order, skipping a number nobody holds: its
    /// sender, the crashed primary, is cut off, so it can never arrive (D5).</summary>
    void FlushSkippingGaps()
    {
        while (_held.Count > 0)
        {
            var next = _held.First().Value;
            _held.Remove(next.Seq);
            _applied = next.Seq;
            Apply(next);
        }
    }

    /// <summary>A fresh entry number's floor for the copy that takes over: above every entry it holds.</summary>
    public long LastSeq => _log.Count == 0 ? _applied : Math.Max(_applied, _log.Keys.Max());

    void Send(int otherCopy, object message) =>
        cluster.Send(node, cluster.Topology.CopiesOf(partition)[otherCopy], message);

    sealed class Gathering(long epoch, HashSet<int> others, HashSet<int> replying)
    {
        public long Epoch { get; } = epoch;
        public HashSet<int> Others { get; } = others;
        public HashSet<int> Replying { get; } = replying;
        /// <summary>Per other survivor: the last entry it applied, and the later ones it holds.</summary>
        public Dictionary<int, (long Applied, HashSet<long> Holds)> Has { get; } = new();
    }
}
