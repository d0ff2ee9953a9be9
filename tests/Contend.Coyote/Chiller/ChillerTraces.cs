using System.Buffers.Binary;
using System.Globalization;
using System.Text;
using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.Chiller;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Tests.TwoPhaseCommit;

namespace Contend.Coyote.Chiller;

/// <summary>
/// Trace validation of Chiller (specs/Chiller/ChillerTrace.tla): runs the simulated cluster on a
/// small transfer workload with the observer on, one run per seed, and writes each recorded run as
/// a TLA+ module and its TLC config, with a manifest entry for specs/check. A run of the protocol
/// must be a behaviour of Spec (TLC must violate TraceMatchedReachable); a twin's run must not.
/// Each case takes the first seed whose run shows what the case is about, so a trace cannot pass
/// by exercising nothing.
/// </summary>
/// <remarks>
/// The workload keeps to where the engine and the spec take the same steps (the spec module's
/// header says why): two hot accounts on partition 0, the inner host of every transfer; two cold
/// ones on partition 1, the outer region, one op there at most; a debit that may refuse (the
/// spec's MayAbort, at the inner host); no body outside the inner region that may abort.
/// </remarks>
public static class ChillerTraces
{
    sealed record TraceCase(string Name, int Replicas, ChillerMutants Mutant, ChillerCrash[] Crashes, string Shows,
                            Func<List<ChillerEvent>, bool> Wanted, IReadOnlyList<int>? CoordinatorNodes = null) : TraceFiles.ITraceCase
    {
        public bool Twin => Mutant != ChillerMutants.None;
    }

    static bool Has(List<ChillerEvent> events, ChillerStep step) => events.Any(e => e.Step == step);

    /// <summary>A transaction committed that locked a record on the outer partition.</summary>
    static bool TwoRegionCommit(List<ChillerEvent> events) =>
        events.Where(e => e.Step == ChillerStep.OuterCommit).Any(e => events.Any(d => d.Txn == e.Txn && d.Step == ChillerStep.CoordFinish));

    // Declared before the cases, which read it as they are built.
    static readonly ChillerCrash PrimaryStopsAfterItsSecondInnerRegion = new(ChillerStep.InnerExecute, 2, Node: 0);

    /// <summary>With three copies a partition on nodes 0-5, node 6 only coordinates.</summary>
    const int CoordinatorNode = 6;

    /// <summary>The attempts a node that only coordinates has under way when it stops: those of
    /// its slots seen before the crash and not finished (the spec's coordinators that crash).</summary>
    static List<long> UnderWay(List<ChillerEvent> events, int crash)
    {
        int node = events[crash].Node;
        var seen = events.Take(crash).Where(e => e.Txn != 0 && ClusterTxnId.NodeOf(e.Txn) == node).Select(e => e.Txn).Distinct();
        return seen.Where(t => !events.Take(crash).Any(e => e.Txn == t && e.Step == ChillerStep.CoordFinish)).ToList();
    }

    /// <summary>
    /// The coordinator node stopped, at most R - 1 = 2 of its attempts under way (the spec's
    /// MaxCrashes), one of them decided by RecoverCoordinator and committed or released by a share
    /// that asked; and nothing the stopped coordinator sent landed as a step of its own after the
    /// crash (a lock granted or denied, an outcome applied), which the spec cannot follow
    /// (ChillerTrace.tla's header). <paramref name="late"/>: the steps that count as such.
    /// </summary>
    static bool CoordinatorCrashShown(List<ChillerEvent> events, Func<ChillerEvent, bool> late, bool twin)
    {
        int crash = events.FindIndex(e => e.Step is null && e.Node == CoordinatorNode);
        if (crash < 0) return false;
        var underWay = UnderWay(events, crash).ToHashSet();
        if (underWay.Count is 0 or > 2) return false;
        for (int i = crash + 1; i < events.Count; i++)
        {
            var e = events[i];
            if (!underWay.Contains(e.Txn) || !late(e)) continue;
            if (!events.Take(i).Skip(crash).Any(d => d.Txn == e.Txn && d.Step == ChillerStep.RecoverCoordinator)) return false;
        }
        var after = events.Skip(crash).ToList();
        bool shared = after.Any(e => underWay.Contains(e.Txn) && e.Step is ChillerStep.OuterCommit or ChillerStep.OuterRelease);
        return shared && (twin || after.Any(e => underWay.Contains(e.Txn) && e.Step == ChillerStep.RecoverCoordinator));
    }

