using System.Globalization;
using System.Reflection;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;

namespace Contend.Benchmarks;

/// <summary>
/// A share (0 to 1) that a benchmark counts in its runs and records at its cleanup, shown per
/// case beside the timings. The toolchain is in-process, so the benchmark instance and the
/// summary meet in one static table, keyed by the declaring type and the case's parameters.
/// </summary>
public abstract class RecordedShareColumn(string columnName, int priority, string legend) : IColumn
{
    static readonly Dictionary<string, double> Shares = new();

    /// <summary>Records <paramref name="benchmark"/>'s share for the column of type <typeparamref name="TColumn"/>.</summary>
    public static void Record<TColumn>(object benchmark, double share) where TColumn : RecordedShareColumn
    {
        lock (Shares) Shares[typeof(TColumn).Name + "|" + KeyOf(benchmark)] = share;
    }

    /// <summary>Whether this column has a figure for cases of <paramref name="benchmark"/>.</summary>
    protected abstract bool Measures(Type benchmark);

    /// <summary>The class that declares the benchmark: the in-process toolchain runs a type it
    /// emits, derived from it, which the summary's cases do not name.</summary>
    static Type Declaring(Type type)
    {
        while (type.Assembly != typeof(RecordedShareColumn).Assembly) type = type.BaseType!;
        return type;
    }

    static string KeyOf(object benchmark)
    {
        var parameters = benchmark.GetType().GetMembers(BindingFlags.Public | BindingFlags.Instance)
            .Where(m => m.GetCustomAttribute<ParamsAttribute>() is not null)
            .Select(m => (m.Name, m switch
            {
                FieldInfo f => f.GetValue(benchmark),
                PropertyInfo p => p.GetValue(benchmark),
                _ => null,
            }));
        return Key(Declaring(benchmark.GetType()), parameters);
    }

    /// <summary>Parameters sorted by name, so that the instance and the summary's case name a
    /// case alike whatever order each lists them in.</summary>
    static string Key(Type type, IEnumerable<(string Name, object? Value)> parameters) =>
        type.Name + "/" + string.Join("/", parameters.OrderBy(p => p.Name, StringComparer.Ordinal)
                                                     .Select(p => $"{p.Name}={Convert.ToString(p.Value, CultureInfo.InvariantCulture)}"));

    public string Id => GetType().Name;
    public string ColumnName => columnName;
    public bool AlwaysShow => false;
    public ColumnCategory Category => ColumnCategory.Custom;
    public int PriorityInCategory => priority;
    public bool IsNumeric => true;
    public UnitType UnitType => UnitType.Dimensionless;
    public string Legend => legend;

    public string GetValue(Summary summary, BenchmarkCase benchmarkCase)
    {
        if (!Measures(benchmarkCase.Descriptor.Type)) return "-";
        string key = GetType().Name + "|" + Key(benchmarkCase.Descriptor.Type, benchmarkCase.Parameters.Items.Select(p => (p.Name, (object?)p.Value)));
        lock (Shares) return Shares.TryGetValue(key, out var share) ? share.ToString("P1", CultureInfo.InvariantCulture) : "-";
    }

    public string GetValue(Summary summary, BenchmarkCase benchmarkCase, SummaryStyle style) => GetValue(summary, benchmarkCase);
    public bool IsDefault(Summary summary, BenchmarkCase benchmarkCase) => false;
    public bool IsAvailable(Summary summary) => summary.BenchmarksCases.Any(c => Measures(c.Descriptor.Type));
}

/// <summary>Conflict aborts per attempt, as the throughput benchmarks measured them.</summary>
public sealed class AbortRateColumn() : RecordedShareColumn("Abort rate", 0, "conflict aborts per attempt (the throughput benchmarks only)")
{
    protected override bool Measures(Type benchmark) => benchmark.IsSubclassOf(typeof(ThroughputBenchmark));
}

/// <summary>The share of analysed transactions left residual, as the analysis benchmark measured it.</summary>
public sealed class ResidualShareColumn() : RecordedShareColumn("Residual", 1, "share of analysed transactions left residual (Strife analysis only)")
{
    protected override bool Measures(Type benchmark) => benchmark == typeof(StrifeAnalysisCost);
}
