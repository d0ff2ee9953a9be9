using BenchmarkDotNet.Attributes;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;

namespace Contend.Benchmarks;

/// <summary>
/// YCSB throughput over protocol and skew on 2 workers: each invocation runs a fixed number of
/// transactions per worker, so Op/s is transactions per second (history off).
/// </summary>
public class YcsbThroughput : ThroughputBenchmark
{
    const int PerWorker = 50_000;

    [ParamsSource(nameof(Protocols))]
    public string Protocol = "";

    /// <summary>Every per-transaction protocol of the registry, so a new one is measured with no line here.</summary>
    public static IEnumerable<string> Protocols =>
        ProtocolRegistry.Descriptors.Where(d => d.Serializable && d.Kind == ProtocolKind.PerTransaction).Select(d => d.Name);

    [Params(0.0, 0.9)]
    public double Theta;

    [Params(1_000_000)]
    public int Rows;

    protected override string ProtocolName => Protocol;

    private protected override IWorkload CreateWorkload() => new Ycsb(Rows, 16, 0.5, Theta);

    [Benchmark(OperationsPerInvoke = PerWorker * Workers)]
    public long Transactions() => Run(PerWorker);
}
