using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseCommit;

/// <summary>The knobs of a two-phase commit run.</summary>
/// <param name="Protocol">each participant's protocol: NoWait, WaitDie or Silo</param>
/// <param name="SlotsPerNode">transactions each node coordinates at once</param>
internal sealed record TwoPhaseCommitOptions(string Protocol, ClusterTopology Topology, ulong Seed, int SlotsPerNode = 4)
{
    /// <summary>Which partition holds a key; null: a hash over the topology's partitions.</summary>
    public IPartitionMap? Map { get; init; }
    public NetworkFaults Faults { get; init; } = NetworkFaults.Delay(TimeSpan.FromMicroseconds(50));
    /// <summary>How long a coordinator waits for an op's reply or a vote before it decides abort.</summary>
    public TimeSpan ReplyTimeout { get; init; } = TimeSpan.FromMilliseconds(20);
    /// <summary>How often a decision is sent again to a participant that has not acknowledged it.</summary>
    public TimeSpan Retransmit { get; init; } = TimeSpan.FromMilliseconds(2);
    /// <summary>How long a participant's op waits before it tries a held lock again (WaitDie, Silo's reads).</summary>
    public TimeSpan LockRetry { get; init; } = TimeSpan.FromMicroseconds(10);
    /// <summary>The unit of a conflict retry's random backoff, which grows with the retries.</summary>
    public TimeSpan Backoff { get; init; } = TimeSpan.FromMicroseconds(20);
    /// <summary>After the run's time, how long stopping may take: every transaction under way must end in it.</summary>
    public TimeSpan Drain { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>Null: nodes work in no time. Otherwise each node's workers and what a message and
    /// an op cost them (<see cref="NodeWorkers"/>).</summary>
    public CpuModel? Cpu { get; init; }

    /// <summary>Null: the run follows the network's delays. Otherwise a systematic tester's
    /// controlled choice, which picks the order of the next few deliveries and timeouts
    /// (<see cref="SimulatedTime"/>'s explorer): the run then covers what the tester chooses,
    /// and replays with its choices.</summary>
    public Func<int, int>? Explorer { get; init; }

    internal TwoPhaseCommitMutants Mutants { get; init; }

    internal TwoPhaseCommitOptions Validated()
    {
        if (SlotsPerNode is < 1 or > ClusterTxnId.MaxSlots)
            throw new ArgumentOutOfRangeException(nameof(SlotsPerNode), $"two-phase commit: {SlotsPerNode} slots a node, must be 1..{ClusterTxnId.MaxSlots}");
        if (Map is not null && Map.Partitions != Topology.Partitions)
            throw new ArgumentException($"two-phase commit: the map has {Map.Partitions} partitions, the topology {Topology.Partitions}", nameof(Map));
        foreach (var (name, t) in new[] { ("reply timeout", ReplyTimeout), ("retransmit", Retransmit), ("lock retry", LockRetry), ("backoff", Backoff) })
            if (t <= TimeSpan.Zero) throw new ArgumentOutOfRangeException(name, $"two-phase commit: {name} {t} must be positive");
        if (Faults.ShortestDelay <= TimeSpan.Zero)
            throw new ArgumentException($"two-phase commit: a simulated network needs every delay above 0 (shortest here: {Faults.ShortestDelay}), or its clock need never move", nameof(Faults));
        if (Drain < TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(Drain), $"two-phase commit: drain {Drain} is negative");
        Cpu?.Validated();
        return this;
    }
}

/// <summary>
/// Distributed NoWait, WaitDie and Silo: each partition's primary runs its share with the
/// single-node protocol as a participant (<see cref="OpByOpProtocol.TryOp"/>, prepare, commit,
/// abort), and each node's coordinators drive two-phase commit over the transport. This runs
/// the whole cluster in one thread on <see cref="SimulatedTime"/>: the same options and seed give
/// the same run, event for event, so a failing seed replays.
/// </summary>
internal static class TwoPhaseCommitSimulation
{
    /// <summary>The participant protocols two-phase commit runs over.</summary>
    public static IReadOnlyList<string> Protocols { get; } = ["NoWait", "WaitDie", "Silo"];

