using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols.Chiller;
using Contend.Tests.TwoPhaseCommit;
using Microsoft.Coyote.Random;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote.Chiller;

/// <summary>
/// Chiller's failure-free protocol with Coyote choosing the order of events: the cluster runs in
/// one simulated thread, and at every step Coyote's controlled random picks which of the next few
/// deliveries (lock requests, delegations, replication entries and their acks, notifications,
/// outcomes) comes first (<see cref="ChillerOptions.Explorer"/>), so each iteration is another
/// interleaving, and a failing one replays from Coyote's seed. A small bank over two nodes and
/// three partitions, two copies each (so every inner region is replicated), its accounts few and
/// two of them hot, a short run. Checked on every iteration: the merged history is serializable,
/// every partition ended each attempt as its coordinator decided, every transaction ended, every
/// replica holds what its primary holds, and the money is all there. The twins: an outer partition
/// that aborts unilaterally (atomicity), one that releases its locks in step 3 (serializability).
/// With a replica's crash: the replicas on nodes of their own, one stopped right after it receives
/// its first entry (in every schedule: asserted), and Coyote choosing where its failure's
/// detection and the new view fall among the other events; the twin host that waits for the
/// removed replica never ends its transactions, and, on a network that doubles messages, the twin
/// slot that takes an earlier attempt's notice as its own commits what never ran. With a primary's crash (<see cref="RunPrimaryCrash"/>):
/// its recovery, and the twins that commit on send, decide before gathering, or serve before
/// applying what they gathered. With a
/// coordinator's crash (<see cref="RunCoordinatorCrash"/>): its takeover by the inner partition's
/// primary, alone and with the node's own primary, and the twin outer participant that decides
/// alone. On every iteration the liveness monitors watch each step:
/// <see cref="InnerCommitReachesOuterPartitions"/> (an inner-committed transaction is committed at
/// every outer partition that granted it a lock) and <see cref="PendingTransactionsDecided"/> (every
/// attempt a participant heard of is decided); twins run without the end-of-run checks, one
/// monitor each, to show each fail on its own.
/// </summary>
public static class ChillerTests
{
    public static IEnumerable<CoyoteTest> All =>
    [
        new("Chiller", () => Run(ChillerMutants.None), Iterations: 2_500),
        // Or undecided (PendingTransactionsDecided): the share the outer partition dropped is never decided.
        new("ChillerTwinOuterAbortsUnilaterally", () => Run(ChillerMutants.OuterAbortsUnilaterally), CaughtBy: "atomicity", OrCaughtBy: nameof(PendingTransactionsDecided)),
        new("ChillerTwinOuterAbortsUnilaterallyMonitored", () => Run(ChillerMutants.OuterAbortsUnilaterally, endChecks: false, monitors: ChillerMonitors.InnerCommitReaches), CaughtBy: nameof(InnerCommitReachesOuterPartitions)),
        new("ChillerTwinOuterReleasesEarly", () => Run(ChillerMutants.OuterReleasesEarly), CaughtBy: "not serializable"),
        new("ChillerReplicaCrash", () => Run(ChillerMutants.None, crash: true), Iterations: 2_500),
        new("ChillerReplicaCrashTwinHostWaitsForRemovedReplica", () => Run(ChillerMutants.HostWaitsForRemovedReplica, crash: true), CaughtBy: "never ended"),
        new("ChillerReplicaCrashTwinHostWaitsForRemovedReplicaMonitored", () => Run(ChillerMutants.HostWaitsForRemovedReplica, crash: true, endChecks: false, monitors: ChillerMonitors.InnerCommitReaches), CaughtBy: nameof(InnerCommitReachesOuterPartitions)),
        new("ChillerReplicaCrashTwinHostWaitsForRemovedReplicaPending", () => Run(ChillerMutants.HostWaitsForRemovedReplica, crash: true, endChecks: false, monitors: ChillerMonitors.PendingDecided), CaughtBy: nameof(PendingTransactionsDecided)),
        new("ChillerPrimaryCrash", () => RunPrimaryCrash(ChillerMutants.None, ChillerStep.InnerExecute, replicas: 3), Iterations: 2_500),
        new("ChillerPrimaryCrashAfterCommit", () => RunPrimaryCrash(ChillerMutants.None, ChillerStep.InnerCommit, replicas: 2), Iterations: 2_500),
        new("ChillerPrimaryCrashTwinDecideBeforeGather", () => RunPrimaryCrash(ChillerMutants.DecideBeforeGather, ChillerStep.InnerExecute, replicas: 3), CaughtBy: "Chiller: "),
        new("ChillerPrimaryCrashTwinServesBeforeCatchUp", () => RunPrimaryCrash(ChillerMutants.ServesBeforeCatchUp, ChillerStep.InnerExecute, replicas: 3), CaughtBy: "Chiller: "),
        new("ChillerPrimaryCrashTwinHostCommitsOnSend", () => RunPrimaryCrash(ChillerMutants.HostCommitsOnSend, ChillerStep.InnerCommit, replicas: 2), CaughtBy: "Chiller: "),
        new("ChillerReplicaCrashTwinCoordinatorTakesUnaddressedNotice", () => Run(ChillerMutants.CoordinatorTakesUnaddressedNotice, crash: true, duplicate: 0.3), CaughtBy: "atomicity"),
        new("ChillerCoordinatorCrash", () => RunCoordinatorCrash(ChillerMutants.None, ChillerStep.CoordLearnCommit, withPrimary: false), Iterations: 2_500),
        new("ChillerCoordinatorCrashAfterDelegate", () => RunCoordinatorCrash(ChillerMutants.None, ChillerStep.CoordDelegate, withPrimary: false), Iterations: 2_500),
        new("ChillerCoordinatorAndPrimaryCrash", () => RunCoordinatorCrash(ChillerMutants.None, ChillerStep.CoordDelegate, withPrimary: true), Iterations: 2_500),
        // Also undecided (PendingTransactionsDecided): the participant released without the named node's decision.
        new("ChillerCoordinatorCrashTwinOuterParticipantTakesOver", () => RunCoordinatorCrash(ChillerMutants.OuterParticipantTakesOver, ChillerStep.CoordLearnCommit, withPrimary: false, monitors: ChillerMonitors.InnerCommitReaches), CaughtBy: "atomicity"),
    ];

