using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
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
    static (RunResult Result, StealDb Protocol, StealDbAudit Audit) Run(StealPolicy policy, StealDbOptions? options = null)
    {
        var workload = new StealDbMicro(tables: 8, rows: 1000, ops: 8, hot: 1);
        using var db = new Database();
        workload.Load(db);
        var audit = new StealDbAudit();
        var protocol = new StealDb(ProtocolSetup.For(db, 2), policy, options ?? new StealDbOptions(), policy.ToString()) { Audit = audit };
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

    /// <summary>Stealing off by policy, or by the knob that allows no nesting (the knob reaches the
    /// protocol: on this workload the default steals, <see cref="StealsWithoutViolatingTheSpecsInvariants"/>).</summary>
    [Theory]
    [InlineData(nameof(StealPolicy.None), 4)]
    [InlineData(nameof(StealPolicy.Queue), 0)]
    public void NoStealingStealsNothing(string policy, int maxNesting)
    {
        var (result, protocol, audit) = Run(Enum.Parse<StealPolicy>(policy), new StealDbOptions(MaxNesting: maxNesting));
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

    /// <summary>Reads take their rows shared (StealDB.tla with SharedReads): on a hot set with
    /// half reads, two transactions read one row at once, no writer ever shares a row, and the
    /// history is serializable.</summary>
    [Fact]
    public void ReadersShareARowAndWritersHoldAlone()
    {
        var workload = new Ycsb(rows: 16, requests: 8, readFraction: 0.5, theta: 0.9);
        using var db = new Database();
        workload.Load(db);
        var audit = new StealDbAudit();
        var protocol = new StealDb(ProtocolSetup.For(db, 2), StealPolicy.Queue, new StealDbOptions(), "StealDB") { Audit = audit };
        var result = WorkerPool.Run(protocol, workload, new RunOptions(Threads: 2, Seconds: 0.5, RecordHistory: true, Pin: false, Seed: 5));
        Assert.Empty(audit.Violations);
        Assert.True(result.Total.Commits > 0, "no transaction committed");
        Assert.True(audit.MostReaders >= 2, $"no two transactions read one row at once (at most {audit.MostReaders})");
        Assert.True(SerializabilityChecker.Check(result.History!).Serializable);
    }

    /// <summary>A transaction that reads a row and then writes it: the write would wait for its
    /// own transaction's share for ever, so the program is refused at its first call, naming both
    /// ops (a transfer whose arguments name one row only sometimes fails as it runs:
    /// <see cref="ContendEngineTests.TwoOpsOnOneRow"/>); one that reads a row twice shares it
    /// with itself and commits.</summary>
    [Fact]
    public async Task AReadThenAWriteOfOneRowIsRefusedAndTwoReadsCommit()
    {
        var db = new Database();
        var table = db.Create("account", sizeof(long), 4);
        for (int k = 0; k < 4; k++) table.Load(k);
        ReadBody read = (row, a, r) => BinaryPrimitives.ReadInt64LittleEndian(row);
        OpBody add = (row, a, r) =>
        {
            BinaryPrimitives.WriteInt64LittleEndian(row, BinaryPrimitives.ReadInt64LittleEndian(row) + 1);
            return 0;
        };
        var readThenWrite = new ProgramBuilder("readThenWrite", db, 1)
            .Read("look", "account", KeySource.FromArg(0), read)
            .Write("bump", "account", KeySource.FromArg(0), add, "look")
            .Build();
        var readTwice = new ProgramBuilder("readTwice", db, 1)
            .Read("first", "account", KeySource.FromArg(0), read)
            .Read("second", "account", KeySource.FromArg(0), read, "first")
            .Build();
        var bump = new ProgramBuilder("bump", db, 1).Write("bump", "account", KeySource.FromArg(0), add).Build();
        await using var engine = new ContendEngine(db, ContendEngineTests.Options("StealDB"));
        var patience = TimeSpan.FromSeconds(30);
        // Keyed by one argument, the two ops always meet: refused at the call, before anything runs.
        var refused = Assert.Throws<ArgumentException>(() => { _ = engine.ExecuteAsync(readThenWrite, [2]); });
        Assert.Contains("ops look and bump always use one row", refused.Message);
        Assert.True((await engine.ExecuteAsync(readTwice, [2]).AsTask().WaitAsync(patience)).Committed);
        Assert.True((await engine.ExecuteAsync(bump, [2]).AsTask().WaitAsync(patience)).Committed); // the row was left free
    }

    /// <summary>Options given through the engine reach the protocol its descriptor builds.</summary>
    [Fact]
    public void TheDescriptorBuildsWithTheOptionsGiven()
    {
        using var db = new Database();
        var protocol = (StealDb)ProtocolRegistry.Create("StealDBBasicWS", new ProtocolSetup(db, 2, new StealDbOptions(WaitThreshold: 7, MaxNesting: 2)));
        Assert.Equal(new StealDbOptions(7, 2), protocol.Options);
        Assert.Equal(new StealDbOptions(), ((StealDb)ProtocolRegistry.Create("StealDB", new ProtocolSetup(db, 2))).Options);
    }
}