    static bool CoordinatorSideStep(ChillerEvent e) =>
        e.Step is ChillerStep.CoordLockOuter or ChillerStep.CoordLockDenied or ChillerStep.OuterCommit or ChillerStep.OuterRelease;

    static readonly TraceCase[] Cases =
    [
        new("ChillerTraceTransfers", 2, ChillerMutants.None, [],
            "two-region commits, an inner region rejected by its check or a held lock, an outer lock denied",
            e => TwoRegionCommit(e) && Has(e, ChillerStep.InnerReject) && Has(e, ChillerStep.CoordLockDenied) && Has(e, ChillerStep.CoordLearnAbort)),
        new("ChillerTraceThreeCopies", 3, ChillerMutants.None, [],
            "two replicas of each partition acknowledge and apply in sequence order; the coordinator waits for both",
            e => TwoRegionCommit(e) && Has(e, ChillerStep.OuterRelease)),
        new("ChillerTraceReplicaCrash", 2, ChillerMutants.None, [new ChillerCrash(ChillerStep.ReplicaReceive, 3, Node: 2)],
            "partition 0's replica stops after its third receipt; RecoverReplica; the host, left alone, commits and notifies (D6)",
            e => e.Any(x => x.Step is null) && Has(e, ChillerStep.RecoverReplica)
                 && e.SkipWhile(x => x.Step != ChillerStep.RecoverReplica).Any(x => x.Step == ChillerStep.CoordFinish) && TwoRegionCommit(e)),
        // Coordinators only on partition 1's primary (node 1), so that partition 0's primary (node 0)
        // stopping is one crash, the spec's Crash of one copy.
        new("ChillerTracePrimaryCrash", 2, ChillerMutants.None, [PrimaryStopsAfterItsSecondInnerRegion],
            "partition 0's primary, every transfer's inner host, stops after running an inner region; CloseChannels, DecidePending, ElectPrimary, RecoveryCommit of what its replica received; transfers go on at the new primary",
            e => Has(e, ChillerStep.RecoveryCommit) && e.SkipWhile(x => x.Step != ChillerStep.ElectPrimary).Any(x => x.Step == ChillerStep.InnerCommit)
                 && e.SkipWhile(x => x.Step != ChillerStep.ElectPrimary).Any(x => x.Step == ChillerStep.CoordFinish),
            CoordinatorNodes: [1]),
        new("ChillerTracePrimaryCrashThreeCopies", 3, ChillerMutants.None, [PrimaryStopsAfterItsSecondInnerRegion],
            "the same crash with two replicas: the survivors gather by messages (GatherPending as each copy takes an entry it lacked), the candidate decides, is elected and serves",
            e => Has(e, ChillerStep.GatherPending) && Has(e, ChillerStep.RecoveryCommit)
                 && e.SkipWhile(x => x.Step != ChillerStep.ElectPrimary).Any(x => x.Step == ChillerStep.CoordFinish),
            CoordinatorNodes: [1]),
        // Coordinators only on node 6, whose crash is the spec's crash of its attempts' coordinators.
        new("ChillerTraceCoordinatorCrash", 3, ChillerMutants.None, [new ChillerCrash(ChillerStep.CoordLearnCommit, 1, Node: CoordinatorNode)],
            "the coordinator node stops after its first CoordLearnCommit, before the outcome goes out; CloseChannels; the outer share asks the inner host, which takes over from its own log (RecoverCoordinator), and the share commits",
            e => CoordinatorCrashShown(e, CoordinatorSideStep, twin: false), CoordinatorNodes: [CoordinatorNode]),
        new("ChillerTraceCoordinatorCrashAfterDelegate", 3, ChillerMutants.None, [new ChillerCrash(ChillerStep.CoordDelegate, 1, Node: CoordinatorNode)],
            "the coordinator node stops after its first CoordDelegate; the inner host runs the delegated region, and, asked by the outer share, takes over and learns the outcome from its own log",
            e => CoordinatorCrashShown(e, CoordinatorSideStep, twin: false), CoordinatorNodes: [CoordinatorNode]),
        new("ChillerTraceTwinOuterParticipantTakesOver", 3, ChillerMutants.OuterParticipantTakesOver, [new ChillerCrash(ChillerStep.CoordLearnCommit, 1, Node: CoordinatorNode)],
            "twin: the outer share whose coordinator is cut off releases on its own what the inner host committed",
            e => CoordinatorCrashShown(e, x => x.Step is ChillerStep.CoordLockOuter or ChillerStep.CoordLockDenied or ChillerStep.OuterCommit, twin: true)
                 && e.Any(x => x.Step == ChillerStep.OuterRelease && e.Any(i => i.Txn == x.Txn && i.Step == ChillerStep.InnerCommit)),
            CoordinatorNodes: [CoordinatorNode]),
        new("ChillerTraceTwinDecideBeforeGather", 3, ChillerMutants.DecideBeforeGather, [PrimaryStopsAfterItsSecondInnerRegion],
            "twin: the candidate decides from its own log while the other survivor holds a pending entry it lacks",
            DecidesWithoutAnEntryASurvivorHolds, CoordinatorNodes: [1]),
        new("ChillerTraceTwinHostCommitsOnSend", 2, ChillerMutants.HostCommitsOnSend, [],
            "twin: the inner host commits before its replica has the entry",
            e => e.Any(c => c.Step == ChillerStep.InnerCommit
                            && !e.TakeWhile(x => x != c).Any(x => x.Step == ChillerStep.ReplicaReceive && x.Txn == c.Txn && x.Partition == c.Partition))),
        new("ChillerTraceTwinOuterReleasesEarly", 2, ChillerMutants.OuterReleasesEarly, [],
            "twin: an outer lock let go once its op has run, and taken by another transaction before the first ends",
            LockedWhileHeld),
    ];

