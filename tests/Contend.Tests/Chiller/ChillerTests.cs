using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Chiller;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Tests.TwoPhaseCommit;
using Xunit.Abstractions;

namespace Contend.Tests.Chiller;

/// <summary>
/// Chiller's failure-free protocol, each run a whole simulated cluster on a seed (the bank across
/// three partitions, its first accounts marked hot), with one, two and three copies of each
/// partition, over a steady network and over one that delays, doubles and reorders. On every run:
/// the merged history is serializable, every partition ended each attempt as its coordinator
/// learned (atomicity), every transaction ended, no lock is left, the money is all there, and
/// every replica applied its partition's whole log and holds what its primary holds. The runs
/// must reach every step of the failure-free protocol, two-region commits and deferred bodies
/// among them, or the checks would prove little.
/// </summary>
public class ChillerTests(ITestOutputHelper output)
{
    static readonly TimeSpan RunFor = TimeSpan.FromMilliseconds(100);
    const int Hot = 6;

    static readonly NetworkFaults Steady = NetworkFaults.Delay(TimeSpan.FromMicroseconds(50));

    static readonly NetworkFaults Jumbled = new(new LinkFaults(TimeSpan.FromMicroseconds(20), TimeSpan.FromMicroseconds(200), Duplicate: 0.05, Reorder: 0.2));

    /// <summary>The bank's map and its first <see cref="Hot"/> accounts marked contended.</summary>
    static ChillerLookup Lookup(int partitions)
    {
        var lookup = new ChillerLookup(new HashPartitionMap(partitions));
        for (long a = 0; a < Hot; a++) lookup.MarkHot(0, a);
        return lookup;
    }

    static ChillerOptions Options(int replicas, ulong seed, NetworkFaults faults) =>
        new(new ClusterTopology(nodes: 3, partitions: 3, replicas), Lookup(3), seed) { Faults = faults };

    (ChillerRunResult Result, long Sum, long LockedWords) Run(ChillerOptions options, Bank bank)
    {
        long sum = 0, locked = 0;
        var result = ChillerSimulation.Run(bank, options, RunFor, dbs =>
        {
            sum = Bank.Sum(dbs);
            locked = dbs.SelectMany(db => db.Tables).Sum(t => Enumerable.Range(0, t.Count).Count(row => Volatile.Read(ref t.Word(row)) != 0));
        });
        var r = result.Run;
        output.WriteLine($"R={options.Topology.Replicas} seed={options.Seed}: {r.Stats.Commits} commits ({result.TwoRegionCommits} in two regions), {r.Stats.TotalAborts} aborts " +
                         $"({string.Join(", ", Enum.GetValues<AbortReason>().Where(x => r.Stats.Aborts[(int)x] > 0).Select(x => $"{x} {r.Stats.Aborts[(int)x]}"))}), " +
                         $"{result.InnerCommits} inner commits, {result.DeferredBodies} deferred bodies, {result.LogEntries} log entries, " +
                         $"{r.MessagesSent} messages ({r.MessagesDuplicated} doubled), {r.Events} events");
        return (result, sum, locked);
    }

    public static TheoryData<int, bool, ulong> Runs()
    {
        var data = new TheoryData<int, bool, ulong>();
        foreach (int replicas in new[] { 1, 2, 3 })
            foreach (bool jumbled in new[] { false, true })
                foreach (ulong seed in new ulong[] { 1, 2 })
                    data.Add(replicas, jumbled, seed);
        return data;
    }

