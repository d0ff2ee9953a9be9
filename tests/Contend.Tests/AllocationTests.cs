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

    /// <summary>The async front door in steady state: a caller awaiting one transaction after
    /// another allocates nothing per transaction, its request a pooled source. Measured over the
    /// whole process (the workers' threads too); one object per transaction would be at least
    /// 24 bytes each, so a bound of 1 byte per transaction leaves room only for the odd
    /// allocation of the runtime's own (a round's 25-40 KB before the least of three was taken).</summary>
    [Theory]
    [InlineData("NoWait"), InlineData("StealDB"), InlineData("Silo"), InlineData("Strife")]
    public async Task ExecuteAsyncAllocatesNothingPerTransaction(string protocol)
    {
        const int Measured = 20_000;
        var (db, transfer, _) = ContendEngineTests.Bank();
        await using var engine = new ContendEngine(db, ContendEngineTests.Options(protocol, workers: 1));
        var args = new long[3];
        var results = new long[2];
        // Off xunit's synchronization context, whose posts would allocate.
        long allocated = await Task.Run(async () =>
        {
            async Task RunMany(int n)
            {
                for (int i = 0; i < n; i++)
                {
                    args[0] = i % 6; args[1] = (i + 1) % 6; args[2] = 1;
                    var outcome = await engine.ExecuteAsync(transfer, args, results).ConfigureAwait(false);
                    if (!outcome.Committed) throw new InvalidOperationException($"a transfer of 1 ended {outcome}");
                }
            }
            var warmup = System.Diagnostics.Stopwatch.StartNew();
            do await RunMany(2_000); while (warmup.ElapsedMilliseconds < 1_000); // tiered JIT, pools filled
            // The least of three rounds: the runtime's own threads (the JIT's background
            // compiles, the thread pool's) allocate now and then, not per transaction.
            long least = long.MaxValue;
            for (int round = 0; round < 3; round++)
            {
                long before = GC.GetTotalAllocatedBytes(precise: true);
                await RunMany(Measured);
                least = Math.Min(least, GC.GetTotalAllocatedBytes(precise: true) - before);
            }
            return least;
        });
        Assert.True(allocated < Measured, $"{protocol}: {allocated:N0} bytes for {Measured:N0} transactions");
    }
}
