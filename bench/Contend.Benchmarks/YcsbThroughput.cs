using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness.Workloads;

namespace Contend.Benchmarks;

/// <summary>
/// YCSB throughput over protocol and skew on 2 workers: each invocation runs a fixed number of
/// transactions per worker, so Op/s is transactions per second (history off).
/// </summary>
public class YcsbThroughput
{
    const int PerWorker = 50_000, Workers = 2;

    [Params("NoWait", "WaitDie", "WaitsFor", "Ordered", "Mcs", "Silo")]
    public string Protocol = "";

    [Params(0.0, 0.9)]
    public double Theta;

    [Params(1_000_000)]
    public int Rows;

    Database _db = null!;
    Ycsb _workload = null!;
    IProtocol _protocol = null!;
    long _commits, _aborts;

    [GlobalSetup]
    public void Setup()
    {
        _db = new Database();
        _workload = new Ycsb(Rows, 16, 0.5, Theta);
        _workload.Load(_db);
        _protocol = ProtocolRegistry.Create(Protocol, ProtocolSetup.For(_db, Workers));
    }

    [Benchmark(OperationsPerInvoke = PerWorker * Workers)]
    public long Transactions()
    {
        var result = WorkerPool.Run(_protocol, _workload, new RunOptions(Workers, 0, TransactionsPerWorker: PerWorker));
        _commits += result.Total.Commits;
        _aborts += result.Total.TotalAborts;
        return result.Total.Commits;
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        AbortRateColumn.Record(FormattableString.Invariant($"{Protocol}/{Theta}/{Rows}"), _aborts / (double)Math.Max(1, _commits + _aborts));
        _db.Dispose();
    }
}

/// <summary>Conflict aborts per attempt, as the YCSB benchmark measured them.</summary>
public sealed class AbortRateColumn : IColumn
{
    static readonly Dictionary<string, double> Rates = new();

    public static void Record(string key, double rate)
    {
        lock (Rates) Rates[key] = rate;
    }

    static string Key(BenchmarkCase c) => c.Descriptor.Type == typeof(StealDbThroughput)
        ? FormattableString.Invariant($"{c.Parameters["Protocol"]}/hot {c.Parameters["Hot"]}")
        : FormattableString.Invariant($"{c.Parameters["Protocol"]}/{c.Parameters["Theta"]}/{c.Parameters["Rows"]}");

    public string Id => nameof(AbortRateColumn);
    public string ColumnName => "Abort rate";
    public bool AlwaysShow => false;
    public ColumnCategory Category => ColumnCategory.Custom;
    public int PriorityInCategory => 0;
    public bool IsNumeric => true;
    public UnitType UnitType => UnitType.Dimensionless;
    public string Legend => "conflict aborts per attempt (the throughput benchmarks only)";

    public string GetValue(Summary summary, BenchmarkCase benchmarkCase)
    {
        if (benchmarkCase.Descriptor.Type != typeof(YcsbThroughput) && benchmarkCase.Descriptor.Type != typeof(StealDbThroughput)) return "-";
        lock (Rates) return Rates.TryGetValue(Key(benchmarkCase), out var r) ? r.ToString("P1", System.Globalization.CultureInfo.InvariantCulture) : "-";
    }

    public string GetValue(Summary summary, BenchmarkCase benchmarkCase, SummaryStyle style) => GetValue(summary, benchmarkCase);
    public bool IsDefault(Summary summary, BenchmarkCase benchmarkCase) => false;
    public bool IsAvailable(Summary summary) =>
        summary.BenchmarksCases.Any(c => c.Descriptor.Type == typeof(YcsbThroughput) || c.Descriptor.Type == typeof(StealDbThroughput));
}
