using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Microsoft.Extensions.Logging;

namespace Contend.Tests.ReactDB;

/// <summary>
/// What a host sees of a ReactDB engine, as of <see cref="ContendEngine"/>: its log (start, stop,
/// a function that threw), its counters on the host's meter tagged protocol ReactDB, and one span
/// per root under the caller's activity.
/// </summary>
public class ReactDbTelemetryTests
{
    static readonly ReactorFunction Throws = new("throws", (_, _) => throw new InvalidOperationException("boom"));

    /// <summary>args: row. Ends the root by its logic: nothing written, not retried.</summary>
    static readonly ReactorFunction Refuses = new("refuses", (call, _) =>
    {
        call.AbortRoot();
        return ValueTask.FromResult(0L);
    });

    [Fact]
    public async Task TheLogTellsStartStopAndAFunctionThatThrew()
    {
        var log = new EngineTelemetryTests.ListLogger();
        var deployment = ReactDbTests.Bank(2, 2);
        await using (var engine = new ReactDbEngine(deployment, new ReactDbOptions { Name = "mart" }, log))
        {
            var failed = await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], Throws, default).AsTask());
            Assert.Equal("throws", failed.Program);
            Assert.True((await engine.ExecuteAsync(deployment.Reactors[1], ReactDbTests.Deposit, new long[] { 0, 5 })).Outcome.Committed);
            Assert.Equal(Outcome.UserAborted, (await engine.ExecuteAsync(deployment.Reactors[1], Refuses, default)).Outcome.Outcome);
        }
        var entries = log.Entries.ToArray();
        Assert.Contains(entries, e => e.Level == LogLevel.Information
                                      && e.Message.Contains("ReactDB engine 'mart' started: 2 containers of 1 executors each, 2 reactors, 16 roots in flight at most"));
        var threw = Assert.Single(entries, e => e.Level == LogLevel.Warning);
        Assert.Contains("engine 'mart': program throws threw", threw.Message);
        Assert.Equal("boom", threw.Error!.Message);
        Assert.Contains(entries, e => e.Level == LogLevel.Information && e.Message.Contains("engine 'mart' stopped: 1 committed, 1 ended by their programs, 0 conflict aborts"));
    }

    [Fact]
    public async Task CountersGoToTheHostsMeterTaggedReactDB()
    {
        using var meters = new EngineTelemetryTests.HostMeters();
        var seen = new ConcurrentDictionary<string, long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Scope == meters) l.EnableMeasurementEvents(instrument); // the host's meter only
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            var t = tags.ToArray().ToDictionary(x => x.Key, x => x.Value);
            if (t.GetValueOrDefault("protocol") is "ReactDB" && t.GetValueOrDefault("workload") is "mart")
                seen[instrument.Name + (t.GetValueOrDefault("reason") is string reason ? "/" + reason : "")] = value;
        });
        listener.Start();
        var deployment = ReactDbTests.Bank(2, 2);
        await using (var engine = new ReactDbEngine(deployment, new ReactDbOptions { Name = "mart" }, meters: meters))
        {
            for (int i = 0; i < 10; i++)
                Assert.True((await engine.ExecuteAsync(deployment.Reactors[i % 2], ReactDbTests.Deposit, new long[] { i % 4, 1 })).Outcome.Committed);
            Assert.Equal(Outcome.UserAborted, (await engine.ExecuteAsync(deployment.Reactors[0], Refuses, default)).Outcome.Outcome);
            listener.RecordObservableInstruments();
            Assert.Equal(10, seen.GetValueOrDefault("contend.transactions.committed"));
            Assert.Equal(1, seen.GetValueOrDefault("contend.transactions.aborted/User"));
            Assert.Equal(new EngineCounts(10, 1, 0), engine.Counts());
        }
        seen.Clear();
        listener.RecordObservableInstruments(); // an ended engine's counts stay in its meter
        Assert.Equal(10, seen.GetValueOrDefault("contend.transactions.committed"));
    }

    [Fact]
    public async Task EachRootIsASpanUnderTheCallersActivity()
    {
        var spans = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name is ContendEngine.TelemetryName or "reactdb-test",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = a => { if (a.Source.Name == ContendEngine.TelemetryName && a.GetTagItem("contend.engine") is "spans") spans.Enqueue(a); },
        };
        ActivitySource.AddActivityListener(listener);
        using var test = new ActivitySource("reactdb-test");
        var deployment = ReactDbTests.Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { Name = "spans" });
        using var request = test.StartActivity("request")!;
        Assert.True((await engine.ExecuteAsync(deployment.Reactors[0], ReactDbTests.Deposit, new long[] { 0, 5 })).Outcome.Committed);
        Assert.Equal(Outcome.UserAborted, (await engine.ExecuteAsync(deployment.Reactors[1], Refuses, default)).Outcome.Outcome);
        await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], Throws, default).AsTask());
        Assert.Same(request, Activity.Current);
        var all = spans.ToArray();
        Assert.Equal(3, all.Length);
        Assert.All(all, s =>
        {
            Assert.Equal("contend.transaction", s.OperationName);
            Assert.Equal(request.TraceId, s.TraceId);
            Assert.Equal(request.SpanId, s.ParentSpanId);
            Assert.Equal("ReactDB", s.GetTagItem("contend.protocol"));
        });
        Assert.Equal(["deposit", "refuses", "throws"], all.Select(s => (string)s.GetTagItem("contend.program")!));
        Assert.Equal(["Committed", "UserAborted", "failed"], all.Select(s => (string)s.GetTagItem("contend.outcome")!));
        Assert.Equal("User", all[1].GetTagItem("contend.reason"));
        Assert.Equal(ActivityStatusCode.Error, all[2].Status);
    }
}
