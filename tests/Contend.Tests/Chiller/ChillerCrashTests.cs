using System.Text.RegularExpressions;
using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Chiller;
using Contend.Tests.TwoPhaseCommit;
using Xunit.Abstractions;

namespace Contend.Tests.Chiller;

/// <summary>
/// Chiller's crash points: the catalogue in the code (<see cref="ChillerStep"/>) is the spec's list
/// of node actions, name for name; and the crash matrix: a node stopped right after each step it
/// takes, in each role (a replica, a primary, a coordinator, a primary that coordinates), with two
/// and with three copies; and with three copies any two crashes (every pair of crash points on two
/// nodes, and a crash in the recovery another one starts). Each case is one deterministic run
/// (seeded transport, simulated clock) that checks what the spec's invariants ask of the engine's
/// state: atomicity, every transaction ended, replica agreement among the copies that serve
/// (durability: what committed is on each), the merged history serializable, the money there.
/// Each twin of a spec mutant that applies to recovery must break one of them.
/// </summary>
public class ChillerCrashTests(ITestOutputHelper output)
{
    /// <summary>The node actions of Chiller.tla: the operators its Protocol names whose definitions
    /// change a variable (a primed name), which leaves out sets such as Copies(p).</summary>
    static IReadOnlySet<string> SpecActions()
    {
        string spec = File.ReadAllText(Path.Combine(Processes.Root, "specs", "Chiller", "Chiller.tla"));
        int from = spec.IndexOf("\nProtocol ==", StringComparison.Ordinal), to = spec.IndexOf("\nNext ==", from, StringComparison.Ordinal);
        Assert.True(from > 0 && to > from, "Chiller.tla: no Protocol == ... Next == block");
        return Regex.Matches(spec[from..to], @"\b([A-Z]\w+)\(").Select(m => m.Groups[1].Value).Where(name =>
        {
            var definition = Regex.Match(spec, $@"\n{name}\([^)]*\) ==(.*?)\n\s*\n", RegexOptions.Singleline);
            return definition.Success && definition.Groups[1].Value.Contains('\'');
        }).ToHashSet();
    }

    [Fact]
    public void The_catalogue_of_crash_points_is_the_specs_list_of_actions()
    {
        var spec = SpecActions();
        var code = Enum.GetNames<ChillerStep>().ToHashSet();
        Assert.True(spec.SetEquals(code), $"only in the spec: {string.Join(", ", spec.Except(code))}; only in the code: {string.Join(", ", code.Except(spec))}");
        Assert.Equal(21, spec.Count);
        // A crash after any step is recovered but after the cluster manager's own two.
        Assert.Equal([ChillerStep.RecoverReplica, ChillerStep.CloseChannels], Enum.GetValues<ChillerStep>().Except(ChillerCrashPoints.Recovered));
    }

    static readonly TimeSpan RunFor = TimeSpan.FromMilliseconds(40);

    static ChillerOptions Options(int replicas, params ChillerCrash[] crashes)
    {
        var lookup = new ChillerLookup(new HashPartitionMap(2));
        for (long a = 0; a < 4; a++) lookup.MarkHot(0, a);
        return new ChillerOptions(new ClusterTopology(nodes: 2 * replicas, partitions: 2, replicas, replicasApart: true), lookup, Seed: 14)
        {
            Faults = new NetworkFaults(new LinkFaults(TimeSpan.FromMicroseconds(20), TimeSpan.FromMicroseconds(80), Duplicate: 0.02, Reorder: 0.1)),
            DetectionDelay = TimeSpan.FromMicroseconds(300),
            Crashes = crashes,
        };
    }

    /// <summary>Replicas apart: partition p's copy r is on node 2r + p, so partition 0's replicas
    /// are nodes 2 and (with three copies) 4; partition 1's, 3 and 5.</summary>
    public static TheoryData<int, string, int, int[]> Cases()
    {
        var data = new TheoryData<int, string, int, int[]>();
        foreach (var step in new[] { ChillerStep.ReplicaReceive, ChillerStep.ReplicaApply })
            foreach (int occurrence in new[] { 1, 25, 120 })
            {
                data.Add(2, step.ToString(), occurrence, [2]);
                data.Add(3, step.ToString(), occurrence, [3]);
                data.Add(3, step.ToString(), occurrence, [2, 4]); // both replicas of partition 0
            }
        return data;
    }

