using Contend.Engine.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>
/// What <see cref="TransactionEngine"/> and <see cref="BatchEngine"/> both keep for their worker
/// slots: counters that count from the first transaction (no warm-up), the history when
/// asked for, and the meter's tracking of them.
/// </summary>
internal sealed class EmbeddedWorkers : IDisposable
{
    public readonly WorkerStats[] Stats;
    public readonly HistoryRecorder? Recorder;
    readonly IDisposable _metrics;

    public EmbeddedWorkers(IProtocol protocol, int workers, bool recordHistory, string name)
    {
        Stats = new WorkerStats[workers];
        for (int w = 0; w < workers; w++)
        {
            Stats[w] = new WorkerStats();
            Stats[w].Reset(); // no warm-up here: every transaction counts
        }
        Recorder = recordHistory ? new HistoryRecorder(workers) : null;
        _metrics = EngineMetrics.Track(protocol, name, Stats);
    }

    /// <summary>Throws, naming the protocol, unless it is known and of the kind the engine runs.</summary>
    public static void CheckProtocol(string protocol, bool batch)
    {
        if (!ProtocolRegistry.TryFind(protocol, out var descriptor))
            throw new ArgumentException(ProtocolRegistry.Unknown(protocol), nameof(protocol));
        if ((descriptor.Kind == ProtocolKind.Batch) == batch) return;
        throw new ArgumentException(batch
            ? $"{protocol} is a per-transaction protocol: it runs on the caller's thread (TransactionEngine), not in batches"
            : $"{protocol} is a batch protocol: it runs batches on workers of its own (BatchEngine), not one transaction on the caller's thread",
            nameof(protocol));
    }

    public WorkerStats Totals()
    {
        var total = new WorkerStats();
        foreach (var s in Stats) total.AddLive(s);
        return total;
    }

    public List<CommittedTxn> History() =>
        Recorder?.Collect() ?? throw new InvalidOperationException("the engine was made without recordHistory: it keeps no history");

    public void Dispose() => _metrics.Dispose();
}
