using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness.Workloads;

namespace Contend.Tests;

/// <summary>No allocation per transaction in steady state, history recording off.</summary>
public class AllocationTests
{
    /// <summary>The per-transaction protocols; Strife, a batch protocol, is measured per batch below.</summary>
    public static TheoryData<string> Protocols => new(ProtocolRegistry.Descriptors.Where(d => d.Serializable && d.Kind == ProtocolKind.PerTransaction).Select(d => d.Name));

    [Theory, MemberData(nameof(Protocols))]
    public void SteadyStateTransactionsAllocateNothing(string protocol)
    {
        foreach (IWorkload workload in new IWorkload[] { new Ycsb(10_000, 16, 0.5, 0.9), new Tpcc(1, inserts: true, orderCapacity: 20_000) })
        {
            using var db = new Database();
            workload.Load(db);
            var p = (ITransactionProtocol)ProtocolRegistry.Create(protocol, ProtocolSetup.For(db, 1));
            var ctx = new TxnContext(0, recorder: null);
            var source = workload.CreateSource(0, 1);
            long RunMany(int n)
            {
                long before = GC.GetAllocatedBytesForCurrentThread();
                for (int i = 0; i < n; i++)
                {
                    ctx.Start(source.Next(ctx), i + 1);
                    p.Run(ctx, out _);
                }
                return GC.GetAllocatedBytesForCurrentThread() - before;
            }
            // Warm-up: lazy statics, and tiered JIT, which promotes hot methods only after a
            // delay (about 100 ms) and may allocate on this thread when it does: run past it.
            var warmup = System.Diagnostics.Stopwatch.StartNew();
            do RunMany(2_000); while (warmup.ElapsedMilliseconds < 500);
            Assert.Equal(0, RunMany(5_000));
        }
    }
}
