using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Engine.Storage;
using Xunit.Abstractions;

namespace Contend.Tests.TwoPhaseCommit;

/// <summary>
/// Distributed NoWait, WaitDie and Silo under two-phase commit, each run as a whole simulated
/// cluster on seeds, over a perfect network and over one that loses, doubles, delays, reorders
/// and cuts. On every run: the merged history is serializable, every partition ended each
/// attempt as its coordinator decided (atomicity), every transaction ended, no lock is left,
/// and the bank's money is all there. The twins (a participant that commits on its own yes, a
/// coordinator that forgets an abort) must each fail those checks.
/// </summary>
public class TwoPhaseCommitTests(ITestOutputHelper output)
{
    static readonly TimeSpan RunFor = TimeSpan.FromMilliseconds(150);

    static readonly NetworkFaults Steady = NetworkFaults.Delay(TimeSpan.FromMicroseconds(50));

    static readonly NetworkFaults Lossy = new(new LinkFaults(TimeSpan.FromMicroseconds(20), TimeSpan.FromMicroseconds(200), Drop: 0.03, Duplicate: 0.05, Reorder: 0.1))
    {
        Cuts = [new LinkCut(0, 1, TimeSpan.FromMilliseconds(30), TimeSpan.FromMilliseconds(15)), new LinkCut(2, 0, TimeSpan.FromMilliseconds(70), TimeSpan.FromMilliseconds(25))],
    };

    /// <summary>Replies come within 0.5 ms unless lost (a reordered one waits twice the longest
    /// delay), so a coordinator that waits 2 ms for one gives up only on a loss or a long lock wait.</summary>
    static TwoPhaseCommitOptions Options(string protocol, ulong seed, NetworkFaults faults) =>
        new(protocol, new ClusterTopology(nodes: 3, partitions: 6), seed)
        {
            Faults = faults,
            ReplyTimeout = TimeSpan.FromMilliseconds(2),
            Retransmit = TimeSpan.FromMilliseconds(1),
        };

    (ClusterRunResult Result, long Sum, long LockedWords) Run(TwoPhaseCommitOptions options, Bank bank)
    {
        long sum = 0, locked = 0;
        var result = TwoPhaseCommitSimulation.Run(bank, options, RunFor, dbs =>
        {
            sum = Bank.Sum(dbs);
            locked = LockedWords(dbs, options.Protocol);
        });
        return (result, sum, locked);
    }

    /// <summary>Rows whose record word says a lock is held: for 2PL any nonzero word, for Silo the lock bit.</summary>
    static long LockedWords(IReadOnlyList<Database> dbs, string protocol)
    {
        long locked = 0;
        foreach (var db in dbs)
            foreach (var t in db.Tables)
                for (int row = 0; row < t.RowsEverUsed; row++)
                {
                    long word = Volatile.Read(ref t.Word(row));
                    if (protocol == "Silo" ? word < 0 : word != 0) locked++;
                }
        return locked;
    }

    public static TheoryData<string, bool, ulong> Runs()
    {
        var data = new TheoryData<string, bool, ulong>();
        foreach (var protocol in TwoPhaseCommitSimulation.Protocols)
            foreach (bool lossy in new[] { false, true })
                foreach (ulong seed in new ulong[] { 1, 2 })
                    data.Add(protocol, lossy, seed);
        return data;
    }

    [Theory]
    [MemberData(nameof(Runs))]
    public void Serializable_atomic_and_every_transaction_ends(string protocol, bool lossy, ulong seed)
    {
        var bank = new Bank(accounts: 200, hot: 8);
        var (r, sum, locked) = Run(Options(protocol, seed, lossy ? Lossy : Steady), bank);
        var report = SerializabilityChecker.Check(r.History);
        output.WriteLine($"{protocol} lossy={lossy} seed={seed}: {r.Stats.Commits} commits, {r.Stats.TotalAborts} aborts " +
                         $"({string.Join(", ", Enum.GetValues<AbortReason>().Where(x => r.Stats.Aborts[(int)x] > 0).Select(x => $"{x} {r.Stats.Aborts[(int)x]}"))}), " +
                         $"{r.MessagesSent} messages, {r.MessagesDropped} lost, {r.MessagesDuplicated} doubled, {r.Events} events");
        Assert.True(report.Serializable, string.Join("\n", report.Anomalies.Select(a => a.Description)));
        Assert.Empty(r.Atomicity);
        Assert.Empty(r.Unfinished);
        Assert.Empty(r.Failures);
        Assert.Equal(0, locked);
        Assert.Equal(bank.LoadedSum, sum);
        Assert.True(r.Stats.Commits > 100, $"only {r.Stats.Commits} commits");
        // Transactions across partitions committed, and some openings were refused as duplicates.
        Assert.Contains(r.History, t => t.Accesses.Select(a => a.Row >> 56).Distinct().Count() > 1);
        Assert.True(r.Stats.Aborts[(int)AbortReason.DuplicateKey] > 0, "no opening met a duplicate key");
        if (lossy) Assert.True(r.MessagesDropped > 0 && r.MessagesDuplicated > 0, "the lossy network lost or doubled nothing");
    }

