using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;
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
/// <item><c>contend.transactions.committed</c> {protocol, workload}: a <see cref="Protocols.ReactDB.ReactDbEngine"/>'s
/// roots too, tagged protocol <c>ReactDB</c> and workload its name</item>
/// <item><c>contend.transactions.aborted</c> {protocol, workload, reason}: conflict aborts
/// (retried) and the logic's own (reason <c>User</c>, <c>TableFull</c>, <c>DuplicateKey</c>; not retried)</item>
/// <item>each protocol's own counters {protocol}, declared by its descriptor
/// (<see cref="ProtocolDescriptor.Counters"/>): <c>contend.stealdb.ops.stolen</c> (ops a lock
/// waiter ran for another transaction), <c>contend.strife.batches</c> and
/// <c>contend.strife.transactions.residual</c> (batches analysed, and the transactions their
/// analyses left to the residual phase)</item>
/// </list>
/// One instance per meter: <see cref="Default"/>, a meter of its own for the harness's runs and
/// engines made without a meter factory, or <see cref="For"/> a host's <see cref="IMeterFactory"/>
/// (the hosting package passes it), so that a host's meters and their lifetime are its own.
/// The transaction counters count what each run reports: a worker's counts from the moment it
/// starts measuring (after the warm-up), which is also when it restarts them
/// (<see cref="WorkerStats.Reset"/>); a worker still warming up adds nothing, so the counters
/// never go down. A run's counts stay in them after it ends.
/// </summary>
internal sealed class EngineMetrics
{
    public const string MeterName = ContendEngine.TelemetryName;
    static readonly string? s_version = typeof(EngineMetrics).Assembly.GetName().Version?.ToString();

    /// <summary>The metrics of runs and engines that were given no meter factory.</summary>
    public static EngineMetrics Default { get; } = new(new Meter(MeterName, s_version));

    static readonly ConditionalWeakTable<Meter, EngineMetrics> s_byMeter = new();

    /// <summary>The metrics on <paramref name="factory"/>'s meter <see cref="MeterName"/>: one set
    /// of instruments per meter, however many engines share it.</summary>
    public static EngineMetrics For(IMeterFactory factory) =>
        s_byMeter.GetValue(factory.Create(new MeterOptions(MeterName) { Version = s_version }), meter => new EngineMetrics(meter));

    readonly object _gate = new();
    readonly List<Tracked> _live = [];
    readonly Counter<long> _recovered = null!;
    readonly Histogram<double> _recoveryDuration = null!;

    /// <summary>A durable engine's recovery, tagged with its workload.</summary>
    public void Recovered(string workload, Durability.RecoveryReport report)
    {
        var tag = new KeyValuePair<string, object?>("contend.workload", workload);
        _recovered.Add(report.Transactions, tag);
        _recoveryDuration.Record(report.Elapsed.TotalSeconds, tag);
    }
    /// <summary>The final counts of ended runs, per protocol and workload.</summary>
    readonly Dictionary<(string Protocol, string Workload), WorkerStats> _ended = [];
    static readonly AbortReason[] s_reasons = Enum.GetValues<AbortReason>().Where(r => r != AbortReason.None).ToArray();

    /// <summary>The protocols' own counters of ended runs, per instrument and protocol name.</summary>
    readonly Dictionary<(string Instrument, string Protocol), long> _endedProtocol = [];

    /// <param name="Protocol">the protocol's name, the series' tag</param>
    /// <param name="Counting">the instance whose own counters the run adds to (null: none)</param>
    /// <param name="Baseline">the protocol's own counters when the run began: an instance
    /// may serve several runs, and each run adds only what it counted</param>
    sealed record Tracked(string Protocol, IProtocol? Counting, string Workload, WorkerStats[] Workers, (string Instrument, long Value)[] Baseline);

    /// <summary>A protocol's own counters, each monotonic over the instance's life. Read while its
    /// workers run, each is a plain read of a word its workers bump: approximate, never torn.</summary>
    static (string Instrument, long Value)[] ProtocolCounters(IProtocol? protocol) =>
        protocol is not null && ProtocolRegistry.TryFind(protocol.Name, out var descriptor)
            ? descriptor.Counters.Select(c => (c.Instrument, c.Read(protocol))).ToArray()
            : [];

