using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Microsoft.Extensions.Logging;

namespace Contend.Tests;

/// <summary>
/// What a host sees of an engine: its log (start, stop, a program that threw), its metrics on
/// the host's meter factory, and one span per transaction under the caller's activity.
/// </summary>
public class EngineTelemetryTests
{
    internal sealed class ListLogger : ILogger
    {
        public readonly ConcurrentQueue<(LogLevel Level, EventId Id, string Message, Exception? Error)> Entries = new();
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
        public bool IsEnabled(LogLevel logLevel) => true;
        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            Entries.Enqueue((logLevel, eventId, formatter(state, exception), exception));
    }

    /// <summary>A host's factory: meters it made, disposed with it.</summary>
    internal sealed class HostMeters : IMeterFactory
    {
        public readonly List<Meter> Made = [];
        public Meter Create(MeterOptions options)
        {
            var meter = new Meter(options.Name, options.Version, options.Tags, scope: this);
            Made.Add(meter);
            return meter;
        }
        public void Dispose() => Made.ForEach(m => m.Dispose());
    }

    [Fact]
    public async Task TheLogTellsStartStopAndAProgramThatThrew()
    {
        var log = new ListLogger();
        var (db, transfer, _) = ContendEngineTests.Bank();
        var faulty = new ProgramBuilder("faulty", db, 3)
            .Write("explode", "account", KeySource.FromArg(0), ContendEngineTests.Explode)
            .Build();
        await using (var engine = new ContendEngine(db, ContendEngineTests.Options("NoWait"), log))
        {
            await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(faulty, [0, 1, 5]).AsTask());
            Assert.True((await engine.ExecuteAsync(transfer, [0, 1, 5])).Committed);
        }
        var entries = log.Entries.ToArray();
        Assert.Contains(entries, e => e.Level == LogLevel.Information && e.Message.Contains("engine 'bank' started: protocol NoWait, 2 workers"));
        var threw = Assert.Single(entries, e => e.Level == LogLevel.Warning);
        Assert.Contains("program faulty threw", threw.Message);
        Assert.Equal("boom", threw.Error!.Message);
        Assert.Contains(entries, e => e.Level == LogLevel.Information && e.Message.Contains("engine 'bank' stopped: 1 committed"));
    }

    [Fact]
    public async Task MetricsGoToTheHostsMeter()
    {
        using var meters = new HostMeters();
        var (db, transfer, _) = ContendEngineTests.Bank();
        long committed = 0;
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            // Only the host's meter: the process's default one counts other tests' engines.
            if (instrument.Meter.Scope == meters && instrument.Name == "contend.transactions.committed") l.EnableMeasurementEvents(instrument);
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            foreach (var tag in tags)
                if (tag is { Key: "workload", Value: "bank" }) Interlocked.Add(ref committed, value);
        });
        listener.Start();
        await using (var engine = new ContendEngine(db, ContendEngineTests.Options("Silo"), meters: meters))
        {
            for (int i = 0; i < 10; i++) Assert.True((await engine.ExecuteAsync(transfer, [i % 3, 3 + i % 3, 1])).Committed);
            listener.RecordObservableInstruments();
            Assert.Equal(10, Interlocked.Exchange(ref committed, 0));
        }
        Assert.Equal(ContendEngine.TelemetryName, Assert.Single(meters.Made).Name);
        listener.RecordObservableInstruments(); // an ended engine's counts stay in its meter
        Assert.Equal(10, committed);
    }

    [Fact]
    public async Task EachTransactionIsASpanUnderTheCallersActivity()
    {
        var spans = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name is ContendEngine.TelemetryName or "test",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = a => { if (a.Source.Name == ContendEngine.TelemetryName) spans.Enqueue(a); },
        };
        ActivitySource.AddActivityListener(listener);
        using var test = new ActivitySource("test");
        var (db, transfer, _) = ContendEngineTests.Bank();
        await using (var engine = new ContendEngine(db, ContendEngineTests.Options("StealDB")))
        {
            using var request = test.StartActivity("request")!;
            Assert.True((await engine.ExecuteAsync(transfer, [0, 1, 5])).Committed);
            Assert.Equal(AbortReason.User, (await engine.ExecuteAsync(transfer, [2, 3, 1_000_000])).Reason); // not enough money
            Assert.Same(request, Activity.Current); // the caller's activity is left as it was
            var all = spans.ToArray();
            Assert.Equal(2, all.Length);
            Assert.All(all, s =>
            {
                Assert.Equal("contend.transaction", s.OperationName);
                Assert.Equal(request.TraceId, s.TraceId);
                Assert.Equal(request.SpanId, s.ParentSpanId);
                Assert.Equal("transfer", s.GetTagItem("contend.program"));
                Assert.Equal("StealDB", s.GetTagItem("contend.protocol"));
                Assert.True(s.Duration > TimeSpan.Zero);
            });
            Assert.Equal("Committed", all[0].GetTagItem("contend.outcome"));
            Assert.Equal("UserAborted", all[1].GetTagItem("contend.outcome"));
            Assert.Equal("User", all[1].GetTagItem("contend.reason"));
        }
    }
}
