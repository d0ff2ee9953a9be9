using BenchmarkDotNet.Attributes;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
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
public class StealDbThroughput
{
    const int PerWorker = 5_000, Workers = 2;

    [Params("StealDB", "StealDBNoSteal", "StealDBBasicWS", "Mcs")]
    public string Protocol = "";

    /// <summary>Records of the first table in use: 1 (every transaction queues on one) or 0 (all).</summary>
    [Params(1, 0)]
    public int Hot;

    Database _db = null!;
    StealDbMicro _workload = null!;
    IProtocol _protocol = null!;
    long _commits, _aborts;

    [GlobalSetup]
    public void Setup()
    {
        _db = new Database();
        _workload = new StealDbMicro(32, 100_000, 32, Hot);
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
        AbortRateColumn.Record(FormattableString.Invariant($"{Protocol}/hot {Hot}"), _aborts / (double)Math.Max(1, _commits + _aborts));
        _db.Dispose();
    }
}