    [Theory]
    [MemberData(nameof(Runs))]
    public void Serializable_atomic_replicas_agree_and_every_transaction_ends(int replicas, bool jumbled, ulong seed)
    {
        var bank = new Bank(accounts: 200, hot: Hot);
        var (result, sum, locked) = Run(Options(replicas, seed, jumbled ? Jumbled : Steady), bank);
        var r = result.Run;
        var report = SerializabilityChecker.Check(r.History);
        Assert.True(report.Serializable, string.Join("\n", report.Anomalies.Select(a => a.Description)));
        Assert.Empty(r.Atomicity);
        Assert.Empty(r.Unfinished);
        Assert.Empty(r.Failures);
        Assert.Empty(result.ReplicaDisagreements);
        Assert.Equal(0, locked);
        Assert.Equal(bank.LoadedSum, sum);
        Assert.True(r.Stats.Commits > 100, $"only {r.Stats.Commits} commits");
        Assert.True(result.TwoRegionCommits > 10, $"only {result.TwoRegionCommits} commits used an outer partition");
        Assert.True(result.DeferredBodies > 10, $"only {result.DeferredBodies} outer bodies ran after their inner region");
        Assert.True(r.Stats.Aborts[(int)AbortReason.DuplicateKey] > 0, "no opening met a duplicate key");
        Assert.True(r.Stats.Aborts[(int)AbortReason.LockBusy] > 0, "no lock was ever denied");
        if (jumbled) Assert.True(r.MessagesDuplicated > 0, "the network doubled nothing");
        foreach (var (step, count) in result.Steps.Where(s => !ChillerCrashPoints.Recovery.Contains(s.Key)))
        {
            bool replicates = step is ChillerStep.ReplicaReceive or ChillerStep.ReplicaApply;
            if (replicates && replicas == 1) Assert.Equal(0, count);
            else Assert.True(count > 0, $"step {step} never ran");
        }
        if (replicas > 1) Assert.True(result.LogEntries >= result.InnerCommits, $"{result.LogEntries} log entries for {result.InnerCommits} inner commits");
    }

    /// <summary>With the cost model (each node's workers shared by its messages) the same checks hold,
    /// Chiller's and two-phase commit's alike.</summary>
    [Fact]
    public void With_node_workers_the_runs_keep_every_property()
    {
        var cpu = new CpuModel(2, TimeSpan.FromMicroseconds(2), TimeSpan.FromMicroseconds(1));
        var bank = new Bank(accounts: 200, hot: Hot);
        var (result, sum, locked) = Run(Options(2, 3, Jumbled) with { Cpu = cpu }, bank);
        Assert.True(SerializabilityChecker.Check(result.Run.History).Serializable);
        Assert.Empty(result.Run.Atomicity);
        Assert.Empty(result.Run.Unfinished);
        Assert.Empty(result.ReplicaDisagreements);
        Assert.Equal(bank.LoadedSum, sum);
        Assert.Equal(0, locked);
        Assert.True(result.Run.Stats.Commits > 100, $"only {result.Run.Stats.Commits} commits");
        var twoPc = Contend.Engine.Protocols.TwoPhaseCommit.TwoPhaseCommitSimulation.Run(new Bank(200, Hot),
            new Contend.Engine.Protocols.TwoPhaseCommit.TwoPhaseCommitOptions("NoWait", new ClusterTopology(3, 3), 3) { Cpu = cpu, Faults = Steady }, RunFor);
        Assert.True(SerializabilityChecker.Check(twoPc.History).Serializable);
        Assert.Empty(twoPc.Atomicity);
        Assert.Empty(twoPc.Unfinished);
        Assert.True(twoPc.Stats.Commits > 100, $"only {twoPc.Stats.Commits} two-phase commits");
    }

    [Fact]
    public void The_same_seed_gives_the_same_run()
    {
        var first = Run(Options(2, 7, Jumbled), new Bank(200, Hot)).Result;
        var second = Run(Options(2, 7, Jumbled), new Bank(200, Hot)).Result;
        var other = Run(Options(2, 8, Jumbled), new Bank(200, Hot)).Result;
        Assert.Equal(first.Run.Events, second.Run.Events);
        Assert.Equal(first.Run.MessagesSent, second.Run.MessagesSent);
        Assert.Equal(first.Run.Stats.Aborts, second.Run.Stats.Aborts);
        Assert.Equal(first.Steps, second.Steps);
        Assert.Equal(first.Run.History.Select(t => (t.Id, t.Accesses.Length)), second.Run.History.Select(t => (t.Id, t.Accesses.Length)));
        Assert.NotEqual(first.Run.Events, other.Run.Events);
    }