    [Theory]
    [InlineData("NoWait")]
    [InlineData("Silo")]
    public void The_same_seed_gives_the_same_run(string protocol)
    {
        var first = Run(Options(protocol, 7, Lossy), new Bank(200, 8)).Result;
        var second = Run(Options(protocol, 7, Lossy), new Bank(200, 8)).Result;
        var other = Run(Options(protocol, 8, Lossy), new Bank(200, 8)).Result;
        Assert.Equal(first.Events, second.Events);
        Assert.Equal(first.MessagesSent, second.MessagesSent);
        Assert.Equal(first.Stats.Aborts, second.Stats.Aborts);
        Assert.Equal(first.History.Select(t => (t.Id, t.Accesses.Length)), second.History.Select(t => (t.Id, t.Accesses.Length)));
        Assert.NotEqual(first.Events, other.Events);
    }

    public static TheoryData<string> Protocols() => new(TwoPhaseCommitSimulation.Protocols);

    [Theory]
    [MemberData(nameof(Protocols))]
    public void Twin_participant_that_commits_on_its_yes_breaks_atomicity(string protocol)
    {
        var options = Options(protocol, 3, Lossy) with { Mutants = TwoPhaseCommitMutants.ParticipantCommitsOnYes };
        var (r, _, _) = Run(options, new Bank(200, 8));
        output.WriteLine(r.Atomicity.FirstOrDefault() ?? "(none)");
        Assert.NotEmpty(r.Atomicity);
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public void Twin_coordinator_that_forgets_an_abort_leaves_transactions_unfinished(string protocol)
    {
        // A short drain: the forgotten attempts never end, and their waiters would retry all through a long one.
        var options = Options(protocol, 3, Steady) with { Mutants = TwoPhaseCommitMutants.CoordinatorForgetsAbort, Drain = TimeSpan.FromMilliseconds(20) };
        var (r, _, locked) = Run(options, new Bank(200, 8));
        output.WriteLine(r.Unfinished.FirstOrDefault() ?? "(none)");
        Assert.NotEmpty(r.Unfinished);
        Assert.True(locked > 0, "the forgotten attempts hold no lock");
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public void An_insert_body_that_throws_at_prepare_ends_its_transaction_as_a_failure_and_leaves_nothing(string protocol)
    {
        const long Refused = Bank.OpenedKeys + 5;
        var bank = new Bank(accounts: 200, hot: 8, throwingKey: Refused);
        long sum = 0, locked = 0;
        bool opened = true;
        var options = Options(protocol, 4, Steady);
        var r = TwoPhaseCommitSimulation.Run(bank, options, RunFor, dbs =>
        {
            sum = Bank.Sum(dbs);
            locked = LockedWords(dbs, protocol);
            opened = dbs.Any(db => db.Tables[0].Find(Refused) >= 0);
        });
        output.WriteLine(r.Failures.FirstOrDefault() ?? "(none)");
        Assert.False(opened, $"account {Refused}, whose insert body throws, is in the table");
        Assert.NotEmpty(r.Failures);
        Assert.All(r.Failures, f => Assert.Contains("program open, prepare on partition", f));
        Assert.All(r.Failures, f => Assert.Contains($"account {Refused} may not be opened", f));
        Assert.Empty(r.Atomicity);
        Assert.Empty(r.Unfinished);
        Assert.Equal(0, locked);
        Assert.Equal(bank.LoadedSum, sum);
        Assert.True(SerializabilityChecker.Check(r.History).Serializable);
    }

    [Fact]
    public void A_protocol_that_does_not_run_across_partitions_is_refused_by_name()
    {
        var e = Assert.Throws<ArgumentException>(() => TwoPhaseCommitSimulation.Run(new Bank(10, 2), Options("StealDB", 1, Steady), RunFor));
        Assert.Contains("StealDB", e.Message);
        Assert.Contains("NoWait, WaitDie, Silo", e.Message);
    }
}