    [Theory]
    [MemberData(nameof(Cases))]
    public void A_replica_stopped_after_a_step_leaves_every_property_intact(int replicas, string step, int occurrence, int[] nodes)
    {
        var after = Enum.Parse<ChillerStep>(step);
        // The second replica of a pair stops a few of its own steps later than the first.
        var crashes = nodes.Select((n, i) => new ChillerCrash(after, occurrence + 3 * i, n)).ToArray();
        var bank = new Bank(accounts: 100, hot: 4);
        long sum = 0;
        var result = ChillerSimulation.Run(bank, Options(replicas, crashes), RunFor, dbs => sum = Bank.Sum(dbs));
        var r = result.Run;
        output.WriteLine($"R={replicas} after {step} #{occurrence} on node {string.Join(" and ", nodes)}: crashed {string.Join(", ", result.Crashed.Select(c => $"node {c.Node} at {c.At.TotalMicroseconds:F0} us"))}; " +
                         $"{r.Stats.Commits} commits, {r.Stats.TotalAborts} aborts, {result.LogEntries} log entries, RecoverReplica {result.Steps[ChillerStep.RecoverReplica]}");
        Assert.Equal(nodes, result.Crashed.Select(c => c.Node).Order());
        Assert.Equal(nodes.Length, result.Steps[ChillerStep.RecoverReplica]);
        AssertEveryPropertyHolds(result, bank, sum);
    }

    /// <summary>The twin of the spec's ChillerMutantWaitForCutOffReplica: a host that keeps waiting
    /// for a removed replica's acknowledgement never commits what it replicated after the crash.</summary>
    [Fact]
    public void Twin_host_that_waits_for_a_removed_replica_leaves_transactions_unended()
    {
        var options = Options(2, new ChillerCrash(ChillerStep.ReplicaReceive, 40)) with { Mutants = ChillerMutants.HostWaitsForRemovedReplica, Drain = TimeSpan.FromMilliseconds(5) };
        var result = ChillerSimulation.Run(new Bank(100, 4), options, RunFor);
        output.WriteLine(result.Run.Unfinished.FirstOrDefault() ?? "(none)");
        Assert.NotEmpty(result.Run.Unfinished);
    }

    /// <summary>What the spec's invariants ask of the engine's state after a run with crashes:
    /// atomicity, every transaction ended, no failure, replica agreement among the copies that serve
    /// (with a live primary, durability), a serializable merged history, the money; and the crashes
    /// came early enough that work went on after them.</summary>
    static void AssertEveryPropertyHolds(ChillerRunResult result, Bank bank, long sum)
    {
        var r = result.Run;
        Assert.Empty(r.Atomicity);
        Assert.Empty(r.Unfinished);
        Assert.Empty(r.Failures);
        Assert.Empty(result.ReplicaDisagreements);
        var report = SerializabilityChecker.Check(r.History);
        Assert.True(report.Serializable, string.Join("\n", report.Anomalies.Select(a => a.Description)));
        Assert.Equal(bank.LoadedSum, sum);
        var lastCrash = result.Crashed.Max(c => c.At);
        Assert.True(lastCrash < RunFor / 2, $"the last crash came at {lastCrash}, late in the run");
        Assert.True(result.InnerCommits > 100, $"only {result.InnerCommits} inner commits");
    }

    /// <summary>Partition p's copy r on node 2r + p, and every coordinator on the last node, 2R, so
    /// that a primary can fail without taking a coordinator with it.</summary>
    static ChillerOptions PrimaryOptions(int replicas, params ChillerCrash[] crashes) => Options(replicas, crashes) with
    {
        Topology = new ClusterTopology(nodes: 2 * replicas + 1, partitions: 2, replicas, replicasApart: true),
        CoordinatorNodes = [2 * replicas],
        SlotsPerNode = 8,
        // Shorter than a message's flight: the crashed primary's last entries reach some survivors
        // and are dropped on the way to others when its channels close, so recovery must gather.
        DetectionDelay = TimeSpan.FromMicroseconds(30),
    };