    /// <summary>The observer sees each committed transaction's steps in the protocol's order:
    /// outer locks (and, with replicas, their prepared entries received and applied: D3) before
    /// the delegation; then executed, its inner entry received at each replica before the host
    /// commits and applied before the coordinator learns the commit, then finished.</summary>
    [Fact]
    public void Each_commit_takes_the_steps_in_the_protocols_order()
    {
        var steps = new Dictionary<long, List<ChillerStep>>();
        var options = Options(2, 3, Steady) with { Observer = e => (steps.TryGetValue(e.Txn, out var l) ? l : steps[e.Txn] = new()).Add(e.Step!.Value) };
        var (result, _, _) = Run(options, new Bank(200, Hot));
        int checkedCommits = 0;
        foreach (var t in result.Run.History)
        {
            var seen = steps[t.Id];
            int Index(ChillerStep s) => seen.IndexOf(s);
            // The first of a step after InnerExecute: the inner entry's, not a prepared entry's.
            int After(ChillerStep s) => seen.IndexOf(s, Index(ChillerStep.InnerExecute));
            Assert.True(Index(ChillerStep.CoordDelegate) >= 0 && Index(ChillerStep.CoordDelegate) < Index(ChillerStep.InnerExecute), string.Join(", ", seen));
            Assert.True(seen.LastIndexOf(ChillerStep.CoordLockOuter) < Index(ChillerStep.CoordDelegate), string.Join(", ", seen));
            Assert.True(After(ChillerStep.ReplicaReceive) > 0 && After(ChillerStep.ReplicaReceive) < Index(ChillerStep.InnerCommit), string.Join(", ", seen));
            Assert.True(After(ChillerStep.ReplicaApply) > 0 && After(ChillerStep.ReplicaApply) < Index(ChillerStep.CoordLearnCommit), string.Join(", ", seen));
            Assert.True(Index(ChillerStep.CoordLearnCommit) < Index(ChillerStep.CoordFinish), string.Join(", ", seen));
            Assert.DoesNotContain(ChillerStep.InnerReject, seen);
            Assert.DoesNotContain(ChillerStep.OuterRelease, seen);
            int outer = seen.Count(s => s == ChillerStep.OuterCommit);
            Assert.True(outer == 0 || seen.LastIndexOf(ChillerStep.OuterCommit) < Index(ChillerStep.CoordFinish), string.Join(", ", seen));
            checkedCommits++;
        }
        Assert.True(checkedCommits > 100, $"only {checkedCommits} commits");
    }

    /// <summary>The twin that lets an outer lock go in step 3: the outer region no longer holds
    /// until the serialization point, and the checker finds a cycle.</summary>
    [Fact]
    public void Twin_outer_partition_that_releases_early_is_not_serializable()
    {
        var (result, _, _) = Run(Options(2, 1, Steady) with { Mutants = ChillerMutants.OuterReleasesEarly }, new Bank(200, Hot));
        var report = SerializabilityChecker.Check(result.Run.History);
        output.WriteLine(report.Anomalies.FirstOrDefault()?.Description ?? "(none)");
        Assert.False(report.Serializable);
    }

    /// <summary>The twin of the spec's ChillerMutantOuterUnilateralAbort: an outer partition that
    /// aborts the attempts it holds locks for, as a 2PC participant may before its vote, aborts some
    /// whose inner region has committed.</summary>
    [Fact]
    public void Twin_outer_partition_that_aborts_unilaterally_breaks_atomicity()
    {
        var (result, _, _) = Run(Options(2, 1, Steady) with { Mutants = ChillerMutants.OuterAbortsUnilaterally, Drain = TimeSpan.FromMilliseconds(20) }, new Bank(200, Hot));
        output.WriteLine(result.Run.Atomicity.FirstOrDefault() ?? "(none)");
        Assert.Contains(result.Run.Atomicity, d => d.EndsWith("aborted, but its coordinator decided commit"));
    }

