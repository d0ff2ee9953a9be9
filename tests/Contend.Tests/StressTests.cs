using System.Buffers.Binary;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness;
using Contend.Harness.Workloads;

namespace Contend.Tests;

/// <summary>
/// Every protocol on every workload, two real threads at high contention for a bounded
/// time, with the history checker on; plus the workloads' own invariants where they have
/// one. A stress test proves nothing when it passes alone: the broken control below must
/// fail the same checks.
/// </summary>
public class StressTests
{
    const double Seconds = 0.4;

    public static TheoryData<string> Protocols => new(ProtocolRegistry.Names);

    static RunOptions Options => new(Threads: 2, Seconds: Seconds, RecordHistory: true, Pin: false, Seed: 3);

    static void AssertCommittedAndSerializable(RunRow row)
    {
        Assert.True(row.Commits > 0, $"{row.Protocol} on {row.Workload}: no transaction committed");
        Assert.True(row.Anomalies == 0, $"{row.Protocol} on {row.Workload}: {row.FirstAnomaly}");
        Assert.True(row.CheckedTransactions > 0);
    }

    [Theory, MemberData(nameof(Protocols))]
    public void YcsbHotIsSerializable(string protocol) =>
        AssertCommittedAndSerializable(Runner.RunOne(protocol, () => new Ycsb(rows: 10_000, requests: 8, readFraction: 0.5, theta: 0.99), Options));

    [Theory, MemberData(nameof(Protocols))]
    public void TpccOneWarehouseIsSerializable(string protocol) =>
        AssertCommittedAndSerializable(Runner.RunOne(protocol, () => new Tpcc(warehouses: 1, inserts: true, orderCapacity: 200_000), Options));

    /// <summary>StealDB's micro-benchmark increments one record per table per commit, so each
    /// table's records must sum to the number of commits: every committed op ran exactly once,
    /// and no aborted op left its write behind.</summary>
    [Theory, MemberData(nameof(Protocols))]
    public void StealDbHotRecordCountsEveryCommitOnce(string protocol)
    {
        var workload = new StealDbMicro(tables: 4, rows: 100, ops: 4, hot: 1);
        using var db = new Database();
        workload.Load(db);
        var result = WorkerPool.Run(ProtocolRegistry.Create(protocol, ProtocolSetup.For(db, 2)), workload, Options);
        Assert.True(result.Total.Commits > 0);
        foreach (var table in db.Tables)
        {
            long sum = 0;
            for (int row = 0; row < table.Count; row++) sum += BinaryPrimitives.ReadInt64LittleEndian(table.Payload(row));
            Assert.Equal(result.Total.Commits, sum);
        }
        Assert.True(Engine.History.SerializabilityChecker.Check(result.History!).Serializable);
    }

    [Fact]
    public void CheckerFlagsTheBrokenControl()
    {
        // Not serializable, but whether a 0.4 s run interleaves badly is up to the machine:
        // a few runs make a miss vanishingly unlikely, and every run is checked.
        int anomalies = 0;
        for (int attempt = 0; attempt < 5 && anomalies == 0; attempt++)
            anomalies = Runner.RunOne(ProtocolRegistry.BrokenControl, () => new Ycsb(rows: 1000, requests: 8, readFraction: 0.5, theta: 0.99), Options).Anomalies;
        Assert.True(anomalies > 0, "the history checker found no anomaly in 2PL that releases its locks early");
    }

    [Fact]
    public void TpccKeepsMoneyAndOrderCounts()
    {
        var workload = new Tpcc(warehouses: 2, inserts: true, orderCapacity: 200_000);
        using var db = new Database();
        workload.Load(db);
        db.TryGet("warehouse", out var warehouse);
        db.TryGet("district", out var district);
        long Field(Table t, int field) => Enumerable.Range(0, t.Count).Sum(r => BinaryPrimitives.ReadInt64LittleEndian(t.Payload(r)[(field * 8)..]));
        long warehouseYtd = Field(warehouse, 0), districtYtd = Field(district, 0), nextOrderIds = Field(district, 2);
        var result = WorkerPool.Run(ProtocolRegistry.Create("WaitDie", ProtocolSetup.For(db, 2)), workload, Options with { RecordHistory = false });
        Assert.True(result.Total.Commits > 0);
        // Payment adds the same amount to its warehouse and its district.
        Assert.Equal(Field(warehouse, 0) - warehouseYtd, Field(district, 0) - districtYtd);
        // Each committed NewOrder took one order id and inserted one order.
        db.TryGet("orders", out var orders);
        Assert.Equal(Field(district, 2) - nextOrderIds, orders.Count);
        Assert.True(result.Total.Aborts[(int)AbortReason.KeyNotFound] > 0, "no NewOrder rolled back on its unused item id (1% are meant to)");
    }
}
