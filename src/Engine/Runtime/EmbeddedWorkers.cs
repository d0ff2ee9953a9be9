using Contend.Engine.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>
/// What <see cref="ContendEngine"/> keeps for its worker slots, whichever the protocol's kind:
/// counters that count from the first transaction (no warm-up), the history when asked for,
/// and the meter's tracking of them.
/// </summary>
internal sealed class EmbeddedWorkers : IDisposable
{
    public readonly WorkerStats[] Stats;
    public readonly HistoryRecorder? Recorder;
    readonly IDisposable _metrics;

    public EmbeddedWorkers(IProtocol protocol, int workers, bool recordHistory, string name, EngineMetrics metrics)
    {
        Stats = new WorkerStats[workers];
        for (int w = 0; w < workers; w++)
        {
            Stats[w] = new WorkerStats();
            Stats[w].Reset(); // no warm-up here: every transaction counts
        }
        Recorder = recordHistory ? new HistoryRecorder(workers) : null;
        _metrics = metrics.Track(protocol, name, Stats);
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