    /// <summary>Steps 1 and 2 on one instance: the partition with the hot candidate hosts the
    /// inner region, with every candidate on that partition and the op keyed by an inner result;
    /// the outer op that reads an inner result is deferred; the others are plain outer ops.</summary>
    [Fact]
    public void The_plan_puts_the_hot_partition_and_its_dependents_inner_and_defers_outer_readers()
    {
        using var db = new Database();
        db.Create("t", 8, 64);
        var map = new RangePartitionMap([100, 200]); // 0..99, 100..199, 200..
        var lookup = new ChillerLookup(map).MarkHot(0, 150);
        var program = new ProgramBuilder("p", db, 4)
            .Read("cold0", "t", KeySource.FromArg(0), (row, a, r) => 110)          // partition 0
            .Write("hot", "t", KeySource.FromArg(1), (row, a, r) => 120)           // partition 1, hot
            .Write("cold1", "t", KeySource.FromArg(2), (row, a, r) => 0)           // partition 1
            .Write("keyed", "t", KeySource.Computed((a, r) => r[1], "hot"), (row, a, r) => 0)
            .Write("reader", "t", KeySource.FromArg(3), (row, a, r) => 0, "hot")   // partition 2, reads the hot op
            .Read("outerKeyed", "t", KeySource.Computed((a, r) => r[0], "cold0"), (row, a, r) => 0)
            .NeverAborts("reader")
            .Build();
        var plan = RegionProgram.Check(program, map);
        var regions = plan.Plan([5, 150, 160, 250], lookup, home: 2);
        Assert.Equal(1, regions.Host);
        Assert.Equal(new[] { false, true, true, true, false, false }, Enumerable.Range(0, 6).Select(regions.IsInner));
        Assert.Equal(new[] { false, false, false, false, true, false }, Enumerable.Range(0, 6).Select(regions.IsDeferred));
        // Nothing hot: the partition with the most candidates hosts, then the lowest of a tie.
        Assert.Equal(2, plan.Plan([5, 250, 260, 270], new ChillerLookup(map), home: 0).Host);
        Assert.Equal(0, plan.Plan([5, 150, 160, 6], new ChillerLookup(map), home: 1).Host);
    }

    [Fact]
    public void A_program_whose_body_could_abort_after_the_inner_commit_is_refused_naming_the_op()
    {
        using var db = new Database();
        db.Create("t", 8, 64);
        var map = new HashPartitionMap(2);
        var mayAbort = new ProgramBuilder("transfer", db, 2)
            .Write("debit", "t", KeySource.FromArg(0), (row, a, r) => 0)
            .Write("credit", "t", KeySource.FromArg(1), (row, a, r) => r[0] < 0 ? TxnProgram.UserAbort : 0, "debit")
            .Build();
        var e = Assert.Throws<ProgramException>(() => RegionProgram.Check(mayAbort, map));
        Assert.StartsWith("program transfer, op credit: may abort, but under Chiller its body can run after the inner region has committed (it reads debit", e.Message);
        Assert.Contains("NeverAborts", e.Message);

        var insertReads = new ProgramBuilder("open", db, 2)
            .Write("fund", "t", KeySource.FromArg(0), (row, a, r) => 1)
            .Insert("new", "t", KeySource.FromArg(1), (row, a, r) => r[0], "fund")
            .BodiesNeverAbort().Build();
        e = Assert.Throws<ProgramException>(() => RegionProgram.Check(insertReads, map));
        Assert.StartsWith("program open, op new: an insert outside the inner region claims its key in step 3, before the inner region runs, but it reads fund", e.Message);

        var keyedByDeferred = new ProgramBuilder("chain", db, 2)
            .Write("a", "t", KeySource.FromArg(0), (row, a, r) => 1)
            .Write("b", "t", KeySource.FromArg(1), (row, a, r) => 2, "a")
            .Read("c", "t", KeySource.Computed((a, r) => r[1], "b"), (row, a, r) => 0)
            .BodiesNeverAbort().Build();
        e = Assert.Throws<ProgramException>(() => RegionProgram.Check(keyedByDeferred, map));
        Assert.StartsWith("program chain, op c: its key is computed from op b, whose body can run only after the inner region has committed", e.Message);
    }