    /// <summary>A recovery decides while a survivor other than the deciding copy holds an entry
    /// the deciding copy has neither received nor gathered.</summary>
    static bool DecidesWithoutAnEntryASurvivorHolds(List<ChillerEvent> events)
    {
        int crash = events.FindIndex(e => e.Step is null);
        int decide = events.FindIndex(e => e.Step == ChillerStep.DecidePending);
        if (crash < 0 || decide < crash) return false;
        var crashed = events[crash].Node;
        var before = events.Take(decide).Where(e => e.Step is ChillerStep.ReplicaReceive or ChillerStep.GatherPending && e.Partition == 0).ToList();
        int decider = events[decide].Node;
        return before.Any(e => e.Node != decider && e.Node != crashed && !before.Any(d => d.Node == decider && d.Txn == e.Txn));
    }

    /// <summary>Some transaction locks an outer record another still holds as the spec counts it
    /// (from its CoordLockOuter to its OuterCommit or OuterRelease).</summary>
    static bool LockedWhileHeld(List<ChillerEvent> events)
    {
        var holder = new Dictionary<long, long>();
        foreach (var e in events)
        {
            if (e.Step == ChillerStep.CoordLockOuter)
                foreach (var r in e.Reads)
                {
                    if (holder.TryGetValue(r.Key, out long other) && other != e.Txn) return true;
                    holder[r.Key] = e.Txn;
                }
            else if (e.Step is ChillerStep.OuterCommit or ChillerStep.OuterRelease)
                foreach (var k in holder.Where(h => h.Value == e.Txn).Select(h => h.Key).ToList()) holder.Remove(k);
        }
        return false;
    }

    const int MaxSeeds = 200;

