using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

public class WorkerPoolTests
{
    /// <summary>A workload whose sources cannot be made: its workers fail before they start.</summary>
    sealed class Unstartable : IWorkload
    {
        public string Name => "unstartable";
        public string Describe() => "a workload whose CreateSource throws";
        public void Load(Database db) => db.Create("t", 8, 1);
        public ITransactionSource CreateSource(int worker, ulong seed) => throw new InvalidOperationException($"no source for worker {worker}");
    }

    /// <summary>Before, a worker that failed before it signalled its start left the pool waiting
    /// for that signal for ever.</summary>
    [Theory]
    [InlineData("NoWait")]
    [InlineData("Strife")]
    public async Task AWorkerThatFailsBeforeItStartsFailsTheRun(string protocol)
    {
        using var db = new Database();
        var workload = new Unstartable();
        workload.Load(db);
        var run = Task.Run(() => WorkerPool.Run(ProtocolRegistry.Create(protocol, ProtocolSetup.For(db, 2)), workload, new RunOptions(2, Seconds: 60, Pin: false)));
        Assert.True(await Task.WhenAny(run, Task.Delay(TimeSpan.FromSeconds(30))) == run, $"{protocol}: the run is still waiting for its workers");
        var e = await Assert.ThrowsAsync<InvalidOperationException>(() => run);
        Assert.Contains("no source for worker", e.Message);
    }

    /// <summary>A workload whose 500th transaction's body throws.</summary>
    sealed class ExplodingWorkload : IWorkload
    {
        TxnProgram _transfer = null!, _faulty = null!;
        int _drawn;

        public string Name => "exploding";
        public string Describe() => "bank transfers, one of which throws";

        public void Load(Database db)
        {
            _transfer = ContendEngineTests.OpenAccounts(db).Transfer;
            _faulty = new ProgramBuilder("faulty", db, 1).Write("explode", "account", KeySource.FromArg(0), ContendEngineTests.Explode).Build();
        }

        public ITransactionSource CreateSource(int worker, ulong seed) => new Source(this);

        sealed class Source(ExplodingWorkload w) : ITransactionSource
        {
            public TxnProgram Next(TxnContext ctx)
            {
                int n = Interlocked.Increment(ref w._drawn);
                ctx.Args[0] = n % ContendEngineTests.Accounts;
                ctx.Args[1] = (n + 1) % ContendEngineTests.Accounts;
                ctx.Args[2] = 1;
                return n == 500 ? w._faulty : w._transfer;
            }
        }
    }

    /// <summary>Before <see cref="BatchWorker.Failed"/>, a Strife run whose worker died mid-batch
    /// waited for that batch for ever: the pool must report the failure instead.</summary>
    [Fact]
    public async Task APoolRunWhoseBodyThrowsEndsWithTheFailure()
    {
        var workload = new ExplodingWorkload();
        using var db = new Database();
        workload.Load(db);
        var strife = ProtocolRegistry.Create("Strife", new ProtocolSetup(db, 2, new StrifeOptions(BatchSize: 50)));
        var run = Task.Run(() => WorkerPool.Run(strife, workload, new RunOptions(Threads: 2, Seconds: 0, Pin: false, TransactionsPerWorker: 2_000)));
        Assert.True(await Task.WhenAny(run, Task.Delay(ContendEngineTests.Patience)) == run, "the run did not end after its worker failed");
        var failed = Assert.IsType<InvalidOperationException>(run.Exception!.InnerException);
        Assert.Contains("boom", failed.Message);
    }
}