    /// <summary>The steps a primary takes, as outer participant and as inner host.</summary>
    static readonly ChillerStep[] PrimarySteps =
    [
        ChillerStep.CoordLockOuter, ChillerStep.CoordLockDenied, ChillerStep.InnerExecute, ChillerStep.InnerReject,
        ChillerStep.InnerCommit, ChillerStep.OuterCommit, ChillerStep.OuterRelease,
    ];

    /// <summary>Partition 0's primary (node 0) stopped after each of its steps, early and later,
    /// with two and three copies (a second crash in its recovery is in the pair matrix).</summary>
    public static TheoryData<int, string, int> PrimaryCases()
    {
        var data = new TheoryData<int, string, int>();
        foreach (var step in PrimarySteps)
            foreach (int occurrence in new[] { 1, 8 })
            {
                data.Add(2, step.ToString(), occurrence);
                data.Add(3, step.ToString(), occurrence);
            }
        return data;
    }

    [Theory]
    [MemberData(nameof(PrimaryCases))]
    public void A_primary_stopped_after_a_step_is_recovered_and_every_property_holds(int replicas, string step, int occurrence)
    {
        var result = RunWithCrashes(PrimaryOptions(replicas, new ChillerCrash(Enum.Parse<ChillerStep>(step), occurrence, Node: 0)), $"R={replicas} after {step} #{occurrence}");
        Assert.Equal(0, result.Crashed.Single().Node);
        Assert.Equal(1, result.Steps[ChillerStep.CloseChannels]);
        Assert.Equal(1, result.Steps[ChillerStep.ElectPrimary]);
    }

    /// <summary>Fencing: the crashed primary's last messages, still on their way when the
    /// receivers learn the view that cuts it off, are refused by each receiver's own view (the
    /// epoch check, D2), and the run keeps every property.</summary>
    [Fact]
    public void A_cut_off_primarys_late_messages_are_refused_by_each_receivers_view()
    {
        var bank = new Bank(accounts: 100, hot: 4);
        long sum = 0;
        var result = ChillerSimulation.Run(bank, PrimaryOptions(3, new ChillerCrash(ChillerStep.InnerExecute, 1, Node: 0)), RunFor, dbs => sum = Bank.Sum(dbs));
        output.WriteLine($"{result.Fenced} messages fenced");
        Assert.True(result.Fenced > 0, "no message of the cut-off primary was in flight: the case tests nothing");
        AssertEveryPropertyHolds(result, bank, sum);
    }

    /// <summary>The twins of the spec's ChillerMutantCommitBeforeAcks and ChillerMutantDecideBeforeGather,
    /// each on runs where the crashed primary's last entries reached some survivors only.</summary>
    [Theory]
    [InlineData(nameof(ChillerMutants.HostCommitsOnSend), 2, nameof(ChillerStep.InnerCommit))]
    [InlineData(nameof(ChillerMutants.DecideBeforeGather), 3, nameof(ChillerStep.InnerExecute))]
    [InlineData(nameof(ChillerMutants.ServesBeforeCatchUp), 3, nameof(ChillerStep.InnerExecute))]
    public void Twin_recovery_that_loses_a_received_entry_is_caught(string mutant, int replicas, string step)
    {
        int caught = 0;
        foreach (int occurrence in new[] { 1, 2, 3, 4, 5, 6, 7, 8 })
        {
            var options = PrimaryOptions(replicas, new ChillerCrash(Enum.Parse<ChillerStep>(step), occurrence, Node: 0)) with
            {
                Mutants = Enum.Parse<ChillerMutants>(mutant),
                Drain = TimeSpan.FromMilliseconds(10),
            };
            var result = ChillerSimulation.Run(new Bank(100, 4), options, RunFor);
            var broken = result.Run.Atomicity.Concat(result.ReplicaDisagreements).Concat(result.Run.Unfinished).ToList();
            if (!SerializabilityChecker.Check(result.Run.History).Serializable) broken.Add("not serializable");
            output.WriteLine($"{mutant} after {step} #{occurrence}: {broken.FirstOrDefault() ?? "(nothing)"}");
            if (broken.Count > 0) caught++;
        }
        Assert.True(caught > 0, $"{mutant}: no run of eight broke a property");
    }

