using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>The knobs of a Chiller run.</summary>
/// <param name="Topology">nodes, partitions, and copies of each partition (the primary and its replicas)</param>
/// <param name="Lookup">where records live and which are contended</param>
/// <param name="SlotsPerNode">transactions each node coordinates at once (the paper's co-routines)</param>
internal sealed record ChillerOptions(ClusterTopology Topology, ChillerLookup Lookup, ulong Seed, int SlotsPerNode = 4)
{
    /// <summary>Copies a partition may have: a primary's acknowledgements are a bit per copy.</summary>
    public const int MaxCopies = 64;

    public NetworkFaults Faults { get; init; } = NetworkFaults.Delay(TimeSpan.FromMicroseconds(50));
    /// <summary>The unit of a conflict retry's random backoff, which grows with the retries.</summary>
    public TimeSpan Backoff { get; init; } = TimeSpan.FromMicroseconds(20);
    /// <summary>After the run's time, how long stopping may take: every transaction under way must end in it.</summary>
    public TimeSpan Drain { get; init; } = TimeSpan.FromSeconds(1);
    /// <summary>Null: the run follows the network's delays; otherwise a systematic tester's choice
    /// of the next few deliveries (<see cref="SimulatedTime"/>'s explorer).</summary>
    public Func<int, int>? Explorer { get; init; }
    /// <summary>Called at every step and crash: a trace of the run (<see cref="ChillerEvent"/>).</summary>
    public Action<ChillerEvent>? Observer { get; init; }

    /// <summary>Nodes to stop, each right after a given step (crash-stop: a stopped node never returns).</summary>
    public IReadOnlyList<ChillerCrash> Crashes { get; init; } = [];
    /// <summary>Null: nodes work in no time. Otherwise each node's workers and what a message and
    /// an op cost them (<see cref="NodeWorkers"/>).</summary>
    public CpuModel? Cpu { get; init; }
    /// <summary>The nodes that coordinate transactions; null: every node that holds a primary.</summary>
    public IReadOnlyList<int>? CoordinatorNodes { get; init; }
    /// <summary>How long after a node stops the failure detector suspects it (a lease's length).</summary>
    public TimeSpan DetectionDelay { get; init; } = TimeSpan.FromMicroseconds(500);

    internal ChillerMutants Mutants { get; init; }

