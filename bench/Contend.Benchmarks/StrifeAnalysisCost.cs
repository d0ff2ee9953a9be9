using BenchmarkDotNet.Attributes;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
// The harness's Orleans packages bring a global `using Orleans;`, which has a BatchWorker too.
using BatchWorker = Contend.Engine.Runtime.BatchWorker;
using Contend.Harness.Workloads;

namespace Contend.Benchmarks;

/// <summary>
/// The cost of Strife's analysis alone (pre-processing, spot, allocate, merge, re-allocation,
/// the schedule) for one batch on one thread, per batch size and workload: Op/s is analysed
/// transactions per second. The share of transactions left residual is its own column.
/// Transactions are drawn from the workload inside the measured call, as the engine draws them.
/// </summary>
public class StrifeAnalysisCost
{
    [Params(100, 1_000, 10_000)]
    public int BatchSize;

    [Params("tpcc-1", "tpcc-4", "ycsb-0.99", "ycsb-0.0")]
    public string Workload = "";

    Database _db = null!;
    StrifeProtocol _strife = null!;
    BatchWorker _worker = null!;
    long _transactions, _residuals;

    [GlobalSetup]
    public void Setup()
    {
        _db = new Database();
        IWorkload workload = Workload switch
        {
            "tpcc-1" => new Tpcc(1, inserts: true, orderCapacity: 10_000),
            "tpcc-4" => new Tpcc(4, inserts: true, orderCapacity: 10_000),
            "ycsb-0.99" => new Ycsb(100_000, 16, 0.5, 0.99),
            _ => new Ycsb(100_000, 16, 0.5, 0.0),
        };
        workload.Load(_db);
        _strife = new StrifeProtocol(ProtocolSetup.For(_db, 2), new StrifeOptions(BatchSize: BatchSize));
        _worker = new BatchWorker(new TxnContext(0, null), workload.CreateSource(0, 1), new WorkerStats(), 1, RunControl.Fixed(long.MaxValue));
    }

    [Benchmark(OperationsPerInvoke = 1)]
    public int AnalyseOneBatch()
    {
        var view = _strife.AnalyseAlone(_worker);
        _transactions += view.Count;
        _residuals += view.Residuals;
        return view.Clusters;
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        RecordedShareColumn.Record<ResidualShareColumn>(this, _residuals / (double)Math.Max(1, _transactions));
        _db.Dispose();
    }
}
