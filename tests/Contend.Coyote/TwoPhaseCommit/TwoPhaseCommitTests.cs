using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Tests.TwoPhaseCommit;
using Microsoft.Coyote.Random;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote.TwoPhaseCommit;

/// <summary>
/// Two-phase commit over NoWait, WaitDie and Silo with Coyote choosing the order of events: the
/// cluster runs in one simulated thread, and at every step Coyote's controlled random picks which
/// of the next few deliveries and timeouts comes first (<see cref="TwoPhaseCommitOptions.Explorer"/>),
/// so each iteration is another order of messages, replies, votes and timeouts, and a failing
/// one replays from Coyote's seed. A small bank on two nodes and three partitions, its accounts
/// few and hot, a short run. Checked on every iteration: the merged history is serializable,
/// every partition ended each attempt as its coordinator decided, every transaction ended, and
/// the money is all there. The twins: a participant that commits on its own yes (atomicity),
/// a coordinator that forgets an abort (a transaction never ends).
/// </summary>
public static class TwoPhaseCommitTests
{
    public static IEnumerable<CoyoteTest> All =>
        TwoPhaseCommitSimulation.Protocols.SelectMany(p => new CoyoteTest[]
        {
            new($"TwoPhaseCommit{p}", () => Run(p, TwoPhaseCommitMutants.None)),
            new($"TwoPhaseCommit{p}TwinCommitsOnYes", () => Run(p, TwoPhaseCommitMutants.ParticipantCommitsOnYes), CaughtBy: "atomicity"),
            new($"TwoPhaseCommit{p}TwinForgetsAbort", () => Run(p, TwoPhaseCommitMutants.CoordinatorForgetsAbort), CaughtBy: "never ended"),
        });

    static Task Run(string protocol, TwoPhaseCommitMutants mutants)
    {
        var choices = Generator.Create();
        var bank = new Bank(accounts: 6, hot: 2);
        var options = new TwoPhaseCommitOptions(protocol, new ClusterTopology(nodes: 2, partitions: 3), Seed: 5, SlotsPerNode: 2)
        {
            Faults = NetworkFaults.Delay(TimeSpan.FromMicroseconds(20)),
            ReplyTimeout = TimeSpan.FromMicroseconds(400),
            Retransmit = TimeSpan.FromMicroseconds(100),
            Drain = TimeSpan.FromMilliseconds(5),
            Explorer = choices.NextInteger,
            Mutants = mutants,
        };
        long sum = 0;
        var r = TwoPhaseCommitSimulation.Run(bank, options, TimeSpan.FromMicroseconds(600), dbs => sum = Bank.Sum(dbs));
        Specification.Assert(r.Atomicity.Count == 0, $"{protocol}: atomicity: {r.Atomicity.FirstOrDefault()}");
        Specification.Assert(r.Unfinished.Count == 0, $"{protocol}: a transaction never ended: {r.Unfinished.FirstOrDefault()}");
        Specification.Assert(r.Failures.Count == 0, $"{protocol}: {r.Failures.FirstOrDefault()}");
        var report = SerializabilityChecker.Check(r.History);
        Specification.Assert(report.Serializable, $"{protocol}: history not serializable: {report.Anomalies.FirstOrDefault()?.Description}");
        Specification.Assert(sum == bank.LoadedSum, $"{protocol}: the accounts hold {sum}, not {bank.LoadedSum}");
        Specification.Assert(r.Stats.Commits > 0, $"{protocol}: nothing committed");
        return Task.CompletedTask;
    }
}