    internal ChillerOptions Validated()
    {
        if (SlotsPerNode is < 1 or > ClusterTxnId.MaxSlots)
            throw new ArgumentOutOfRangeException(nameof(SlotsPerNode), $"chiller: {SlotsPerNode} slots a node, must be 1..{ClusterTxnId.MaxSlots}");
        if (Topology.Replicas > MaxCopies)
            throw new ArgumentOutOfRangeException(nameof(Topology), $"chiller: {Topology.Replicas} copies of a partition, at most {MaxCopies}");
        if (Lookup.Map.Partitions != Topology.Partitions)
            throw new ArgumentException($"chiller: the lookup table has {Lookup.Map.Partitions} partitions, the topology {Topology.Partitions}", nameof(Lookup));
        // Decision (the spec's D1 and D2): Chiller's channels are reliable, as RDMA's reliable
        // connections are; a message is lost only when the cluster manager closes a crashed node's
        // channels, which is recovery's business, not the network's.
        foreach (var link in Faults.Links.Values.Append(Faults.Default))
            if (link.Drop > 0)
                throw new ArgumentException($"chiller: a link drops {link.Drop:P0} of its messages, but Chiller's channels are reliable (the spec's D1: a message is lost only with a crashed node's closed channels)", nameof(Faults));
        if (Faults.Cuts.Count > 0)
            throw new ArgumentException("chiller: a cut link loses messages, but Chiller's channels are reliable (the spec's D1)", nameof(Faults));
        if (Faults.ShortestDelay <= TimeSpan.Zero)
            throw new ArgumentException($"chiller: a simulated network needs every delay above 0 (shortest here: {Faults.ShortestDelay}), or its clock need never move", nameof(Faults));
        if (Backoff <= TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(Backoff), $"chiller: backoff {Backoff} must be positive");
        if (Drain < TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(Drain), $"chiller: drain {Drain} is negative");
        Cpu?.Validated();
        if (DetectionDelay <= TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(DetectionDelay), $"chiller: detection delay {DetectionDelay} must be positive");
        foreach (var crash in Crashes)
        {
            if (!ChillerCrashPoints.Recovered.Contains(crash.After))
                throw new ArgumentException($"chiller: a crash after {crash.After}: that step is the cluster manager's, which the paper takes to be fault tolerant (Zookeeper); crashes after {string.Join(", ", ChillerCrashPoints.Recovered)} are recovered", nameof(Crashes));
            if (crash.Occurrence < 1) throw new ArgumentOutOfRangeException(nameof(Crashes), $"chiller: a crash after occurrence {crash.Occurrence} of {crash.After}: occurrences count from 1");
            if (crash.NotBefore < TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(Crashes), $"chiller: a crash after {crash.After} not before {crash.NotBefore}: a time in the run, 0 or more");
            if (crash.Node is int n && (uint)n >= (uint)Topology.Nodes) throw new ArgumentOutOfRangeException(nameof(Crashes), $"chiller: a crash of node {n}, but nodes are 0..{Topology.Nodes - 1}");
        }
        // Crash-stop loses what a node holds: a partition survives only while one of its copies
        // is on a node that does not stop (the paper's f + 1 copies for f failures).
        var stopping = Crashes.Where(c => c.Node is not null).Select(c => c.Node!.Value).ToHashSet();
        for (int p = 0; p < Topology.Partitions; p++)
        {
            var copies = Topology.CopiesOf(p).ToArray();
            if (copies.All(stopping.Contains))
                throw new ArgumentException($"chiller: the crashes stop node{(stopping.Count == 1 ? "" : "s")} {string.Join(", ", stopping.Order())}, which hold{(stopping.Count == 1 ? "s" : "")} every copy of partition {p} ({Topology.Replicas} cop{(Topology.Replicas == 1 ? "y" : "ies")}): it would be lost; give each partition more copies than crashes (--replicas {Math.Min(MaxCopies, stopping.Count + 1)}, and --nodes enough to hold them apart)", nameof(Crashes));
        }
        if (Crashes.Count > 0)
            for (int node = 0; node < Topology.Nodes; node++)
                if (Topology.CopiesOn(node).Count() > 1)
                    throw new ArgumentException($"chiller: crashes need every copy on a node of its own (node {node} holds {Topology.CopiesOn(node).Count()}): build the topology with replicasApart", nameof(Crashes));
        foreach (int node in CoordinatorNodes ?? [])
            if ((uint)node >= (uint)Topology.Nodes) throw new ArgumentOutOfRangeException(nameof(CoordinatorNodes), $"chiller: coordinator node {node}, but nodes are 0..{Topology.Nodes - 1}");
        return this;
    }
}

/// <summary>What a Chiller run came to, beyond what every cluster run reports.</summary>
/// <param name="ReplicaDisagreements">copies whose records differ from their primary's after the drain</param>
/// <param name="InnerCommits">inner regions committed by their hosts</param>
/// <param name="TwoRegionCommits">commits that locked an outer record off the inner host's partition</param>
/// <param name="DeferredBodies">outer bodies run after their inner region committed</param>
/// <param name="LogEntries">entries the primaries shipped to their replicas</param>
/// <param name="Steps">how often each step ran</param>
/// <param name="Crashed">the nodes the crash plan stopped, and when</param>
/// <param name="Fenced">messages refused because the receiver's view had their sender cut off</param>
internal sealed record ChillerRunResult(ClusterRunResult Run, IReadOnlyList<string> ReplicaDisagreements, long InnerCommits, long TwoRegionCommits,
                                        long DeferredBodies, long LogEntries, IReadOnlyDictionary<ChillerStep, long> Steps,
                                        IReadOnlyList<(int Node, TimeSpan At)> Crashed, long Fenced);