    /// <param name="duration">virtual time coordinators start transactions in; the drain follows</param>
    /// <param name="inspect">called with every partition's database (by partition) once the run
    /// has drained, before they are freed: where a test reads the final state</param>
    public static ClusterRunResult Run(IPartitionedWorkload workload, TwoPhaseCommitOptions options, TimeSpan duration,
                                       Action<IReadOnlyList<Database>>? inspect = null)
    {
        if (duration <= TimeSpan.Zero) throw new ArgumentOutOfRangeException(nameof(duration), $"two-phase commit: run time {duration} must be positive");
        using var cluster = new TwoPhaseCommitCluster(workload, options.Validated());
        var result = cluster.Run(duration);
        inspect?.Invoke(cluster.Databases);
        return result;
    }
}

/// <summary>One simulated cluster: the partitions' databases and participants, the nodes'
/// coordinators, the transport and the clock, and what the checks need afterwards.</summary>
internal sealed class TwoPhaseCommitCluster : ISlotCluster, IDisposable
{
    readonly Database[] _databases;
    readonly Participant[] _participants;
    readonly Coordinator[][] _coordinators;
    readonly Dictionary<long, bool> _decisions = new();
    readonly InProcessTransport _transport;
    readonly NodeWorkers? _workers;

    public TwoPhaseCommitCluster(IPartitionedWorkload workload, TwoPhaseCommitOptions options)
    {
        if (!TwoPhaseCommitSimulation.Protocols.Contains(options.Protocol))
            throw new ArgumentException($"two-phase commit over '{options.Protocol}': the participants' protocol must be one of {string.Join(", ", TwoPhaseCommitSimulation.Protocols)}", nameof(options));
        Options = options;
        Topology = options.Topology;
        Map = options.Map ?? new HashPartitionMap(Topology.Partitions);
        Time = new SimulatedTime(choose: options.Explorer);
        _transport = new InProcessTransport(Topology.Nodes, Time, options.Faults, options.Seed);
        _workers = options.Cpu is { } cpu ? new NodeWorkers(Topology.Nodes, cpu, Time) : null;
        _databases = new Database[Topology.Partitions];
        _participants = new Participant[Topology.Partitions];
        Dictionary<string, TxnProgram>? programs = null;
        for (int p = 0; p < Topology.Partitions; p++)
        {
            var db = _databases[p] = new Database();
            workload.Load(db, p, Map);
            PartitionedHistory.CheckSameSchema(workload, _databases, p);
            programs ??= workload.Programs.ToDictionary(x => x.Name);
            if (p == 0) CheckReplicatedReadOnly(workload);
            var protocol = (OpByOpProtocol)ProtocolRegistry.Create(options.Protocol, ProtocolSetup.For(db, 1));
            var catalogue = programs;
            _participants[p] = new Participant(Topology.PrimaryOf(p), p, protocol, new HistoryRecorder(1),
                name => catalogue.TryGetValue(name, out var program) ? program : throw new InvalidOperationException($"partition {p}: no program named {name}"),
                _transport, Time, options.LockRetry, options.Mutants);
        }
        _coordinators = new Coordinator[Topology.Nodes][];
        for (int n = 0; n < Topology.Nodes; n++)
        {
            _coordinators[n] = new Coordinator[options.SlotsPerNode];
            int[] homes = Topology.PrimariesOn(n).ToArray();
            for (int s = 0; s < options.SlotsPerNode; s++)
            {
                ulong seed = options.Seed * 0x9E3779B97F4A7C15UL + (ulong)(n * ClusterTxnId.MaxSlots + s + 1);
                _coordinators[n][s] = new Coordinator(n, s, this, workload.CreateSource(n * options.SlotsPerNode + s, seed, homes), seed, options.Mutants);
            }
            int node = n;
            _transport.Attach(n, e => Deliver(node, e));
        }
    }