    /// <summary>Records every case into <paramref name="dir"/>, adding each one's manifest entry to
    /// <paramref name="models"/>; the number of cases no seed showed.</summary>
    public static int Write(string dir, TextWriter log, List<object> models) =>
        TraceFiles.WriteCases(dir, log, models, Cases, MaxSeeds, "seed", RunSeed, (c, run) => c.Wanted(run.Events), (c, seed, run) =>
        {
            var (module, steps, crashes) = Module(c, seed, run);
            return new TraceFiles.RecordedModule(module, Config(c, crashes), steps);
        });

    sealed record Recorded(List<ChillerEvent> Events, Dictionary<long, long[]> Args, ClusterTopology Topology);

    static Recorded RunSeed(TraceCase c, int seed)
    {
        var workload = new Transfers();
        var events = new List<ChillerEvent>();
        var args = new Dictionary<long, long[]>();
        var lookup = new ChillerLookup(Transfers.Map).MarkHot(0, 0).MarkHot(0, 1);
        int nodes = Math.Max(2 * c.Replicas, (c.CoordinatorNodes?.Max() ?? 0) + 1);
        var topology = new ClusterTopology(nodes, partitions: 2, c.Replicas, replicasApart: true);
        const int slots = 2;
        var options = new ChillerOptions(topology, lookup, (ulong)seed, SlotsPerNode: slots)
        {
            Faults = new NetworkFaults(new LinkFaults(TimeSpan.FromMicroseconds(10), TimeSpan.FromMicroseconds(40))),
            DetectionDelay = TimeSpan.FromMicroseconds(30),
            Drain = TimeSpan.FromMilliseconds(2),
            Crashes = c.Crashes,
            CoordinatorNodes = c.CoordinatorNodes,
            Mutants = c.Mutant,
            Observer = e =>
            {
                events.Add(e);
                // An attempt's keys: its slot's arguments while it runs (a slot runs one attempt at a time).
                if (e.Txn != 0 && !args.ContainsKey(e.Txn))
                    args[e.Txn] = workload.ArgsOf(ClusterTxnId.NodeOf(e.Txn) * slots + ClusterTxnId.SlotOf(e.Txn));
            },
        };
        var result = ChillerSimulation.Run(workload, options, TimeSpan.FromMicroseconds(300));
        // A correct protocol's run must pass its own checks before its trace means anything.
        if (!c.Twin && (result.Run.Atomicity.Count > 0 || result.Run.Unfinished.Count > 0 || result.ReplicaDisagreements.Count > 0))
            throw new InvalidOperationException($"{c.Name}, seed {seed}: {result.Run.Atomicity.Concat(result.Run.Unfinished).Concat(result.ReplicaDisagreements).First()}");
        return new Recorded(events, args, topology);
    }

    /// <param name="crashes">the spec's crashes the run stands for (a coordinator node's: one per attempt under way)</param>
    static string Config(TraceCase c, int crashes) => $"""
        CONSTANTS
            Txn <- TraceTxn
            Part <- TracePart
            Key <- TraceKey
            PartOf <- TracePartOf
            ReadSet <- TraceKeys
            WriteSet <- TraceKeys
            InnerOf <- TraceInner
            MayAbort <- TraceTxn
            R = {c.Replicas}
            MaxCrashes = {crashes}
            None = None
            InitVal = InitVal
            NoVal = NoVal
            TraceLog <- TraceEvents
        SPECIFICATION TraceSpec

        """ + (c.Twin
            ? "INVARIANT TraceMatchedReachable\n"
            : "INVARIANTS TypeOK TypeTraceOK AtomicityInv DurabilityInv ReplicaAgreementInv\nPROPERTIES NextStepProp SerializableRefinementProp\n");

    /// <summary>The steps the trace spec follows; an event of any other is a run the recorder
    /// cannot express, and fails it.</summary>
    static readonly HashSet<ChillerStep> Traced =
    [
        ChillerStep.CoordLockOuter, ChillerStep.CoordLockDenied, ChillerStep.CoordDelegate, ChillerStep.InnerExecute,
        ChillerStep.InnerReject, ChillerStep.InnerCommit, ChillerStep.ReplicaReceive, ChillerStep.ReplicaApply,
        ChillerStep.CoordLearnCommit, ChillerStep.CoordLearnAbort, ChillerStep.OuterCommit, ChillerStep.OuterRelease,
        ChillerStep.CoordFinish, ChillerStep.RecoverReplica, ChillerStep.CloseChannels, ChillerStep.GatherPending,
        ChillerStep.DecidePending, ChillerStep.ElectPrimary, ChillerStep.RecoveryCommit, ChillerStep.RecoverCoordinator,
    ];

