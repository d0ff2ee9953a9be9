using BenchmarkDotNet.Attributes;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;

namespace Contend.Benchmarks;

/// <summary>
/// StealDB's micro-benchmark (seed 000, Section 4: 32 tables x 100K records, 32 increments per
/// transaction) at the highest contention (one hot record in the first table) and with none,
/// for StealDB and the baselines its code runs (basic work stealing, no stealing) beside the
/// core's Mcs, on 2 workers: each invocation runs a fixed number of transactions per worker,
/// so Op/s is transactions per second (history off). The same comparison as `contend study
/// stealdb`'s first figure, at its two ends, under BenchmarkDotNet's statistics.
/// </summary>
public class StealDbThroughput : ThroughputBenchmark
{
    const int PerWorker = 5_000;

    [Params("StealDB", "StealDBNoSteal", "StealDBBasicWS", "Mcs")]
    public string Protocol = "";

    /// <summary>Records of the first table in use: 1 (every transaction queues on one) or 0 (all).</summary>
    [Params(1, 0)]
    public int Hot;

    protected override string ProtocolName => Protocol;

    private protected override IWorkload CreateWorkload() => new StealDbMicro(32, 100_000, 32, Hot);

    [Benchmark(OperationsPerInvoke = PerWorker * Workers)]
    public long Transactions() => Run(PerWorker);
}