/// <summary>
/// Chiller over a simulated cluster: every partition's primary and replicas, every node's
/// coordinators, the transport and the clock, in one thread on <see cref="SimulatedTime"/>, so the
/// same options and seed give the same run, event for event. Nodes stop only as
/// <see cref="ChillerOptions.Crashes"/> says; a replica's, a primary's and a coordinator's crashes
/// are recovered.
/// </summary>
internal static class ChillerSimulation
{
    /// <param name="duration">virtual time coordinators start transactions in; the drain follows</param>
    /// <param name="inspect">called with every partition's primary database once the run has drained</param>
    public static ChillerRunResult Run(IPartitionedWorkload workload, ChillerOptions options, TimeSpan duration,
                                       Action<IReadOnlyList<Database>>? inspect = null)
    {
        if (duration <= TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(duration), $"chiller: run time {duration} must be positive");
        using var cluster = new ChillerCluster(workload, options.Validated());
        var result = cluster.Run(duration);
        inspect?.Invoke(cluster.Databases);
        return result;
    }
}

/// <summary>One simulated Chiller cluster.</summary>
internal sealed class ChillerCluster : ISlotCluster, IDisposable
{
    readonly Database[] _databases;
    readonly ChillerPrimary[] _primaries;
    /// <summary>Per partition, every primary it has had, the current one last (their outcome logs
    /// and histories outlive them).</summary>
    readonly List<ChillerPrimary>[] _allPrimaries;
    /// <summary>Per partition, the replicas that took over, whose logs hold what recovery committed.</summary>
    readonly List<ChillerReplica>[] _takenOver;
    readonly ChillerReplica[][] _replicas;
    readonly ChillerCoordinator[][] _coordinators;
    readonly Dictionary<string, RegionProgram> _programs;
    readonly Dictionary<long, bool> _decisions = new();
    readonly InProcessTransport _transport;
    readonly long[] _steps = new long[Enum.GetValues<ChillerStep>().Length];
    /// <summary>Per planned crash, the occurrences of its step counted so far.</summary>
    readonly int[] _crashCounts;
    readonly SimulatedMembership _membership;
    readonly NodeWorkers? _workers;
    /// <summary>Nodes that have stopped (crash-stop), whether or not the detector has noticed yet.</summary>
    readonly bool[] _down;
    /// <summary>The last view each node has learned.</summary>
    readonly ClusterView[] _views;

    public ChillerCluster(IPartitionedWorkload workload, ChillerOptions options)
    {
        Options = options;
        Topology = options.Topology;
        Lookup = options.Lookup;
        Time = new SimulatedTime(choose: options.Explorer);
        _transport = new InProcessTransport(Topology.Nodes, Time, options.Faults, options.Seed);
        _membership = new SimulatedMembership(Topology, Time, options.DetectionDelay, options.Faults.Local);
        _workers = options.Cpu is { } cpu ? new NodeWorkers(Topology.Nodes, cpu, Time) : null;
        _down = new bool[Topology.Nodes];
        _crashCounts = new int[options.Crashes.Count];
        _views = new ClusterView[Topology.Nodes];
        Array.Fill(_views, _membership.Current);
        _databases = new Database[Topology.Partitions];
        _primaries = new ChillerPrimary[Topology.Partitions];
        _allPrimaries = new List<ChillerPrimary>[Topology.Partitions];
        _takenOver = new List<ChillerReplica>[Topology.Partitions];
        _replicas = new ChillerReplica[Topology.Partitions][];
        _programs = new Dictionary<string, RegionProgram>();
        for (int p = 0; p < Topology.Partitions; p++)
        {
            var db = _databases[p] = new Database();
            workload.Load(db, p, Lookup.Map);
            PartitionedHistory.CheckSameSchema(workload, _databases, p);
            if (p == 0)
                foreach (var program in workload.Programs) _programs.Add(program.Name, RegionProgram.Check(program, Lookup.Map));
            _primaries[p] = new ChillerPrimary(Topology.PrimaryOf(p), p, db, new HistoryRecorder(1), this);
            _allPrimaries[p] = [_primaries[p]];
            _takenOver[p] = [];
            var copies = Topology.CopiesOf(p);
            _replicas[p] = new ChillerReplica[copies.Length];
            for (int r = 1; r < copies.Length; r++)
            {
                var copy = new Database();
                workload.Load(copy, p, Lookup.Map);
                _replicas[p][r] = new ChillerReplica(copies[r], p, r, copy, this);
            }
        }
        _coordinators = new ChillerCoordinator[Topology.Nodes][];
        for (int n = 0; n < Topology.Nodes; n++)
        {
            int[] homes = Topology.PrimariesOn(n).ToArray();
            // Transactions start where a primary serves, unless the options name the nodes.
            bool coordinates = options.CoordinatorNodes?.Contains(n) ?? homes.Length > 0;
            _coordinators[n] = new ChillerCoordinator[coordinates ? options.SlotsPerNode : 0];
            for (int s = 0; s < _coordinators[n].Length; s++)
            {
                ulong seed = options.Seed * 0x9E3779B97F4A7C15UL + (ulong)(n * ClusterTxnId.MaxSlots + s + 1);
                _coordinators[n][s] = new ChillerCoordinator(n, s, this, workload.CreateSource(n * options.SlotsPerNode + s, seed, homes), seed);
            }
            int node = n;
            _transport.Attach(n, e => Deliver(node, e));
            _membership.Watch(n, view => OnView(node, view));
        }
    }

