namespace Contend.Engine.Cluster;

/// <summary>
/// What a node's processor costs in a simulation: <paramref name="WorkersPerNode"/> threads, and
/// every message a node handles takes one of them for <paramref name="PerMessage"/> plus
/// <paramref name="PerOp"/> for each op the message makes it run. A node's message to itself is a
/// hand-off within one process, a call: it costs its ops alone.
/// </summary>
internal sealed record CpuModel(int WorkersPerNode, TimeSpan PerMessage, TimeSpan PerOp)
{
    public CpuModel Validated()
    {
        if (WorkersPerNode is < 1 or > 1024) throw new ArgumentOutOfRangeException(nameof(WorkersPerNode), $"cpu model: {WorkersPerNode} workers a node, must be 1..1024");
        if (PerMessage < TimeSpan.Zero || PerOp < TimeSpan.Zero)
            throw new ArgumentOutOfRangeException(nameof(PerMessage), $"cpu model: costs {PerMessage} a message and {PerOp} an op must not be negative");
        return this;
    }

    public override string ToString() =>
        $"{WorkersPerNode} workers a node, {PerMessage.TotalMicroseconds:0.##} us a message + {PerOp.TotalMicroseconds:0.##} us an op";
}

/// <summary>
/// The nodes' workers of a simulation (<see cref="CpuModel"/>): a message that reaches a node
/// waits for the node's first free worker, which is then busy for the message's cost, and is
/// handled when that time is up, its effects and the messages it sends appearing then. Without
/// it a simulation's nodes do any amount of work in no time, so only message delays and lock
/// waits shape its figures; with it, the work a protocol makes each node do counts too, and a
/// node's transactions in flight share its workers, as the paper's co-routines share a thread.
/// </summary>
internal sealed class NodeWorkers
{
    readonly CpuModel _model;
    readonly TimeProvider _time;
    /// <summary>[node * workers + w]: when worker w of the node is free, in the time provider's ticks.</summary>
    readonly long[] _freeAt;

    public NodeWorkers(int nodes, CpuModel model, TimeProvider time)
    {
        if (time.TimestampFrequency != TimeSpan.TicksPerSecond)
            throw new ArgumentException($"node workers: timestamps of {time.TimestampFrequency} a second; this counts in TimeSpan ticks (SimulatedTime's)", nameof(time));
        _model = model.Validated();
        _time = time;
        _freeAt = new long[nodes * model.WorkersPerNode];
    }

    /// <summary>Ticks of busy time, all nodes' workers together.</summary>
    public long BusyTicks { get; private set; }

    /// <summary>Hands <paramref name="envelope"/> to <paramref name="handle"/> once a worker of its
    /// node has spent the cost of <paramref name="ops"/> ops on it.</summary>
    public void Run(Envelope envelope, int ops, Action<Envelope> handle)
    {
        long now = _time.GetTimestamp();
        int first = envelope.To * _model.WorkersPerNode, chosen = first;
        for (int w = first + 1; w < first + _model.WorkersPerNode; w++)
            if (_freeAt[w] < _freeAt[chosen]) chosen = w;
        long cost = (envelope.From == envelope.To ? 0 : _model.PerMessage.Ticks) + ops * _model.PerOp.Ticks;
        long done = Math.Max(now, _freeAt[chosen]) + cost;
        _freeAt[chosen] = done;
        BusyTicks += cost;
        var handling = new Handling(envelope, handle);
        handling.Timer = _time.CreateTimer(static s => ((Handling)s!).Run(), handling, TimeSpan.FromTicks(done - now), Timeout.InfiniteTimeSpan);
    }

    sealed class Handling(Envelope envelope, Action<Envelope> handle)
    {
        public ITimer? Timer;

        public void Run()
        {
            Timer?.Dispose();
            handle(envelope);
        }
    }
}
