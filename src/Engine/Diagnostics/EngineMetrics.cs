using System.Diagnostics.Metrics;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;

namespace Contend.Engine.Diagnostics;

/// <summary>
/// The engine's counters as <see cref="System.Diagnostics.Metrics"/> instruments of the meter
/// <see cref="MeterName"/>, for <c>dotnet-counters monitor --counters Contend.Engine</c> or any
/// <see cref="MeterListener"/> (OpenTelemetry's included). Every instrument is observable: a
/// listener's collection reads the counters the workers keep anyway, so a run costs nothing
/// more with a listener than without one.
/// <list type="bullet">
/// <item><c>contend.transactions.committed</c> {protocol, workload}</item>
/// <item><c>contend.transactions.aborted</c> {protocol, workload, reason}: conflict aborts
/// (retried) and the logic's own (reason <c>User</c>, <c>TableFull</c>, <c>DuplicateKey</c>; not retried)</item>
/// <item>each protocol's own counters {protocol}, declared by its descriptor
/// (<see cref="ProtocolDescriptor.Counters"/>): <c>contend.stealdb.ops.stolen</c> (ops a lock
/// waiter ran for another transaction), <c>contend.strife.batches</c> and
/// <c>contend.strife.transactions.residual</c> (batches analysed, and the transactions their
/// analyses left to the residual phase)</item>
/// </list>
/// The transaction counters count what each run reports: a worker's counts from the moment it
/// starts measuring (after the warm-up), which is also when it restarts them
/// (<see cref="WorkerStats.Reset"/>); a worker still warming up adds nothing, so the counters
/// never go down. A run's counts stay in them after it ends.
/// </summary>
public static class EngineMetrics
{
    public const string MeterName = "Contend.Engine";

    static readonly Meter s_meter = new(MeterName, typeof(EngineMetrics).Assembly.GetName().Version?.ToString());
    static readonly object s_gate = new();
    static readonly List<Tracked> s_live = [];
    /// <summary>The final counts of ended runs, per protocol and workload.</summary>
    static readonly Dictionary<(string Protocol, string Workload), WorkerStats> s_ended = [];
    static readonly AbortReason[] s_reasons = Enum.GetValues<AbortReason>().Where(r => r != AbortReason.None).ToArray();

    /// <summary>The protocols' own counters of ended runs, per instrument and protocol name.</summary>
    static readonly Dictionary<(string Instrument, string Protocol), long> s_endedProtocol = [];

    /// <param name="Baseline">the protocol's own counters when the run began: an instance
    /// may serve several runs, and each run adds only what it counted</param>
    sealed record Tracked(IProtocol Protocol, string Workload, WorkerStats[] Workers, (string Instrument, long Value)[] Baseline);

    /// <summary>A protocol's own counters, each monotonic over the instance's life. Read while its
    /// workers run, each is a plain read of a word its workers bump: approximate, never torn.</summary>
    static (string Instrument, long Value)[] ProtocolCounters(IProtocol protocol) =>
        ProtocolRegistry.TryFind(protocol.Name, out var descriptor)
            ? descriptor.Counters.Select(c => (c.Instrument, c.Read(protocol))).ToArray()
            : [];

    static EngineMetrics()
    {
        s_meter.CreateObservableCounter("contend.transactions.committed", Committed, "{transaction}",
                                        "transactions committed, counted from each run's measured phase");
        s_meter.CreateObservableCounter("contend.transactions.aborted", Aborted, "{transaction}",
                                        "attempts aborted, by reason, counted from each run's measured phase");
        // Protocols that share code may share a counter (StealDB's three policies): one instrument each.
        foreach (var counter in ProtocolRegistry.Descriptors.SelectMany(d => d.Counters).DistinctBy(c => c.Instrument))
            s_meter.CreateObservableCounter(counter.Instrument, () => ProtocolMeasurements(counter.Instrument), counter.Unit, counter.Description);
    }

    /// <summary>Tracks a run's workers until the returned handle is disposed; then their final
    /// counts join the ended runs'. <see cref="WorkerPool"/> calls it for every run, and
    /// <see cref="Runtime.ContendEngine"/> for its workers.</summary>
    public static IDisposable Track(IProtocol protocol, string workload, WorkerStats[] workers)
    {
        var tracked = new Tracked(protocol, workload, workers, ProtocolCounters(protocol));
        lock (s_gate) s_live.Add(tracked);
        return new Handle(tracked);
    }

    sealed class Handle(Tracked tracked) : IDisposable
    {
        int _disposed;

        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
            lock (s_gate)
            {
                s_live.Remove(tracked);
                var key = (tracked.Protocol.Name, tracked.Workload);
                if (!s_ended.TryGetValue(key, out var sum)) s_ended[key] = sum = new WorkerStats();
                foreach (var w in tracked.Workers)
                    if (w.Measuring) sum.Add(w);
                foreach (var (instrument, count) in Counted(tracked))
                    s_endedProtocol[(instrument, tracked.Protocol.Name)] = s_endedProtocol.GetValueOrDefault((instrument, tracked.Protocol.Name)) + count;
            }
        }
    }

    /// <summary>Per protocol and workload: the ended runs' counts plus each live run's measuring
    /// workers' counts so far. Called by a listener's collection, under the gate, so that a run
    /// moves from live to ended between two readings, never during one.</summary>
    static Dictionary<(string Protocol, string Workload), WorkerStats> Snapshot()
    {
        var sums = new Dictionary<(string, string), WorkerStats>();
        foreach (var (key, ended) in s_ended)
        {
            var copy = new WorkerStats();
            copy.Add(ended);
            sums[key] = copy;
        }
        foreach (var t in s_live)
        {
            var key = (t.Protocol.Name, t.Workload);
            if (!sums.TryGetValue(key, out var sum)) sums[key] = sum = new WorkerStats();
            foreach (var w in t.Workers)
                if (w.Measuring) sum.AddLive(w);
        }
        return sums;
    }

    static IEnumerable<Measurement<long>> Committed()
    {
        lock (s_gate)
            return Snapshot().Select(e => new Measurement<long>(e.Value.Commits, Tags(e.Key))).ToList();
    }

    static IEnumerable<Measurement<long>> Aborted()
    {
        lock (s_gate)
            return Snapshot().SelectMany(e => s_reasons.Where(r => e.Value.Aborts[(int)r] > 0).Select(r =>
                new Measurement<long>(e.Value.Aborts[(int)r], [.. Tags(e.Key), new("reason", r.ToString())]))).ToList();
    }

    static KeyValuePair<string, object?>[] Tags((string Protocol, string Workload) key) =>
        [new("protocol", key.Protocol), new("workload", key.Workload)];

    /// <summary>What a run's protocol counted since the run began.</summary>
    static IEnumerable<(string Instrument, long Count)> Counted(Tracked t) =>
        ProtocolCounters(t.Protocol).Zip(t.Baseline, (now, then) => (now.Instrument, now.Value - then.Value));

    static IEnumerable<Measurement<long>> ProtocolMeasurements(string instrument)
    {
        lock (s_gate)
        {
            var sums = s_endedProtocol.Where(e => e.Key.Instrument == instrument).ToDictionary(e => e.Key.Protocol, e => e.Value);
            foreach (var t in s_live)
                foreach (var (name, count) in Counted(t))
                    if (name == instrument) sums[t.Protocol.Name] = sums.GetValueOrDefault(t.Protocol.Name) + count;
            return sums.Select(e => new Measurement<long>(e.Value, new KeyValuePair<string, object?>("protocol", e.Key))).ToList();
        }
    }
}