    public TwoPhaseCommitOptions Options { get; }
    public IReadOnlyList<Database> Databases => _databases;
    public ClusterTopology Topology { get; }
    public IPartitionMap Map { get; }
    public SimulatedTime Time { get; }
    public ITransport Transport => _transport;
    public WorkerStats Stats { get; } = new();
    public TimeSpan Backoff => Options.Backoff;
    public long MultiPartitionCommits { get; set; }
    public List<string> Failures { get; } = new();
    /// <summary>Set once the run's time is over: coordinators start nothing new.</summary>
    public bool Stopping { get; private set; }

    /// <summary>Where a coordinator on <paramref name="node"/> reads a replicated table before its
    /// transaction uses any partition: the first primary on its node, or, on a node with none,
    /// a partition chosen by the node's number.</summary>
    public int HomePartition(int node) => Topology.PrimariesOn(node) is { Length: > 0 } primaries ? primaries[0] : node % Topology.Partitions;

    /// <summary>Refuses a program that writes a table the map replicates: its copies would part.</summary>
    void CheckReplicatedReadOnly(IPartitionedWorkload workload)
    {
        foreach (var program in workload.Programs)
            foreach (var op in program.Ops)
                if (Map.Replicates(op.TableId) && op.Mode != AccessMode.Read)
                    throw new ArgumentException($"two-phase commit: program {program.Name}, op {op.Name} writes table {_databases[0][op.TableId].Name}, which the partition map keeps on every partition", nameof(workload));
    }

    /// <summary>A coordinator's decision, the log the atomicity check reads.</summary>
    public void Decided(long txn, bool commit) => _decisions.Add(txn, commit);

    void Deliver(int node, Envelope e)
    {
        if (_workers is null) Handle(node, e);
        else _workers.Run(e, e.Message is OpRequest or PrepareRequest or DecisionRequest { Commit: true } ? 1 : 0, m => Handle(node, m));
    }

    void Handle(int node, Envelope e)
    {
        switch (e.Message)
        {
            case OpRequest r: ToParticipant(node, r.Partition, e); break;
            case PrepareRequest r: ToParticipant(node, r.Partition, e); break;
            case DecisionRequest r: ToParticipant(node, r.Partition, e); break;
            case OpReply r: ToCoordinator(node, r.Txn, e); break;
            case VoteReply r: ToCoordinator(node, r.Txn, e); break;
            case DecisionAck r: ToCoordinator(node, r.Txn, e); break;
            default: throw new InvalidOperationException($"node {node}: a message of unknown type {e.Message.GetType().Name} from node {e.From}");
        }
    }

    void ToParticipant(int node, int partition, Envelope e)
    {
        if (Topology.PrimaryOf(partition) != node)
            throw new InvalidOperationException($"node {node}: a request for partition {partition}, whose primary is node {Topology.PrimaryOf(partition)}");
        _participants[partition].Receive(e.From, e.Message);
    }

    void ToCoordinator(int node, long txn, Envelope e)
    {
        if (ClusterTxnId.NodeOf(txn) != node)
            throw new InvalidOperationException($"node {node}: a reply for {ClusterTxnId.Describe(txn)}, coordinated by node {ClusterTxnId.NodeOf(txn)}");
        _coordinators[node][ClusterTxnId.SlotOf(txn)].Receive(e.Message);
    }

    public ClusterRunResult Run(TimeSpan duration)
    {
        foreach (var node in _coordinators)
            foreach (var c in node) c.StartNext();
        Time.RunUntil(duration);
        Stopping = true;
        Time.RunUntil(duration + Options.Drain);
        return new ClusterRunResult(Stats, duration, PartitionedHistory.Merge(_participants.Select(p => new[] { p.History })),
                                    PartitionedHistory.CheckAtomicity(_participants.Select(p => p.Outcomes), _decisions),
                                    PartitionedHistory.Unfinished(_participants.Select(p => p.Unfinished), _coordinators.SelectMany(n => n)), Failures,
                                    Time.Fired, _transport.Sent, _transport.Dropped, _transport.Duplicated, MultiPartitionCommits);
    }



    public void Dispose()
    {
        foreach (var db in _databases) db?.Dispose();
    }
}