    public ChillerOptions Options { get; }
    public ClusterTopology Topology { get; }
    public ChillerLookup Lookup { get; }
    public SimulatedTime Time { get; }
    public IMembership Membership => _membership;
    public ITransport Transport => _transport;
    /// <summary>Every partition's primary database, by partition.</summary>
    public IReadOnlyList<Database> Databases => _databases;
    public WorkerStats Stats { get; } = new();
    public TimeSpan Backoff => Options.Backoff;
    /// <summary>Commits that locked an outer record off their inner host's partition: a Chiller
    /// commit uses another partition only so.</summary>
    public long MultiPartitionCommits { get; set; }
    public List<string> Failures { get; } = new();
    public long InnerCommits { get; set; }
    public long DeferredBodies { get; set; }
    public long LogEntries { get; set; }
    /// <summary>Set once the run's time is over: coordinators start nothing new.</summary>
    public bool Stopping { get; private set; }

    /// <summary>A program by the name a message carries, with its region analysis.</summary>
    public RegionProgram Program(string name) =>
        _programs.TryGetValue(name, out var program) ? program : throw new InvalidOperationException($"chiller: no program named {name}");

    /// <summary>Where a coordinator on <paramref name="node"/> puts a transaction none of whose ops
    /// can be placed before it runs: the first primary on its node, or one chosen by its number.</summary>
    public int HomePartition(int node) => Topology.PrimariesOn(node) is { Length: > 0 } primaries ? primaries[0] : node % Topology.Partitions;

    /// <summary>The outcome a coordinator learned, the log the atomicity check reads.</summary>
    public void Decided(long txn, bool commit) => _decisions.Add(txn, commit);

    /// <summary>The outcome a crashed coordinator's successor decided: the coordinator's, if it had
    /// decided before it stopped, or an atomicity violation.</summary>
    public void DecidedBySuccessor(long txn, bool commit, int node)
    {
        if (!_decisions.TryAdd(txn, commit) && _decisions[txn] != commit)
            _outcomeConflicts.Add($"{ClusterTxnId.Describe(txn)}: its coordinator decided {(commit ? "abort" : "commit")}, and the node that took it over (node {node}) {(commit ? "commit" : "abort")}");
    }

