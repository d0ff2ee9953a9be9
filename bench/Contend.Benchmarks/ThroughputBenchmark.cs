using BenchmarkDotNet.Attributes;
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

    private protected abstract IWorkload CreateWorkload();

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
        RecordedShareColumn.Record<AbortRateColumn>(this, _aborts / (double)Math.Max(1, _commits + _aborts));
        _db.Dispose();
    }
}