    /// <summary>Partition p's copy r on node 2r + p, and the coordinators on two nodes of their
    /// own, 2R and 2R + 1, so that one can fail and the other go on.</summary>
    static ChillerOptions CoordinatorOptions(int replicas, params ChillerCrash[] crashes) => PrimaryOptions(replicas, crashes) with
    {
        Topology = new ClusterTopology(nodes: 2 * replicas + 2, partitions: 2, replicas, replicasApart: true),
        CoordinatorNodes = [2 * replicas, 2 * replicas + 1],
    };

    /// <summary>The steps a coordinator takes itself.</summary>
    static readonly ChillerStep[] CoordinatorSteps =
        [ChillerStep.CoordDelegate, ChillerStep.CoordLearnCommit, ChillerStep.CoordLearnAbort, ChillerStep.CoordFinish];

    /// <summary>A coordinator's node (2R) stopped after each of its steps, early and later, with two
    /// and three copies; then the two crashes in a row the spec's ChillerOneTwoCrashes checks: the
    /// node that took the coordinator over (an inner host) stopped right after RecoverCoordinator;
    /// and a primary's failure that fails a transaction before delegation, its coordinator stopped
    /// right after it learns so (CoordLearnParticipantFailed).</summary>
    public static TheoryData<int, string, int, string> CoordinatorCases()
    {
        var data = new TheoryData<int, string, int, string>();
        foreach (var step in CoordinatorSteps)
            foreach (int occurrence in new[] { 1, 8 })
            {
                data.Add(2, step.ToString(), occurrence, "");
                data.Add(3, step.ToString(), occurrence, "");
            }
        // With two copies (three are in the pair matrix), occurrences after which some partition
        // holds a share that needs the outcome.
        data.Add(2, nameof(ChillerStep.CoordLearnCommit), 3, nameof(ChillerStep.RecoverCoordinator));
        data.Add(2, nameof(ChillerStep.CoordDelegate), 6, nameof(ChillerStep.RecoverCoordinator));
        data.Add(2, nameof(ChillerStep.CoordLockOuter), 8, nameof(ChillerStep.CoordLearnParticipantFailed));
        return data;
    }

    [Theory]
    [MemberData(nameof(CoordinatorCases))]
    public void A_coordinator_stopped_after_a_step_is_taken_over_and_every_property_holds(int replicas, string step, int occurrence, string then)
    {
        var first = Enum.Parse<ChillerStep>(step);
        // A primary's step is partition 0's primary's (node 0); a coordinator's, node 2R's.
        var crashes = new List<ChillerCrash> { new(first, occurrence, Node: CoordinatorSteps.Contains(first) ? 2 * replicas : 0) };
        if (then.Length > 0) crashes.Add(new ChillerCrash(Enum.Parse<ChillerStep>(then), 1));
        var result = RunWithCrashes(CoordinatorOptions(replicas, crashes.ToArray()), $"R={replicas} after {step} #{occurrence}{(then.Length > 0 ? $", then after {then}" : "")}");
        Assert.Equal(crashes.Count, result.Crashed.Count);
        Assert.Equal(crashes.Count, result.Steps[ChillerStep.CloseChannels]);
        Assert.Contains(result.Crashed, c => c.Node >= 2 * replicas);
        if (then == nameof(ChillerStep.RecoverCoordinator)) Assert.True(result.Steps[ChillerStep.RecoverCoordinator] > 1, "the coordinator's successor stopped, and nobody took over again");
    }

    /// <summary>A node that is a partition's primary and a coordinator at once (the default
    /// placement: coordinators where primaries serve), stopped after each step it takes in either
    /// role: the primary's recovery and the coordinator's takeover together.</summary>
    public static TheoryData<int, string> TogetherCases()
    {
        var data = new TheoryData<int, string>();
        foreach (var step in PrimarySteps.Concat(CoordinatorSteps))
        {
            data.Add(2, step.ToString());
            data.Add(3, step.ToString());
        }
        return data;
    }