    /// <summary>The run as a module extending ChillerTrace: attempts numbered 1, 2, ... in the order
    /// they first appear, partitions 0 and 1 (numbers, as transactions are: TLC compares the
    /// spec's nodes, pairs of either with a copy index), copies 1 (the primary) to R.</summary>
    static (string Module, int Steps, int Crashes) Module(TraceCase c, int seed, Recorded run)
    {
        var number = new Dictionary<long, int>();
        string Txn(long txn)
        {
            if (!number.TryGetValue(txn, out int n)) number[txn] = n = number.Count + 1;
            return n.ToString(CultureInfo.InvariantCulture);
        }
        string Part(int p) => p.ToString(CultureInfo.InvariantCulture);
        int CopyOf(int node) => run.Topology.CopiesOn(node).Single().Copy + 1;
        var innerOf = new Dictionary<long, int>();
        var lines = new List<string>();
        int crashes = 0;
        // A node that only coordinates: the attempts it had under way when it stopped.
        var coordinated = new Dictionary<int, List<long>>();
        for (int i = 0; i < run.Events.Count; i++)
        {
            var e = run.Events[i];
            string kind;
            bool copyless = e.Partition < 0 || !run.Topology.CopiesOn(e.Node).Any();
            if (e.Step is null && copyless)
            {
                var underWay = coordinated[e.Node] = UnderWay(run.Events, i);
                crashes += underWay.Count;
                lines.Add($"    [kind |-> \"CrashCoordinators\", t |-> 0, p |-> 0, c |-> 0, reads |-> {{}}, ts |-> {{{string.Join(", ", underWay.Select(Txn))}}}]");
                continue;
            }
            if (e.Step == ChillerStep.CloseChannels && copyless)
            {
                lines.Add($"    [kind |-> \"CloseCoordinators\", t |-> 0, p |-> 0, c |-> 0, reads |-> {{}}, ts |-> {{{string.Join(", ", coordinated[e.Node].Select(Txn))}}}]");
                continue;
            }
            if (e.Step is not { } step)
            {
                kind = "Crash";
                crashes++;
            }
            else
            {
                if (!Traced.Contains(step)) throw new InvalidOperationException($"{c.Name}, seed {seed}: the run took {step}, which the trace spec does not follow");
                if (step == ChillerStep.CoordDelegate) innerOf[e.Txn] = e.Partition;
                // An outer share's log entries are not the spec's inner replication (D3), nor gathered as pending.
                if (step is ChillerStep.ReplicaReceive or ChillerStep.ReplicaApply or ChillerStep.GatherPending
                    && (!innerOf.TryGetValue(e.Txn, out int inner) || inner != e.Partition)) continue;
                kind = step.ToString();
            }
            bool copyStep = e.Step is null or ChillerStep.ReplicaReceive or ChillerStep.ReplicaApply or ChillerStep.RecoverReplica
                                      or ChillerStep.CloseChannels or ChillerStep.GatherPending or ChillerStep.ElectPrimary
                                      or ChillerStep.RecoverCoordinator;
            string reads = string.Join(", ", e.Reads.Select(r => $"<<{r.Key}, {(r.Version == 0 ? "InitVal" : Txn(r.Version))}>>"));
            lines.Add($"    [kind |-> \"{kind}\", t |-> {(e.Txn == 0 ? "0" : Txn(e.Txn))}, p |-> {Part(e.Partition)}, " +
                      $"c |-> {(copyStep ? CopyOf(e.Node) : 0)}, reads |-> {{{reads}}}]");
        }
        var attempts = number.OrderBy(kv => kv.Value).ToList();
        var keys = attempts.SelectMany(a => run.Args[a.Key].Take(2)).Distinct().Order().ToList();
        string KeySet(long txn) => $"{{{string.Join(", ", run.Args[txn].Take(2).Distinct())}}}";
        var sb = new StringBuilder();
        TraceFiles.AppendTitle(sb, c.Name);
        sb.Append($"\\* Recorded by tests/Contend.Coyote (traces), not written by hand: {c.Shows}.\n");
        sb.Append($"\\* {c.Replicas} copies a partition, mutant {c.Mutant}, seed {seed}. Transactions are the engine's attempts:\n");
        foreach (var (txn, n) in attempts) sb.Append($"\\*   {n} = {ClusterTxnId.Describe(txn)}: transfer {run.Args[txn][2]} from account {run.Args[txn][0]} to {run.Args[txn][1]}\n");
        sb.Append("EXTENDS ChillerTrace\n\n");
        sb.Append($"TraceTxn == 1..{attempts.Count}\n");
        sb.Append("TracePart == {0, 1}\n");
        sb.Append($"TraceKey == {{{string.Join(", ", keys)}}}\n");
        sb.Append($"TracePartOf == [k \\in TraceKey |-> IF k < {Transfers.FirstCold} THEN 0 ELSE 1]\n");
        sb.Append("TraceKeys ==\n").Append(string.Join(" @@\n", attempts.Select(a => $"    ({a.Value} :> {KeySet(a.Key)})"))).Append('\n');
        // The debit's account is hot, on partition 0: every transfer's inner host.
        sb.Append("TraceInner == [t \\in TraceTxn |-> 0]\n");
        sb.Append("TraceEvents == <<\n").Append(string.Join(",\n", lines)).Append("\n>>\n");
        sb.Append(new string('=', 77)).Append('\n');
        return (sb.ToString(), lines.Count, crashes);
    }