    /// <summary>A coordinator's node stops right after its first <paramref name="after"/>: with
    /// <paramref name="withPrimary"/>, node 0, which also serves partition 0 (the default placement,
    /// coordinators where primaries serve); otherwise node 4, one of two nodes that only coordinate.
    /// Two copies of each partition on nodes of their own; Coyote orders the deliveries, the failure's
    /// detection and the takeover among the other events. Checked as above, and, with the primary,
    /// that its partition elected another.</summary>
    static Task RunCoordinatorCrash(ChillerMutants mutants, ChillerStep after, bool withPrimary, ChillerMonitors monitors = ChillerMonitors.Both)
    {
        ChillerLiveness.Register(monitors);
        var choices = Generator.Create();
        var bank = new Bank(accounts: 6, hot: 2);
        var lookup = new ChillerLookup(new HashPartitionMap(2)).MarkHot(0, 0).MarkHot(0, 1);
        var options = new ChillerOptions(new ClusterTopology(nodes: withPrimary ? 4 : 6, partitions: 2, replicas: 2, replicasApart: true), lookup, Seed: 5, SlotsPerNode: 3)
        {
            CoordinatorNodes = withPrimary ? null : [4, 5],
            Crashes = [new ChillerCrash(after, 1, Node: withPrimary ? 0 : 4)],
            DetectionDelay = TimeSpan.FromMicroseconds(10),
            Faults = NetworkFaults.Delay(TimeSpan.FromMicroseconds(20)),
            Drain = TimeSpan.FromMilliseconds(5),
            Explorer = choices.NextInteger,
            Observer = ChillerLiveness.Observe,
            Mutants = mutants,
        };
        long sum = 0;
        var r = ChillerSimulation.Run(bank, options, TimeSpan.FromMicroseconds(800), dbs => sum = Bank.Sum(dbs));
        Check(r, mutants, sum, bank);
        Specification.Assert(r.Crashed.Count == 1, $"the Chiller case tests nothing: the coordinator never took {after}, so it never stopped");
        Specification.Assert(!withPrimary || r.Steps[ChillerStep.ElectPrimary] == 1, "Chiller: the primary's crash was not recovered");
        return Task.CompletedTask;
    }