    EngineMetrics(Meter meter)
    {
        _recovered = meter.CreateCounter<long>("contend.recovery.transactions", "{transaction}",
                                               "commits a durable engine replayed from its log when it opened its directory");
        _recoveryDuration = meter.CreateHistogram<double>("contend.recovery.duration", "s",
                                                          "how long a durable engine took to open its directory, recover and write its checkpoint");
        meter.CreateObservableCounter("contend.transactions.committed", Committed, "{transaction}",
                                        "transactions committed, counted from each run's measured phase");
        meter.CreateObservableCounter("contend.transactions.aborted", Aborted, "{transaction}",
                                        "attempts aborted, by reason, counted from each run's measured phase");
        // Protocols that share code may share a counter (StealDB's three policies): one instrument each.
        foreach (var counter in ProtocolRegistry.Descriptors.SelectMany(d => d.Counters).DistinctBy(c => c.Instrument))
            meter.CreateObservableCounter(counter.Instrument, () => ProtocolMeasurements(counter.Instrument), counter.Unit, counter.Description);
    }

    /// <summary>Tracks a run's workers until the returned handle is disposed; then their final
    /// counts join the ended runs'. <see cref="WorkerPool"/> calls it for every run, and
    /// <see cref="Runtime.ContendEngine"/> for its workers.</summary>
    public IDisposable Track(IProtocol protocol, string workload, WorkerStats[] workers) =>
        Track(new Tracked(protocol.Name, protocol, workload, workers, ProtocolCounters(protocol)));

    /// <summary>Tracks the counters of an engine that runs <paramref name="protocol"/> outside the
    /// registry's descriptors (ReactDB's roots, one <see cref="WorkerStats"/> per root slot).</summary>
    public IDisposable Track(string protocol, string workload, WorkerStats[] slots) =>
        Track(new Tracked(protocol, null, workload, slots, []));

    IDisposable Track(Tracked tracked)
    {
        lock (_gate) _live.Add(tracked);
        return new Handle(this, tracked);
    }

    sealed class Handle(EngineMetrics metrics, Tracked tracked) : IDisposable
    {
        int _disposed;

        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
            metrics.End(tracked);
        }
    }

    /// <summary>A run's final counts join the ended runs'.</summary>
    void End(Tracked tracked)
    {
        lock (_gate)
        {
            _live.Remove(tracked);
            var key = (tracked.Protocol, tracked.Workload);
            if (!_ended.TryGetValue(key, out var sum)) _ended[key] = sum = new WorkerStats();
            foreach (var w in tracked.Workers)
                if (w.Measuring) sum.Add(w);
            foreach (var (instrument, count) in Counted(tracked))
                _endedProtocol[(instrument, tracked.Protocol)] = _endedProtocol.GetValueOrDefault((instrument, tracked.Protocol)) + count;
        }
    }

    /// <summary>Per protocol and workload: the ended runs' counts plus each live run's measuring
    /// workers' counts so far. Called by a listener's collection, under the gate, so that a run
    /// moves from live to ended between two readings, never during one.</summary>
    Dictionary<(string Protocol, string Workload), WorkerStats> Snapshot()
    {
        var sums = new Dictionary<(string, string), WorkerStats>();
        foreach (var (key, ended) in _ended)
        {
            var copy = new WorkerStats();
            copy.Add(ended);
            sums[key] = copy;
        }
        foreach (var t in _live)
        {
            var key = (t.Protocol, t.Workload);
            if (!sums.TryGetValue(key, out var sum)) sums[key] = sum = new WorkerStats();
            foreach (var w in t.Workers)
                if (w.Measuring) sum.AddLive(w);
        }
        return sums;
    }

    IEnumerable<Measurement<long>> Committed()
    {
        lock (_gate)
            return Snapshot().Select(e => new Measurement<long>(e.Value.Commits, Tags(e.Key))).ToList();
    }

    IEnumerable<Measurement<long>> Aborted()
    {
        lock (_gate)
            return Snapshot().SelectMany(e => s_reasons.Where(r => e.Value.Aborts[(int)r] > 0).Select(r =>
                new Measurement<long>(e.Value.Aborts[(int)r], [.. Tags(e.Key), new("reason", r.ToString())]))).ToList();
    }

    static KeyValuePair<string, object?>[] Tags((string Protocol, string Workload) key) =>
        [new("protocol", key.Protocol), new("workload", key.Workload)];

    /// <summary>What a run's protocol counted since the run began.</summary>
    static IEnumerable<(string Instrument, long Count)> Counted(Tracked t) =>
        ProtocolCounters(t.Counting).Zip(t.Baseline, (now, then) => (now.Instrument, now.Value - then.Value));

    IEnumerable<Measurement<long>> ProtocolMeasurements(string instrument)
    {
        lock (_gate)
        {
            var sums = _endedProtocol.Where(e => e.Key.Instrument == instrument).ToDictionary(e => e.Key.Protocol, e => e.Value);
            foreach (var t in _live)
                foreach (var (name, count) in Counted(t))
                    if (name == instrument) sums[t.Protocol] = sums.GetValueOrDefault(t.Protocol) + count;
            return sums.Select(e => new Measurement<long>(e.Value, new KeyValuePair<string, object?>("protocol", e.Key))).ToList();
        }
    }
}
