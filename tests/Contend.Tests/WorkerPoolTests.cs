using Contend.Engine.Programs;
using Contend.Engine.Protocols;
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
}