    /// <summary>The primary of the partition both hot accounts hash to (partition 1 under this map),
    /// which hosts every inner region on them, stops right after its first <paramref name="after"/>,
    /// the copies of each partition on nodes of their own, the
    /// coordinators on a node of their own; its channels close before its last messages have all
    /// landed, and Coyote orders the deliveries, the gathering and the election among the other
    /// events. Checked as above, and that the crash happened and was recovered. (Until 2026-11-27
    /// this stopped partition 0's primary, which hosts neither hot account, so most schedules had
    /// no crash at all.)</summary>
    static Task RunPrimaryCrash(ChillerMutants mutants, ChillerStep after, int replicas)
    {
        ChillerLiveness.Register();
        var choices = Generator.Create();
        var bank = new Bank(accounts: 6, hot: 2);
        var lookup = new ChillerLookup(new HashPartitionMap(2)).MarkHot(0, 0).MarkHot(0, 1);
        int hot = lookup.Map.PartitionOf(0, 0);
        Specification.Assert(lookup.Map.PartitionOf(0, 1) == hot, "the Chiller case tests nothing: the hot accounts hash to two partitions, and it needs one host for both");
        var topology = new ClusterTopology(nodes: 2 * replicas + 1, partitions: 2, replicas, replicasApart: true);
        var options = new ChillerOptions(topology, lookup, Seed: 5, SlotsPerNode: 4)
        {
            CoordinatorNodes = [2 * replicas],
            Crashes = [new ChillerCrash(after, 1, Node: topology.PrimaryOf(hot))],
            DetectionDelay = TimeSpan.FromMicroseconds(10),
            Faults = NetworkFaults.Delay(TimeSpan.FromMicroseconds(20)),
            Drain = TimeSpan.FromMilliseconds(5),
            Explorer = choices.NextInteger,
            Observer = ChillerLiveness.Observe,
            Mutants = mutants,
        };
        long sum = 0;
        var r = ChillerSimulation.Run(bank, options, TimeSpan.FromMicroseconds(800), dbs => sum = Bank.Sum(dbs));
        Check(r, mutants, sum, bank);
        Specification.Assert(r.Crashed.Count == 1, $"the Chiller case tests nothing: the primary never took {after}, so it never stopped");
        Specification.Assert(r.Steps[ChillerStep.ElectPrimary] == 1, "Chiller: the primary's crash was not recovered");
        return Task.CompletedTask;
    }

    /// <param name="duplicate">the probability that the network delivers a message twice</param>
    /// <param name="endChecks">false: only the liveness monitors judge the run (for the twins that
    /// show one can fail; the end-of-run checks would report them first)</param>
    /// <param name="monitors">the liveness monitors registered</param>
    static Task Run(ChillerMutants mutants, bool crash = false, double duplicate = 0, bool endChecks = true, ChillerMonitors monitors = ChillerMonitors.Both)
    {
        ChillerLiveness.Register(monitors);
        var choices = Generator.Create();
        var bank = new Bank(accounts: 6, hot: 2);
        var lookup = new ChillerLookup(new HashPartitionMap(3)).MarkHot(0, 0).MarkHot(0, 1);
        // With a crash, partition p's replica is on node 3 + p, a node of its own.
        var topology = crash ? new ClusterTopology(nodes: 6, partitions: 3, replicas: 2, replicasApart: true) : new ClusterTopology(nodes: 2, partitions: 3, replicas: 2);
        var options = new ChillerOptions(topology, lookup, Seed: 5, SlotsPerNode: 2)
        {
            Crashes = crash ? [new ChillerCrash(ChillerStep.ReplicaReceive, 1, Node: 3)] : [],
            DetectionDelay = TimeSpan.FromMicroseconds(100),
            Faults = new NetworkFaults(new LinkFaults(TimeSpan.FromMicroseconds(20), TimeSpan.FromMicroseconds(20), Duplicate: duplicate)),
            Drain = TimeSpan.FromMilliseconds(5),
            Explorer = choices.NextInteger,
            Observer = ChillerLiveness.Observe,
            Mutants = mutants,
        };
        long sum = 0;
        var r = ChillerSimulation.Run(bank, options, TimeSpan.FromMicroseconds(600), dbs => sum = Bank.Sum(dbs));
        if (!endChecks) return Task.CompletedTask;
        Check(r, mutants, sum, bank);
        Specification.Assert(r.Crashed.Count == (crash ? 1 : 0), "the Chiller case tests nothing: the replica never received an entry, so it never stopped");
        return Task.CompletedTask;
    }

    static void Check(ChillerRunResult r, ChillerMutants mutants, long sum, Bank bank)
    {
        var run = r.Run;
        Specification.Assert(run.Atomicity.Count == 0, $"Chiller: atomicity: {run.Atomicity.FirstOrDefault()}");
        Specification.Assert(run.Unfinished.Count == 0, $"Chiller: a transaction never ended: {run.Unfinished.FirstOrDefault()}");
        Specification.Assert(run.Failures.Count == 0, $"Chiller: {run.Failures.FirstOrDefault()}");
        Specification.Assert(r.ReplicaDisagreements.Count == 0, $"Chiller: replicas disagree: {r.ReplicaDisagreements.FirstOrDefault()}");
        var report = SerializabilityChecker.Check(run.History);
        Specification.Assert(report.Serializable, $"Chiller: history not serializable: {report.Anomalies.FirstOrDefault()?.Description}");
        Specification.Assert(mutants != ChillerMutants.None || sum == bank.LoadedSum, $"Chiller: the accounts hold {sum}, not {bank.LoadedSum}");
        Specification.Assert(run.Stats.Commits > 0, "the Chiller case tests nothing: nothing committed");
        Specification.Assert(r.Steps[ChillerStep.RecoverReplica] + r.Steps[ChillerStep.CloseChannels] == r.Crashed.Count, $"Chiller: {r.Crashed.Count} crashes, {r.Steps[ChillerStep.RecoverReplica] + r.Steps[ChillerStep.CloseChannels]} recovered");
    }
}