    [Theory]
    [MemberData(nameof(TogetherCases))]
    public void A_primary_and_coordinator_stopped_together_are_recovered_and_every_property_holds(int replicas, string step)
    {
        var options = PrimaryOptions(replicas, new ChillerCrash(Enum.Parse<ChillerStep>(step), 8, Node: 0)) with
        {
            Topology = new ClusterTopology(nodes: 2 * replicas, partitions: 2, replicas, replicasApart: true),
            CoordinatorNodes = null,
        };
        var result = RunWithCrashes(options, $"R={replicas}, node 0 (partition 0's primary, a coordinator) after {step} #8");
        Assert.Equal(0, result.Crashed.Single().Node);
        Assert.Equal(1, result.Steps[ChillerStep.CloseChannels]);
        Assert.Equal(1, result.Steps[ChillerStep.ElectPrimary]);
    }

    /// <summary>The steps a replica takes.</summary>
    static readonly ChillerStep[] ReplicaSteps = [ChillerStep.ReplicaReceive, ChillerStep.ReplicaApply];

    /// <summary>The roles of the pair matrix, with three copies as CoordinatorOptions(3) places them
    /// (partition p's copy r on node 2r + p, coordinators on nodes 6 and 7): each role's node and the
    /// steps it takes there.</summary>
    static readonly (int Node, ChillerStep[] Steps)[] PairRoles =
    [
        (0, PrimarySteps),     // partition 0's primary
        (1, PrimarySteps),     // partition 1's primary
        (2, ReplicaSteps),     // a replica of partition 0, its recovery's candidate
        (3, ReplicaSteps),     // a replica of partition 1
        (6, CoordinatorSteps), // a coordinator
    ];

    /// <summary>The occurrence of a step after which a pair's crash falls: mid-run, with
    /// transactions of every kind under way.</summary>
    const int PairOccurrence = 8;

    /// <summary>The occurrence of each of partition 0's primary's steps after which, on this
    /// configuration, its recovery has entries to gather and to commit and a coordinator learns of a
    /// transaction failed before delegation (the nearest to the eighth of occurrences 1-12 where a
    /// probe found all three), so that the second crash of a recovery pair has its step to follow.
    /// The test asserts that both crashes happen: a change that moves them fails it.</summary>
    static readonly Dictionary<ChillerStep, int> RecoveryPairOccurrence = new()
    {
        [ChillerStep.CoordLockOuter] = 8, [ChillerStep.CoordLockDenied] = 10, [ChillerStep.InnerExecute] = 9,
        [ChillerStep.InnerReject] = 7, [ChillerStep.InnerCommit] = 10, [ChillerStep.OuterCommit] = 7, [ChillerStep.OuterRelease] = 6,
    };

    /// <summary>Any two crashes with three copies (the issue's "with R = 3, under any two"): every
    /// pair of crash points on two different nodes of the roles above, each after the eighth time
    /// its node takes its step (181 pairs, a group losing at most R - 1 = 2 of its copies); and a
    /// first crash followed by one in the recovery it starts: partition 0's primary after each of
    /// its steps (at the occurrence RecoveryPairOccurrence gives), then the survivor that gathers first, or the candidate after DecidePending,
    /// ElectPrimary or RecoveryCommit, or a coordinator after CoordLearnParticipantFailed; the
    /// coordinator after each of its steps, then the node that took it over after
    /// RecoverCoordinator. A second node of -1 is whichever node first takes the step.</summary>
    public static TheoryData<int, string, int, string> TwoCrashMatrix()
    {
        var data = new TheoryData<int, string, int, string>();
        var points = PairRoles.SelectMany(r => r.Steps.Select(s => (r.Node, Step: s))).ToArray();
        for (int i = 0; i < points.Length; i++)
            for (int j = i + 1; j < points.Length; j++)
                if (points[i].Node != points[j].Node)
                    data.Add(points[i].Node, points[i].Step.ToString(), points[j].Node, points[j].Step.ToString());
        foreach (var step in PrimarySteps)
        {
            data.Add(0, step.ToString(), -1, nameof(ChillerStep.GatherPending));
            foreach (var recovery in new[] { ChillerStep.DecidePending, ChillerStep.ElectPrimary, ChillerStep.RecoveryCommit })
                data.Add(0, step.ToString(), 2, recovery.ToString());
            data.Add(0, step.ToString(), -1, nameof(ChillerStep.CoordLearnParticipantFailed));
        }
        foreach (var step in CoordinatorSteps)
            data.Add(6, step.ToString(), -1, nameof(ChillerStep.RecoverCoordinator));
        return data;
    }