    /// <summary>Step <paramref name="step"/> taken by <paramref name="node"/>: counted, traced, and
    /// the node stopped right after it if the crash plan says so.</summary>
    /// <param name="reads">for an observer: the rows the step read (gathered only when <see cref="Observed"/>)</param>
    public void Trace(ChillerStep step, long txn, int partition, int node, IReadOnlyList<ChillerRead>? reads = null)
    {
        _steps[(int)step]++;
        Options.Observer?.Invoke(new ChillerEvent(step, txn, partition, node, Time.Elapsed, reads ?? []));
        for (int i = 0; i < _crashCounts.Length; i++)
        {
            var crash = Options.Crashes[i];
            if (crash.After == step && (crash.Node ?? node) == node && Time.Elapsed >= crash.NotBefore && ++_crashCounts[i] == crash.Occurrence) Crash(node);
        }
    }

    /// <summary>Stops a node: from now on it handles nothing; the failure detector notices later.</summary>
    void Crash(int node)
    {
        if (_down[node]) return;
        _down[node] = true;
        Crashed.Add((node, Time.Elapsed));
        Options.Observer?.Invoke(new ChillerEvent(null, 0, Topology.CopiesOn(node).Select(c => c.Partition).DefaultIfEmpty(-1).First(), node, Time.Elapsed, []));
        _membership.ReportDown(node, Recover);
    }

    public bool IsDown(int node) => _down[node];

    /// <summary>An observer listens: steps report what they read.</summary>
    public bool Observed => Options.Observer is not null;

    /// <summary>Nodes stopped, and when.</summary>
    public List<(int Node, TimeSpan At)> Crashed { get; } = new();

    /// <summary>
    /// The cluster manager's recovery of a suspected node, by what it kept. A replica: RecoverReplica,
    /// its channels closed and the copy out of its partition's configuration, in one view. A
    /// primary (or the candidate of a recovery under way): CloseChannels, its channels closed and its
    /// partition recovering; the first survivor then gathers, decides and takes over
    /// (<see cref="ChillerReplica.OnView"/>, <see cref="Promote"/>), each its own step. A
    /// coordinator: CloseChannels, and the partitions holding shares of its transactions ask the
    /// node Section 5.2 names (RecoverCoordinator, <see cref="ChillerPrimary"/>).
    /// </summary>
    void Recover(int node)
    {
        bool coordinates = _coordinators[node].Length > 0;
        if (!Topology.CopiesOn(node).Any())
        {
            _membership.Propose(v => v with { Epoch = v.Epoch + 1, CutOff = new HashSet<int>(v.CutOff) { node } });
            Trace(ChillerStep.CloseChannels, 0, -1, node);
            return;
        }
        var (partition, copy) = Topology.CopiesOn(node).Single();
        var view = _membership.Current;
        int index = Array.IndexOf(view.Configuration[partition], copy);
        bool serving = index == 0;
        var survivors = view.Configuration[partition].Where(c => c != copy).ToArray();
        if (serving && survivors.Length == 0)
            throw new InvalidOperationException($"chiller: partition {partition} lost its last copy (node {node}); at most R - 1 = {Topology.Replicas - 1} of its copies may fail");
        _membership.Propose(v => v with
        {
            Epoch = v.Epoch + 1,
            CutOff = new HashSet<int>(v.CutOff) { node },
            Configuration = v.Configuration.Select((copies, p) => p == partition ? survivors : copies).ToArray(),
            Recovering = serving ? new HashSet<int>(v.Recovering) { partition } : v.Recovering,
        });
        if (!serving) Trace(ChillerStep.RecoverReplica, 0, partition, node);
        if (serving || coordinates) Trace(ChillerStep.CloseChannels, 0, partition, node);
    }

