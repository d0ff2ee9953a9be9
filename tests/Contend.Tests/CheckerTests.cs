using Contend.Engine.History;

namespace Contend.Tests;

/// <summary>Hand-built histories with known answers: the checker's own tests.</summary>
public class CheckerTests
{
    static readonly long X = HistoryRecorder.RowKey(0, 1), Y = HistoryRecorder.RowKey(0, 2);

    static CommittedTxn T(long id, params Access[] accesses) => new(id, "t", accesses);
    static Access R(long row, long version) => new(row, version, false);
    static Access W(long row, long overwrote) => new(row, overwrote, true);

    [Fact]
    public void SerialHistoryHasNoAnomaly()
    {
        var report = SerializabilityChecker.Check([T(1, R(X, 0), W(X, 0)), T(2, R(X, 1), W(X, 1), W(Y, 0)), T(3, R(Y, 2))]);
        Assert.True(report.Serializable);
        Assert.Equal(3, report.Transactions);
    }

    [Fact]
    public void FinalVersionsFollowEachRowsChainOfWrites()
    {
        long inserted = HistoryRecorder.RowKey(1, 0), readOnly = HistoryRecorder.RowKey(0, 3);
        // x: loaded, then 1, then 2 (recorded out of order); y: loaded, then 2; an inserted row:
        // 4, then 5; a row only read appears nowhere.
        var history = new[] { T(2, R(X, 1), W(X, 1), W(Y, 0)), T(1, W(X, 0)), T(3, R(X, 2), R(readOnly, 0)),
                              T(5, W(inserted, 4)), T(4, W(inserted, HistoryRecorder.NewRow)) };
        var final = SerializabilityChecker.FinalVersions(history);
        Assert.Equal(2, final[X]);
        Assert.Equal(2, final[Y]);
        Assert.Equal(5, final[inserted]);
        Assert.False(final.ContainsKey(readOnly));
        // A write over a version no committed transaction made (an aborted writer's) leaves the
        // chain at the last committed link, so a row holding that writer's version is caught.
        Assert.Equal(1, SerializabilityChecker.FinalVersions([T(1, W(X, 0)), T(3, W(X, 2))])[X]);
    }

    [Fact]
    public void WriteCycleIsG0()
    {
        // 1 writes x first, 2 overwrites it; 2 writes y first, 1 overwrites it.
        var report = SerializabilityChecker.Check([T(1, W(X, 0), W(Y, 2)), T(2, W(X, 1), W(Y, 0))]);
        var a = Assert.Single(report.Anomalies);
        Assert.Equal("G0", a.Kind);
        Assert.All(a.Cycle, e => Assert.Equal(EdgeKind.WriteWrite, e.Kind));
        Assert.Contains("table 0 row 1", a.Description);
    }

    [Fact]
    public void ReadCycleIsG1c()
    {
        // 2 reads 1's x; 1 reads 2's y.
        var report = SerializabilityChecker.Check([T(1, W(X, 0), R(Y, 2)), T(2, W(Y, 0), R(X, 1))]);
        Assert.Equal("G1c", Assert.Single(report.Anomalies).Kind);
    }

    [Fact]
    public void WriteSkewIsG2()
    {
        // Both read x and y at the load, each overwrites a different one.
        var report = SerializabilityChecker.Check([T(1, R(X, 0), R(Y, 0), W(X, 0)), T(2, R(X, 0), R(Y, 0), W(Y, 0))]);
        var a = Assert.Single(report.Anomalies);
        Assert.Equal("G2", a.Kind);
        Assert.Equal(2, a.Cycle.Count(e => e.Kind == EdgeKind.ReadWrite));
    }

    [Fact]
    public void ReadOfUncommittedVersionIsG1a()
    {
        var report = SerializabilityChecker.Check([T(1, R(X, 99))]);
        Assert.Equal("G1a", Assert.Single(report.Anomalies).Kind);
    }

    [Fact]
    public void TwoWritersOfOneVersionIsLostUpdate()
    {
        var report = SerializabilityChecker.Check([T(1, R(X, 0), W(X, 0)), T(2, R(X, 0), W(X, 0))]);
        Assert.Contains(report.Anomalies, a => a.Kind == "lost update");
    }

    [Fact]
    public void LongChainWithoutCycleIsSerializable()
    {
        var history = Enumerable.Range(1, 200_000).Select(i => T(i, R(X, i - 1), W(X, i - 1))).ToList();
        Assert.True(SerializabilityChecker.Check(history).Serializable);
    }
}