    [Fact]
    public void The_pair_matrix_crashes_after_every_step_whose_crash_is_recovered()
    {
        var steps = TwoCrashMatrix().SelectMany(row => new[] { (string)row[1], (string)row[3] }).Select(Enum.Parse<ChillerStep>).ToHashSet();
        Assert.True(steps.SetEquals(ChillerCrashPoints.Recovered), $"not in the pair matrix: {string.Join(", ", ChillerCrashPoints.Recovered.Except(steps))}");
        Assert.Equal(220, TwoCrashMatrix().Count());
    }

    [Theory]
    [MemberData(nameof(TwoCrashMatrix))]
    public void Any_two_crashes_with_three_copies_lose_nothing_committed(int firstNode, string first, int secondNode, string second)
    {
        var firstStep = Enum.Parse<ChillerStep>(first);
        var secondStep = Enum.Parse<ChillerStep>(second);
        // A step of recovery is the first one its node takes after the first crash; any other, the eighth.
        bool recoveryPair = ChillerCrashPoints.Recovery.Contains(secondStep);
        var crashes = new[]
        {
            new ChillerCrash(firstStep, recoveryPair && firstNode == 0 ? RecoveryPairOccurrence[firstStep] : PairOccurrence, firstNode),
            new ChillerCrash(secondStep, recoveryPair ? 1 : PairOccurrence, secondNode < 0 ? null : secondNode),
        };
        var result = RunWithCrashes(CoordinatorOptions(3, crashes), $"R=3: node {firstNode} after {first}, {(secondNode < 0 ? "the first node" : $"node {secondNode}")} after {second}");
        Assert.Equal(2, result.Crashed.Count);
        Assert.Contains(result.Crashed, c => c.Node == firstNode);
        if (secondNode >= 0) Assert.Contains(result.Crashed, c => c.Node == secondNode);
        Assert.Equal(2, result.Steps[ChillerStep.CloseChannels] + result.Steps[ChillerStep.RecoverReplica]);
    }

    /// <summary>The coordinator's successor is the node the paper names, and it is the one that
    /// acts: in a run where the crashed coordinator had learned commits it never sent, the outer
    /// partitions learn them from the inner host, and the run commits them everywhere.</summary>
    [Fact]
    public void A_coordinators_transactions_are_decided_by_the_inner_host()
    {
        var steps = new List<(ChillerStep Step, long Txn, int Partition)>();
        var options = CoordinatorOptions(2, new ChillerCrash(ChillerStep.CoordLearnCommit, 8, Node: 4)) with { Observer = e => { if (e.Step is { } s) steps.Add((s, e.Txn, e.Partition)); } };
        var result = RunWithCrashes(options, "R=2 after CoordLearnCommit #8");
        var takenOver = steps.Where(s => s.Step == ChillerStep.RecoverCoordinator).ToList();
        Assert.NotEmpty(takenOver);
        foreach (var (_, txn, partition) in takenOver)
        {
            Assert.Equal(4, ClusterTxnId.NodeOf(txn));
            // The successor is the partition that ran the inner region (or, here, rejected or never got it).
            var delegated = steps.Where(s => s.Txn == txn && s.Step is ChillerStep.CoordDelegate).Select(s => s.Partition).ToList();
            if (delegated.Count > 0) Assert.Equal(delegated[0], partition);
        }
        // The transaction whose commit the coordinator had learned committed at every partition that held a share.
        long learned = steps.Where(s => s.Step == ChillerStep.CoordLearnCommit && ClusterTxnId.NodeOf(s.Txn) == 4).Select(s => s.Txn).Last();
        Assert.Contains(steps, s => s.Txn == learned && s.Step == ChillerStep.InnerCommit);
        Assert.DoesNotContain(steps, s => s.Txn == learned && s.Step == ChillerStep.OuterRelease);
    }

