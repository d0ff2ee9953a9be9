namespace Contend.Engine.Cluster;

/// <summary>
/// Nodes of one process exchanging messages through timers of a <see cref="TimeProvider"/>:
/// each message's fate (lost, late, doubled, held back) is drawn from its link's own random
/// stream, seeded from the run's seed and the link, and it is delivered by a timer set for its
/// delay. On <see cref="SimulatedTime"/> the whole run is then a function of the seed: the
/// same seed gives the same deliveries in the same order, and a failing seed replays. On
/// <see cref="TimeProvider.System"/> it is a real network's stand-in with real delays, whose
/// deliveries run on thread-pool threads.
/// </summary>
/// <remarks>
/// A link's draws depend on the order of the sends on it; a simulation, which sends from one
/// thread, keeps that order fixed. Sends on one link from several threads are serialised by a
/// lock on the link, so the stream stays consistent, but their order is the threads'.
/// </remarks>
internal sealed class InProcessTransport : ITransport
{
    readonly TimeProvider _time;
    readonly NetworkFaults _faults;
    readonly Action<Envelope>?[] _receivers;
    readonly Link[] _links;
    readonly int _nodes;
    readonly long _start;
    long _sent, _delivered, _dropped, _duplicated;

    public InProcessTransport(int nodes, TimeProvider time, NetworkFaults faults, ulong seed)
    {
        if (nodes is < 1 or > ClusterTopology.MaxNodes) throw new ArgumentOutOfRangeException(nameof(nodes), $"transport: {nodes} nodes, must be 1..{ClusterTopology.MaxNodes}");
        _nodes = nodes;
        _time = time;
        _faults = faults;
        _start = time.GetTimestamp();
        _receivers = new Action<Envelope>?[nodes];
        _links = new Link[nodes * nodes];
        foreach (var ((from, to), link) in faults.Links)
        {
            if ((uint)from >= (uint)nodes || (uint)to >= (uint)nodes)
                throw new ArgumentOutOfRangeException(nameof(faults), $"transport: faults name link {from}->{to}, but nodes are 0..{nodes - 1}");
            link.Validated($"link {from}->{to}");
        }
        faults.Default.Validated("default link");
        foreach (var cut in faults.Cuts)
            if ((uint)cut.From >= (uint)nodes || (uint)cut.To >= (uint)nodes || cut.At < TimeSpan.Zero || cut.For < TimeSpan.Zero)
                throw new ArgumentOutOfRangeException(nameof(faults), $"transport: cut {cut} names a node outside 0..{nodes - 1} or a negative time");
        for (int from = 0; from < nodes; from++)
            for (int to = 0; to < nodes; to++)
                _links[from * nodes + to] = new Link(faults.For(from, to), new Random(LinkSeed(seed, from, to)),
                                                     faults.Cuts.Where(c => c.From == from && c.To == to).ToArray());
    }

    /// <summary>Messages handed to <see cref="Send"/>.</summary>
    public long Sent => Interlocked.Read(ref _sent);
    /// <summary>Deliveries made, duplicates included.</summary>
    public long Delivered => Interlocked.Read(ref _delivered);
    /// <summary>Messages lost, to a drop or a cut.</summary>
    public long Dropped => Interlocked.Read(ref _dropped);
    public long Duplicated => Interlocked.Read(ref _duplicated);

    public void Attach(int node, Action<Envelope> receive)
    {
        CheckNode(node, "attach");
        if (_receivers[node] is not null) throw new InvalidOperationException($"transport: node {node} has a receiver already");
        _receivers[node] = receive;
    }

    public void Send(Envelope envelope)
    {
        CheckNode(envelope.From, "send from");
        CheckNode(envelope.To, "send to");
        if (_receivers[envelope.To] is null) throw new InvalidOperationException($"transport: node {envelope.To} has no receiver (attach it before sending to it)");
        Interlocked.Increment(ref _sent);
        var link = _links[envelope.From * _nodes + envelope.To];
        TimeSpan first, second;
        bool deliver, twice;
        lock (link)
        {
            var sinceStart = _time.GetElapsedTime(_start);
            deliver = !link.IsCut(sinceStart) && !link.Chance(link.Faults.Drop);
            first = link.DrawDelay();
            twice = deliver && link.Chance(link.Faults.Duplicate);
            second = twice ? link.DrawDelay() : default;
        }
        if (!deliver)
        {
            Interlocked.Increment(ref _dropped);
            return;
        }
        Deliver(envelope, first);
        if (twice)
        {
            Interlocked.Increment(ref _duplicated);
            Deliver(envelope, second);
        }
    }

    void Deliver(Envelope envelope, TimeSpan delay)
    {
        var delivery = new Delivery(this, envelope);
        delivery.Timer = _time.CreateTimer(static s => ((Delivery)s!).Run(), delivery, delay, Timeout.InfiniteTimeSpan);
    }

    void CheckNode(int node, string what)
    {
        if ((uint)node >= (uint)_nodes) throw new ArgumentOutOfRangeException(nameof(node), $"transport: {what} node {node}, but nodes are 0..{_nodes - 1}");
    }

    /// <summary>A link's stream seed: a fixed mix of the run's seed and the link (not
    /// <see cref="HashCode"/>, which differs from process to process), so a seed replays anywhere.</summary>
    int LinkSeed(ulong seed, int from, int to)
    {
        ulong state = Runtime.Rng.Seed(seed, from * _nodes + to);
        return (int)Runtime.Rng.Next(ref state);
    }

    /// <summary>One message in flight; holds its timer so that a real timer is not collected before it fires.</summary>
    sealed class Delivery(InProcessTransport transport, Envelope envelope)
    {
        public ITimer? Timer;

        public void Run()
        {
            Timer?.Dispose();
            Interlocked.Increment(ref transport._delivered);
            transport._receivers[envelope.To]!(envelope);
        }
    }

    sealed class Link(LinkFaults faults, Random random, LinkCut[] cuts)
    {
        public LinkFaults Faults { get; } = faults;

        public bool Chance(double p) => p > 0 && random.NextDouble() < p;

        public TimeSpan DrawDelay()
        {
            long span = Faults.MaxDelay.Ticks - Faults.MinDelay.Ticks;
            long delay = Faults.MinDelay.Ticks + (span == 0 ? 0 : random.NextInt64(span + 1));
            if (Chance(Faults.Reorder)) delay += Faults.MaxDelay.Ticks;
            return TimeSpan.FromTicks(delay);
        }

        public bool IsCut(TimeSpan now)
        {
            foreach (var cut in cuts)
                if (now >= cut.At && now < cut.At + cut.For) return true;
            return false;
        }
    }
}
