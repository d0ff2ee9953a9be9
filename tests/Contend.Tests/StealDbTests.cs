using Contend.Engine.Protocols;
using Contend.Engine.Protocols.StealDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness.Workloads;

namespace Contend.Tests;

/// <summary>
/// StealDB on two real threads with its audit on (StealDB.tla's invariants checked at every
/// event), on the hot-record micro-benchmark: nothing is violated, and the steps the protocol
/// exists for happen: ops are stolen and steal contexts taken. A policy that never steals must
/// show zero of both, or the counters count nothing.
/// </summary>
public class StealDbTests
{
    static (RunResult Result, StealDb Protocol, StealDbAudit Audit) Run(StealPolicy policy)
    {
        var workload = new StealDbMicro(tables: 8, rows: 1000, ops: 8, hot: 1);
        using var db = new Database();
        workload.Load(db);
        var audit = new StealDbAudit();
        var protocol = new StealDb(ProtocolSetup.For(db, 2), new StealDbOptions(policy), policy.ToString()) { Audit = audit };
        var result = WorkerPool.Run(protocol, workload, new RunOptions(Threads: 2, Seconds: 0.5, RecordHistory: true, Pin: false, Seed: 5));
        Assert.True(Engine.History.SerializabilityChecker.Check(result.History!).Serializable);
        return (result, protocol, audit);
    }

    [Theory]
    [InlineData(nameof(StealPolicy.Queue))]
    [InlineData(nameof(StealPolicy.Basic))]
    public void StealsWithoutViolatingTheSpecsInvariants(string policy)
    {
        var (result, protocol, audit) = Run(Enum.Parse<StealPolicy>(policy));
        Assert.Empty(audit.Violations);
        Assert.True(result.Total.Commits > 0, "no transaction committed");
        Assert.True(audit.Takes > 0, "no steal context was ever taken");
        Assert.True(protocol.StolenOps > 0, "no op ran on a worker other than its owner's");
    }

    [Fact]
    public void NoStealPolicyStealsNothing()
    {
        var (result, protocol, audit) = Run(StealPolicy.None);
        Assert.Empty(audit.Violations);
        Assert.True(result.Total.Commits > 0, "no transaction committed");
        Assert.Equal(0, audit.Takes);
        Assert.Equal(0, protocol.StolenOps);
    }

    [Fact]
    public void AuditCatchesAnOpRunTwice()
    {
        var audit = new StealDbAudit();
        audit.Executed(tid: 257, op: 1);
        audit.Executed(tid: 257, op: 1);
        Assert.Contains(audit.Violations, v => v.StartsWith("ExactlyOnceInv"));
    }

    [Fact]
    public void RejectsAThresholdThatCannotWait() =>
        Assert.Contains("wait threshold 0", Assert.Throws<ArgumentException>(() =>
            new StealDb(ProtocolSetup.For(new Database(), 1), new StealDbOptions(WaitThreshold: 0), "x")).Message);
}
