using System.Diagnostics.Metrics;
using Contend.Engine.Diagnostics;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.StealDB;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness.Workloads;

namespace Contend.Tests;

/// <summary>Alone: the Strife counters are per protocol name, which other tests' runs share.</summary>
[CollectionDefinition(nameof(EngineMetricsTests), DisableParallelization = true)]
public class EngineMetricsCollection;

/// <summary>
/// The meter's counters say what the runs report: a run's commits and aborts by reason, its
/// warm-up left out, StealDB's stolen ops and Strife's batches and residuals; and a counter
/// read while a run goes never goes down.
/// </summary>
[Collection(nameof(EngineMetricsTests))]
public class EngineMetricsTests
{
    /// <summary>A workload under a name of its own, so that its series is this test's alone.</summary>
    sealed class Named(IWorkload inner) : IWorkload
    {
        public string Name { get; } = $"{inner.Name}-{Guid.NewGuid():N}";
        public string Describe() => inner.Describe();
        public void Load(Database db) => inner.Load(db);
        public ITransactionSource CreateSource(int worker, ulong seed) => inner.CreateSource(worker, seed);
    }

    /// <summary>Collects the meter's observable counters on demand: instrument and tags to value.</summary>
    sealed class Reader : IDisposable
    {
        readonly MeterListener _listener = new();
        readonly Dictionary<string, long> _last = [];

        public Reader()
        {
            _listener.InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == EngineMetrics.MeterName) l.EnableMeasurementEvents(instrument);
            };
            _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
                _last[Key(instrument.Name, tags.ToArray())] = value);
            _listener.Start();
        }

        static string Key(string instrument, KeyValuePair<string, object?>[] tags) =>
            instrument + "|" + string.Join(",", tags.OrderBy(t => t.Key).Select(t => $"{t.Key}={t.Value}"));

        /// <summary>The counter's value for exactly these tags; 0 if it has no such series yet.</summary>
        public long Read(string instrument, params (string Key, string Value)[] tags)
        {
            _last.Clear();
            _listener.RecordObservableInstruments();
            return _last.GetValueOrDefault(Key(instrument, tags.Select(t => new KeyValuePair<string, object?>(t.Key, t.Value)).ToArray()));
        }

        public void Dispose() => _listener.Dispose();
    }

    static (string, string)[] Tags(IProtocol p, IWorkload w) => [("protocol", p.Name), ("workload", w.Name)];

    [Fact]
    public void CountsWhatTheRunReportsWithoutItsWarmup()
    {
        using var reader = new Reader();
        var workload = new Named(new Ycsb(rows: 10_000, requests: 16, readFraction: 0.5, theta: 0.9));
        using var db = new Database();
        workload.Load(db);
        var protocol = ProtocolRegistry.Create("NoWait", ProtocolSetup.For(db, 2));
        Assert.Equal(0, reader.Read("contend.transactions.committed", Tags(protocol, workload)));

        var result = WorkerPool.Run(protocol, workload, new RunOptions(Threads: 2, Seconds: 0.4, WarmupSeconds: 0.3, Pin: false));

        Assert.True(result.Total.Commits > 0, "no transaction committed");
        Assert.True(result.Total.Aborts[(int)AbortReason.LockBusy] > 0, "no conflict abort: the abort counter is not exercised");
        Assert.Equal(result.Total.Commits, reader.Read("contend.transactions.committed", Tags(protocol, workload)));
        foreach (var reason in Enum.GetValues<AbortReason>().Where(r => r != AbortReason.None))
            Assert.Equal(result.Total.Aborts[(int)reason],
                         reader.Read("contend.transactions.aborted", [.. Tags(protocol, workload), ("reason", reason.ToString())]));
    }

    [Fact]
    public void NeverGoesDownWhileARunGoes()
    {
        using var reader = new Reader();
        var workload = new Named(new Ycsb(rows: 10_000, requests: 16, readFraction: 0.5, theta: 0.9));
        using var db = new Database();
        workload.Load(db);
        var protocol = ProtocolRegistry.Create("WaitDie", ProtocolSetup.For(db, 2));
        var seen = new List<long>();
        bool done = false;
        // A thread of its own: the run's two workers spin on both cores, and a pool thread or
        // the test framework's scheduler may not get a turn until they stop.
        var poller = new Thread(() =>
        {
            while (!Volatile.Read(ref done))
            {
                seen.Add(reader.Read("contend.transactions.committed", Tags(protocol, workload)));
                Thread.Sleep(2);
            }
        }) { Priority = ThreadPriority.AboveNormal };
        poller.Start();
        var result = WorkerPool.Run(protocol, workload, new RunOptions(Threads: 2, Seconds: 0.6, WarmupSeconds: 0.3, Pin: false));
        Volatile.Write(ref done, true);
        poller.Join();
        long final = reader.Read("contend.transactions.committed", Tags(protocol, workload));

        Assert.Equal(result.Total.Commits, final);
        Assert.Contains(seen, v => v > 0 && v < final); // read while the run went, not only at its end
        for (int i = 1; i < seen.Count; i++) Assert.True(seen[i] >= seen[i - 1], $"reading {i}: {seen[i]} after {seen[i - 1]}");
        Assert.True(seen[^1] <= final);
    }

    [Fact]
    public void CountsStolenOpsAndStrifesBatches()
    {
        using var reader = new Reader();
        var micro = new Named(new StealDbMicro(tables: 8, rows: 1000, ops: 8, hot: 1));
        using (var db = new Database())
        {
            micro.Load(db);
            // Its descriptor declares the counter; other tests' StealDB runs have ended before this
            // collection runs, so the series moves by this run's count alone.
            var stealDb = (StealDb)ProtocolRegistry.Create("StealDB", ProtocolSetup.For(db, 2));
            long before = reader.Read("contend.stealdb.ops.stolen", ("protocol", stealDb.Name));
            WorkerPool.Run(stealDb, micro, new RunOptions(Threads: 2, Seconds: 0.3, Pin: false));
            Assert.True(stealDb.StolenOps > 0, "no op was stolen");
            Assert.Equal(before + stealDb.StolenOps, reader.Read("contend.stealdb.ops.stolen", ("protocol", stealDb.Name)));
        }

        var ycsb = new Named(new Ycsb(rows: 10_000, requests: 16, readFraction: 0.5, theta: 0.99, partitions: 2));
        using (var db = new Database())
        {
            ycsb.Load(db);
            var strife = new StrifeProtocol(ProtocolSetup.For(db, 2), new StrifeOptions(BatchSize: 200));
            long batches = reader.Read("contend.strife.batches", ("protocol", strife.Name));
            long residuals = reader.Read("contend.strife.transactions.residual", ("protocol", strife.Name));
            var result = WorkerPool.Run(strife, ycsb, new RunOptions(Threads: 2, Seconds: 0.3, Pin: false));
            Assert.True(strife.Counts.Batches > 0, "no batch was analysed");
            Assert.Equal(batches + strife.Counts.Batches, reader.Read("contend.strife.batches", ("protocol", strife.Name)));
            Assert.Equal(residuals + strife.Counts.Residuals, reader.Read("contend.strife.transactions.residual", ("protocol", strife.Name)));
            Assert.Equal(result.Total.Commits, reader.Read("contend.transactions.committed", Tags(strife, ycsb)));
        }
    }
}