    /// <summary>
    /// Transfers between four accounts: 0 and 1 hot, on partition 0; 2 and 3 cold, on partition 1.
    /// Every transfer debits a hot account (its check may refuse: the inner host's MayAbort) and
    /// credits another account, hot or cold (a body that never refuses).
    /// </summary>
    sealed class Transfers : IPartitionedWorkload
    {
        public const long FirstCold = 2;
        public static readonly IPartitionMap Map = new RangePartitionMap([FirstCold]);
        const long Opening = 4;
        TxnProgram? _transfer;
        readonly Dictionary<int, TxnContext> _slots = new();

        public string Name => "trace transfers";
        public IReadOnlyList<TxnProgram> Programs => [_transfer!];

        /// <summary>The arguments of the transaction a source's slot runs now.</summary>
        public long[] ArgsOf(int stream) => _slots[stream].Args.AsSpan(0, 3).ToArray();

        public void Load(Database db, int partition, IPartitionMap map)
        {
            var account = db.Create("account", sizeof(long), 8);
            for (long a = 0; a < 4; a++)
                if (map.PartitionOf(account.Id, a) == partition)
                    BinaryPrimitives.WriteInt64LittleEndian(account.Payload(account.Load(a)), Opening);
            // The bank's bodies; the credit here reads nothing of the debit, so it runs in step 3.
            _transfer = new ProgramBuilder("transfer", db, 3)
                .Write("debit", "account", KeySource.FromArg(0), Bank.Debit)
                .Write("credit", "account", KeySource.FromArg(1), Bank.Credit)
                .Build();
        }

        public ITransactionSource CreateSource(int stream, ulong seed, IReadOnlyList<int> homePartitions) =>
            new Source(this, stream, new Random((int)(seed ^ (seed >> 29))));

        sealed class Source(Transfers workload, int stream, Random random) : ITransactionSource
        {
            public TxnProgram Next(TxnContext ctx)
            {
                workload._slots[stream] = ctx;
                long from = random.Next(2), to;
                do to = random.Next(4); while (to == from);
                ctx.Args[0] = from;
                ctx.Args[1] = to;
                ctx.Args[2] = 1 + random.Next(4);
                return workload._transfer!;
            }
        }
    }
}