    /// <summary>ElectPrimary: <paramref name="replica"/>, which has gathered and applied every pending
    /// entry, serves its partition from now on, holding again the outer shares its log has prepared;
    /// the coordinators learn which of the crashed primary's inner regions commit (those a survivor
    /// received), so that any other they wait for aborts.</summary>
    public void Promote(int partition, ChillerReplica replica)
    {
        // RecoveryCommit: the inner regions the survivors hold that no former primary committed
        // commit here (D4: this copy serves nothing before it has applied them, so no lock of the
        // crashed host needs keeping).
        var recoveryCommits = replica.InnerEntries.Where(e => !_allPrimaries[partition].Any(p => p.Outcomes.TryGetValue(e.Txn, out bool committed) && committed))
                                                  .Select(e => e.Txn).ToList();
        _takenOver[partition].Add(replica);
        var primary = new ChillerPrimary(replica.Node, partition, replica.Database, new HistoryRecorder(1), this, takeover: replica);
        _primaries[partition] = primary;
        _allPrimaries[partition].Add(primary);
        _databases[partition] = replica.Database;
        var view = _membership.Propose(v => v with { Epoch = v.Epoch + 1, Recovering = v.Recovering.Where(p => p != partition).ToHashSet() });
        var committed = replica.InnerApplied.ToHashSet();
        for (int n = 0; n < Topology.Nodes; n++)
            if (_coordinators[n].Length > 0) Send(replica.Node, n, new Elected(partition, view.Epoch, replica.Copy, committed));
        Trace(ChillerStep.ElectPrimary, 0, partition, replica.Node);
        foreach (long txn in recoveryCommits) Trace(ChillerStep.RecoveryCommit, txn, partition, replica.Node);
    }

    /// <summary>A node learns a view: each of its components adjusts (in epoch order; a stopped node learns nothing).</summary>
    void OnView(int node, ClusterView view)
    {
        if (_down[node] || view.Epoch <= _views[node].Epoch) return;
        _views[node] = view;
        foreach (var primary in _primaries)
            if (primary.Node == node) primary.OnView(view);
        foreach (var (p, copy) in Topology.CopiesOn(node))
            if (copy > 0) _replicas[p][copy].OnView(view);
        foreach (var c in _coordinators[node]) c.OnView(view);
    }

    void Deliver(int node, Envelope e)
    {
        if (_workers is null) Handle(node, e);
        else _workers.Run(e, OpsOf(e.Message), m => Handle(node, m));
    }

    /// <summary>The ops a message makes its receiver run, for the cost model: an outer op, the
    /// inner region (with the host's deferred outer ops), a log entry's rows, a commit's install.</summary>
    static int OpsOf(object message) => message switch
    {
        LockOuter => 1,
        Delegate m => System.Numerics.BitOperations.PopCount(m.Inner | m.HostDeferred),
        Replicate m => m.Rows.Length,
        OuterDecision { Commit: true } => 1,
        _ => 0,
    };

    /// <summary>Sends from <paramref name="from"/>, stamped with the view it has.</summary>
    public void Send(int from, int to, object message) => _transport.Send(new Envelope(from, to, message, _views[from].Epoch));

    /// <summary>Messages refused because their sender was cut off in the receiver's view.</summary>
    public long Fenced { get; private set; }

    void Handle(int node, Envelope e)
    {
        if (_down[node]) return; // a stopped node handles nothing
        // A message from a later view than this node's: it learns that view first (as a process
        // would read it from the membership service), so that it never answers a node of a newer
        // view with an older one's state; in particular a survivor asked to gather has closed its
        // channels to the crashed primary before it replies, and takes nothing from it after.
        if (e.Epoch > _views[node].Epoch) OnView(node, _membership.Current);
        // Fencing (D2): a closed channel delivers nothing. Nodes stop for good (crash-stop), so
        // the receiver's own view naming the sender cut off is the epoch check: the sender was
        // cut off in an epoch this node has learned, and every message it sent is refused.
        var cut = _views[node].CutOff;
        if (cut.Contains(e.From) || cut.Contains(node))
        {
            Fenced++;
            return;
        }
        switch (e.Message)
        {
            case LockOuter m: ToPrimary(node, m.Partition, e); break;
            case PrepareOuter m: ToPrimary(node, m.Partition, e); break;
            case Delegate m: ToPrimary(node, m.Partition, e); break;
            case ReplicaAck m: ToPrimary(node, m.Partition, e); break;
            case OuterDecision m: ToPrimary(node, m.Partition, e); break;
            case AskOutcome m: ToPrimary(node, m.Partition, e); break;
            case Replicate m: ToReplica(node, m.Partition, e); break;
            case GatherRequest m: ToReplica(node, m.Partition, e); break;
            case GatherReply m: ToReplica(node, m.Partition, e); break;
            case GatherFill m: ToReplica(node, m.Partition, e); break;
            case GatherDone m: ToReplica(node, m.Partition, e); break;
            case Elected:
                foreach (var c in _coordinators[node]) c.Receive(e.Message);
                break;
            case OuterLocked m: ToCoordinator(node, m.Txn, e); break;
            case OuterPrepared m: ToCoordinator(node, m.Txn, e); break;
            case InnerNotify m: ToCoordinator(node, m.Txn, e); break;
            case InnerAborted m: ToCoordinator(node, m.Txn, e); break;
            case OuterDone m: ToCoordinator(node, m.Txn, e); break;
            default: throw new InvalidOperationException($"node {node}: a message of unknown type {e.Message.GetType().Name} from node {e.From}");
        }
    }