    [Fact]
    public void A_network_that_loses_messages_is_refused()
    {
        var lossy = new NetworkFaults(new LinkFaults(TimeSpan.FromMicroseconds(20), TimeSpan.FromMicroseconds(50), Drop: 0.01));
        var e = Assert.Throws<ArgumentException>(() => ChillerSimulation.Run(new Bank(20, 2), Options(1, 1, lossy), RunFor));
        Assert.Contains("Chiller's channels are reliable", e.Message);
    }

    /// <summary>A credit on another partition that throws after its debit (the hot inner region)
    /// has committed: the transaction commits without the credit's write, the run names the op,
    /// and the credited row is left as it was, on the primary and on its replica alike.</summary>
    [Fact]
    public void A_deferred_body_that_throws_commits_the_rest_and_is_reported()
    {
        var map = new HashPartitionMap(3);
        long payee = Enumerable.Range(1, 100).First(a => map.PartitionOf(0, a) != map.PartitionOf(0, 0));
        var workload = new DeferredThrow(payee);
        var options = new ChillerOptions(new ClusterTopology(3, 3, replicas: 2), new ChillerLookup(map).MarkHot(0, 0), Seed: 5);
        long payer = 0, credited = 0;
        var result = ChillerSimulation.Run(workload, options, TimeSpan.FromMilliseconds(5), dbs =>
        {
            payer = Balance(dbs[map.PartitionOf(0, 0)], 0);
            credited = Balance(dbs[map.PartitionOf(0, payee)], payee);
        });
        output.WriteLine(result.Run.Failures.FirstOrDefault() ?? "(none)");
        Assert.True(result.Run.Stats.Commits > 5, $"only {result.Run.Stats.Commits} commits");
        Assert.Equal(result.Run.Stats.Commits, result.Run.Failures.Count);
        Assert.All(result.Run.Failures, f => Assert.Contains($"program pay, op credit on partition {map.PartitionOf(0, payee)}: InvalidOperationException: account {payee} refuses money; the transaction had committed at its inner host, so it commits without this op's write", f));
        Assert.Equal(Bank.Opening - result.Run.Stats.Commits, payer);
        Assert.Equal(Bank.Opening, credited);
        Assert.Equal(result.Run.Stats.Commits, result.DeferredBodies);
        Assert.Empty(result.Run.Atomicity);
        Assert.Empty(result.Run.Unfinished);
        Assert.Empty(result.ReplicaDisagreements);
        Assert.True(SerializabilityChecker.Check(result.Run.History).Serializable);
    }

    static long Balance(Database db, long account)
    {
        var t = db.Tables[0];
        return System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian(t.Payload(t.Find(account)));
    }

    /// <summary>Every transaction pays 1 from account 0 to <paramref name="payee"/>, whose credit throws.</summary>
    sealed class DeferredThrow(long payee) : IPartitionedWorkload
    {
        TxnProgram _pay = null!;

        public string Name => "deferred-throw";
        public IReadOnlyList<TxnProgram> Programs => [_pay];

        public void Load(Database db, int partition, IPartitionMap map)
        {
            var account = db.Create("account", sizeof(long), 16);
            foreach (long a in new[] { 0, payee })
                if (map.PartitionOf(account.Id, a) == partition)
                    System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(account.Payload(account.Load(a)), Bank.Opening);
            _pay = new ProgramBuilder("pay", db, 2)
                .Write("debit", "account", KeySource.FromArg(0), (row, a, r) =>
                {
                    long balance = System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian(row) - 1;
                    System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(row, balance);
                    return balance;
                })
                .Write("credit", "account", KeySource.FromArg(1), (row, a, r) =>
                {
                    System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(row, -1); // half-written, then
                    throw new InvalidOperationException($"account {a[1]} refuses money");
                }, "debit")
                .BodiesNeverAbort().Build();
        }

        public ITransactionSource CreateSource(int stream, ulong seed, IReadOnlyList<int> homePartitions) => new Source(this);

        sealed class Source(DeferredThrow w) : ITransactionSource
        {
            public TxnProgram Next(TxnContext ctx)
            {
                ctx.Args[0] = 0;
                ctx.Args[1] = w.Payee;
                return w._pay;
            }
        }

        long Payee => payee;
    }
}