    /// <summary>The twin of ChillerMutantNoticeToPartition: a slot that takes an earlier attempt's
    /// notice as its own commits what never ran, once a host left without replicas notifies all
    /// it committed again.</summary>
    [Fact]
    public void Twin_coordinator_that_takes_an_unaddressed_notice_breaks_atomicity()
    {
        int caught = new[] { 1, 25, 120 }.Count(occurrence => BreaksAtomicity(
            Options(2, new ChillerCrash(ChillerStep.ReplicaApply, occurrence, Node: 2)), ChillerMutants.CoordinatorTakesUnaddressedNotice, $"after ReplicaApply #{occurrence}"));
        Assert.True(caught > 0, "CoordinatorTakesUnaddressedNotice: no run of three broke atomicity");
    }

    /// <summary>The twin of takeover by an outer participant: a partition that decides alone when
    /// its coordinator is cut off aborts what the inner host committed.</summary>
    [Fact]
    public void Twin_outer_participant_that_takes_over_breaks_atomicity()
    {
        int caught = Enumerable.Range(1, 8).Count(occurrence => BreaksAtomicity(
            CoordinatorOptions(2, new ChillerCrash(ChillerStep.CoordLearnCommit, occurrence, Node: 4)), ChillerMutants.OuterParticipantTakesOver, $"after CoordLearnCommit #{occurrence}"));
        Assert.True(caught > 0, "OuterParticipantTakesOver: no run of eight broke atomicity");
    }

    /// <summary>One run of a twin on the bank: true if some partition ended a transaction otherwise
    /// than its coordinator (or its successor) decided.</summary>
    bool BreaksAtomicity(ChillerOptions options, ChillerMutants mutant, string what)
    {
        var result = ChillerSimulation.Run(new Bank(100, 4), options with { Mutants = mutant, Drain = TimeSpan.FromMilliseconds(10) }, RunFor);
        output.WriteLine($"{what}: {result.Run.Atomicity.FirstOrDefault() ?? "(nothing)"}");
        return result.Run.Atomicity.Count > 0;
    }

    ChillerRunResult RunWithCrashes(ChillerOptions options, string what)
    {
        var bank = new Bank(accounts: 100, hot: 4);
        long sum = 0;
        var result = ChillerSimulation.Run(bank, options, RunFor, dbs => sum = Bank.Sum(dbs));
        var r = result.Run;
        output.WriteLine($"{what}: crashed {string.Join(", ", result.Crashed.Select(c => $"node {c.Node} at {c.At.TotalMicroseconds:F0} us"))}; " +
                         $"{r.Stats.Commits} commits, {r.Stats.TotalAborts} aborts; " +
                         string.Join(", ", ChillerCrashPoints.Recovery.Select(s => $"{s} {result.Steps[s]}")));
        foreach (var line in r.Atomicity.Concat(r.Unfinished).Concat(r.Failures).Concat(result.ReplicaDisagreements).Take(4)) output.WriteLine(line);
        AssertEveryPropertyHolds(result, bank, sum);
        return result;
    }

    [Fact]
    public void A_crash_of_the_cluster_manager_is_refused_naming_the_step()
    {
        var e = Assert.Throws<ArgumentException>(() => ChillerSimulation.Run(new Bank(20, 2), Options(2, new ChillerCrash(ChillerStep.CloseChannels, 1)), RunFor));
        Assert.Contains("a crash after CloseChannels", e.Message);
        Assert.Contains("cluster manager", e.Message);
        var shared = new ChillerOptions(new ClusterTopology(2, 2, 2), new ChillerLookup(new HashPartitionMap(2)), 1) { Crashes = [new ChillerCrash(ChillerStep.ReplicaApply, 1)] };
        e = Assert.Throws<ArgumentException>(() => ChillerSimulation.Run(new Bank(20, 2), shared, RunFor));
        Assert.Contains("replicasApart", e.Message);
    }
}