    /// <summary>To the partition's primary, if it is on this node; a request sent to a former
    /// primary's node is refused, as the closed channel to it would.</summary>
    void ToPrimary(int node, int partition, Envelope e)
    {
        if (_primaries[partition].Node == node) _primaries[partition].Receive(e.Message);
    }

    void ToReplica(int node, int partition, Envelope e)
    {
        foreach (var (p, copy) in Topology.CopiesOn(node))
            if (p == partition && copy > 0)
            {
                _replicas[p][copy].Receive(e.From, e.Message);
                return;
            }
        throw new InvalidOperationException($"node {node}: a {e.Message.GetType().Name} for partition {partition}, of which it holds no replica");
    }

    void ToCoordinator(int node, long txn, Envelope e)
    {
        if (ClusterTxnId.NodeOf(txn) != node)
            throw new InvalidOperationException($"node {node}: a reply for {ClusterTxnId.Describe(txn)}, coordinated by node {ClusterTxnId.NodeOf(txn)}");
        _coordinators[node][ClusterTxnId.SlotOf(txn)].Receive(e.Message);
    }

    public ChillerRunResult Run(TimeSpan duration)
    {
        foreach (var node in _coordinators)
            foreach (var c in node) c.StartNext();
        Time.RunUntil(duration);
        Stopping = true;
        Time.RunUntil(duration + Options.Drain);
        var outcomes = Enumerable.Range(0, Topology.Partitions).Select(PartitionOutcomes).ToList();
        var run = new ClusterRunResult(Stats, duration,
                                       PartitionedHistory.Merge(Enumerable.Range(0, Topology.Partitions).Select(p => _allPrimaries[p].Select(x => x.History).Append(RecoveredHistory(p)))),
                                       PartitionedHistory.CheckAtomicity(outcomes, WithUndecided(outcomes)).Concat(_outcomeConflicts).ToList(),
                                       // A stopped node's slots never end; their transactions must end at every partition.
                                       PartitionedHistory.Unfinished(_primaries.Select(p => p.Unfinished), _coordinators.Where((_, n) => !_down[n]).SelectMany(n => n)), Failures,
                                       Time.Fired, _transport.Sent, _transport.Dropped, _transport.Duplicated, MultiPartitionCommits);
        var steps = Enum.GetValues<ChillerStep>().ToDictionary(s => s, s => _steps[(int)s]);
        return new ChillerRunResult(run, CheckReplicas(), InnerCommits, MultiPartitionCommits, DeferredBodies, LogEntries, steps, Crashed, Fenced);
    }


    /// <summary>The history of what recovery committed on <paramref name="p"/>: the inner regions
    /// in the logs of the copies that took over that no primary committed (and recorded) itself,
    /// with the accesses their entries carry.</summary>
    HistoryRecorder RecoveredHistory(int p)
    {
        var recorder = new HistoryRecorder(1);
        var recorded = _allPrimaries[p].SelectMany(x => x.Recorded).ToHashSet();
        foreach (var entry in _takenOver[p].SelectMany(r => r.InnerEntries))
            if (recorded.Add(entry.Txn)) recorder.Add(new CommittedTxn(entry.Txn, entry.Program ?? "", entry.Accesses ?? []));
        return recorder;
    }

