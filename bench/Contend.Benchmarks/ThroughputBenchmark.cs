using System.Globalization;
using System.Reflection;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Benchmarks;

/// <summary>
/// One protocol on one workload on <see cref="Workers"/> workers. A subclass names the
/// protocol and workload by its [Params] and runs <see cref="Run"/> from its [Benchmark]
/// method, whose OperationsPerInvoke is the transactions one call runs, so Op/s is
/// transactions per second (history off). Each case's conflict-abort rate goes to
/// <see cref="AbortRateColumn"/>.
/// </summary>
public abstract class ThroughputBenchmark
{
    protected const int Workers = 2;

    Database _db = null!;
    IWorkload _workload = null!;
    IProtocol _protocol = null!;
    long _commits, _aborts;

    protected abstract string ProtocolName { get; }

    protected abstract IWorkload CreateWorkload();

    [GlobalSetup]
    public void Setup()
    {
        _db = new Database();
        _workload = CreateWorkload();
        _workload.Load(_db);
        _protocol = ProtocolRegistry.Create(ProtocolName, ProtocolSetup.For(_db, Workers));
    }

    /// <summary>Runs <paramref name="perWorker"/> transactions on each worker; the commits.</summary>
    protected long Run(int perWorker)
    {
        var result = WorkerPool.Run(_protocol, _workload, new RunOptions(Workers, 0, TransactionsPerWorker: perWorker));
        _commits += result.Total.Commits;
        _aborts += result.Total.TotalAborts;
        return result.Total.Commits;
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        AbortRateColumn.Record(AbortRateColumn.Key(BenchmarkType(), ParameterValues()), _aborts / (double)Math.Max(1, _commits + _aborts));
        _db.Dispose();
    }

    /// <summary>The subclass that declares the benchmark: the in-process toolchain runs a type it
    /// derives from it, which the summary's cases do not name.</summary>
    Type BenchmarkType()
    {
        var type = GetType();
        while (type.BaseType != typeof(ThroughputBenchmark)) type = type.BaseType!;
        return type;
    }

    /// <summary>This case's [Params] fields and properties, by name, as BenchmarkDotNet names the case.</summary>
    IEnumerable<(string Name, object? Value)> ParameterValues() =>
        GetType().GetMembers(BindingFlags.Public | BindingFlags.Instance)
            .Where(m => m.GetCustomAttribute<ParamsAttribute>() is not null)
            .Select(m => (m.Name, m switch
            {
                FieldInfo f => f.GetValue(this),
                PropertyInfo p => p.GetValue(this),
                _ => null,
            }));
}

/// <summary>Conflict aborts per attempt, as the throughput benchmarks measured them.</summary>
public sealed class AbortRateColumn : IColumn
{
    static readonly Dictionary<string, double> Rates = new();

    public static void Record(string key, double rate)
    {
        lock (Rates) Rates[key] = rate;
    }

    /// <summary>A case's key: its type and its parameters, sorted by name, so that the benchmark
    /// instance and the summary's case name it alike whatever order each lists them in.</summary>
    public static string Key(Type type, IEnumerable<(string Name, object? Value)> parameters) =>
        type.Name + "/" + string.Join("/", parameters.OrderBy(p => p.Name, StringComparer.Ordinal)
                                                     .Select(p => $"{p.Name}={Convert.ToString(p.Value, CultureInfo.InvariantCulture)}"));

    static bool Measured(BenchmarkCase c) => c.Descriptor.Type.IsSubclassOf(typeof(ThroughputBenchmark));

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
        if (!Measured(benchmarkCase)) return "-";
        string key = Key(benchmarkCase.Descriptor.Type, benchmarkCase.Parameters.Items.Select(p => (p.Name, (object?)p.Value)));
        lock (Rates) return Rates.TryGetValue(key, out var r) ? r.ToString("P1", CultureInfo.InvariantCulture) : "-";
    }

    public string GetValue(Summary summary, BenchmarkCase benchmarkCase, SummaryStyle style) => GetValue(summary, benchmarkCase);
    public bool IsDefault(Summary summary, BenchmarkCase benchmarkCase) => false;
    public bool IsAvailable(Summary summary) => summary.BenchmarksCases.Any(Measured);
}