    /// <summary>The decisions, and for each transaction a stopped coordinator never decided and no
    /// successor was asked about (nobody held a share that needed its outcome), the one its inner
    /// host made: commit if a partition committed it (the inner commit is its serialization point),
    /// so that any partition that aborted it is an atomicity violation.</summary>
    Dictionary<long, bool> WithUndecided(List<IReadOnlyDictionary<long, bool>> outcomes)
    {
        var decisions = new Dictionary<long, bool>(_decisions);
        foreach (var partition in outcomes)
            foreach (var (txn, committed) in partition)
                if (_down[ClusterTxnId.NodeOf(txn)] && !_decisions.ContainsKey(txn))
                    decisions[txn] = committed || decisions.GetValueOrDefault(txn);
        return decisions;
    }

    /// <summary>What partition <paramref name="p"/> ended, over all its primaries; a primary that
    /// ended a transaction otherwise than an earlier one of the partition is an atomicity violation.</summary>
    IReadOnlyDictionary<long, bool> PartitionOutcomes(int p)
    {
        var outcomes = new Dictionary<long, bool>();
        foreach (var primary in _allPrimaries[p])
            foreach (var (txn, committed) in primary.Outcomes)
            {
                if (outcomes.TryGetValue(txn, out bool before) && before != committed)
                    _outcomeConflicts.Add($"{ClusterTxnId.Describe(txn)}: partition {p}'s primary on node {primary.Node} {(committed ? "committed" : "aborted")} it, an earlier one {(before ? "committed" : "aborted")} it");
                outcomes[txn] = committed;
            }
        return outcomes;
    }

    readonly List<string> _outcomeConflicts = new();

    /// <summary>A copy met an entry it cannot apply as it stands (see <see cref="CheckReplicas"/>).</summary>
    public void Diverged(string what) => _divergences.Add(what);

    readonly List<string> _divergences = new();

    /// <summary>Replica agreement once drained: every copy in the configuration applied the whole log
    /// and holds what its primary holds, record for record (the same keys, payloads and versions).
    /// With the primaries alive, that is durability too: every committed change is on every copy
    /// that serves.</summary>
    List<string> CheckReplicas()
    {
        var wrong = new List<string>(_divergences);
        for (int p = 0; p < _primaries.Length; p++)
            foreach (int r in _membership.Current.ReplicasOf(p))
            {
                var replica = _replicas[p][r];
                string copy = $"partition {p}, copy {r}";
                if (replica.Applied != _primaries[p].LastSeq || replica.Held != 0)
                    wrong.Add($"{copy}: applied {replica.Applied} of the {_primaries[p].LastSeq} entries its primary shipped, {replica.Held} held back");
                foreach (var table in _databases[p].Tables)
                {
                    var other = replica.Database[table.Id];
                    long reachable = 0;
                    for (int row = 0; row < table.RowsEverUsed; row++)
                    {
                        long key = table.Key(row);
                        if (table.Find(key) != row) continue; // an aborted insert's row: never reachable
                        reachable++;
                        int there = other.Find(key);
                        if (there < 0) wrong.Add($"{copy}: table {table.Name} lacks key {key}");
                        else if (!table.Payload(row).SequenceEqual(other.Payload(there)) || table.Version(row) != other.Version(there))
                            wrong.Add($"{copy}: table {table.Name} key {key} differs from the primary's (version {ClusterTxnId.Describe(other.Version(there))}, primary {ClusterTxnId.Describe(table.Version(row))})");
                    }
                    if (other.Count != reachable) wrong.Add($"{copy}: table {table.Name} has {other.Count} rows, the primary {reachable}");
                }
            }
        return wrong;
    }


    public void Dispose()
    {
        foreach (var db in _databases) db?.Dispose();
        foreach (var copies in _replicas)
            if (copies is not null)
                foreach (var r in copies) r?.Database.Dispose();
    }
}
