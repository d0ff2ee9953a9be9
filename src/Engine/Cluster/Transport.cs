namespace Contend.Engine.Cluster;

/// <summary>One message on its way from one node to another. The message is a typed record
/// of the protocol that sent it; the transport never looks inside.</summary>
/// <param name="Epoch">the view of the cluster the sender had when it sent, for a protocol whose
/// receivers fence by it (<see cref="ClusterView.Epoch"/>); 0 for one that has no views</param>
internal readonly record struct Envelope(int From, int To, object Message, long Epoch = 0);

/// <summary>
/// How nodes exchange messages: unordered, unreliable, asynchronous. A protocol must survive
/// a message lost, late, doubled, or overtaken by a later one. The in-process transport
/// (<see cref="InProcessTransport"/>) injects those faults from a seed; a transport between
/// processes implements the same interface and meets them for real.
/// </summary>
internal interface ITransport
{
    /// <summary>Where messages to <paramref name="node"/> are delivered; one receiver a node,
    /// set before the first message to it is sent.</summary>
    void Attach(int node, Action<Envelope> receive);

    /// <summary>Sends, without waiting for anything: delivery, if any, happens later.</summary>
    void Send(Envelope envelope);
}

/// <summary>What one directed link does to the messages on it. A message's delay is drawn
/// uniformly from [<see cref="MinDelay"/>, <see cref="MaxDelay"/>]; a reordered one waits
/// <see cref="MaxDelay"/> more on top, so that later messages overtake it.</summary>
/// <param name="Drop">probability that a message is lost</param>
/// <param name="Duplicate">probability that a delivered message is delivered twice, each copy with its own delay</param>
/// <param name="Reorder">probability that a message is held back behind later ones</param>
internal sealed record LinkFaults(TimeSpan MinDelay, TimeSpan MaxDelay, double Drop = 0, double Duplicate = 0, double Reorder = 0)
{
    /// <summary>A perfect link: every message delivered once, at once (in order of sending).</summary>
    public static LinkFaults None { get; } = new(TimeSpan.Zero, TimeSpan.Zero);

    public LinkFaults Validated(string where)
    {
        if (MinDelay < TimeSpan.Zero || MaxDelay < MinDelay)
            throw new ArgumentOutOfRangeException(nameof(MaxDelay), $"{where}: delay {MinDelay}..{MaxDelay} must be 0 <= min <= max");
        foreach (var (name, p) in new[] { ("drop", Drop), ("duplicate", Duplicate), ("reorder", Reorder) })
            if (p is < 0 or > 1 || double.IsNaN(p))
                throw new ArgumentOutOfRangeException(name, $"{where}: {name} probability {p} must be in [0, 1]");
        return this;
    }
}

/// <summary>A directed link down for a while: every message sent on it meanwhile is lost.</summary>
/// <param name="At">virtual or real time since the transport started</param>
internal sealed record LinkCut(int From, int To, TimeSpan At, TimeSpan For);

/// <summary>
/// The faults of a whole network, as data: every link's behaviour (<see cref="Links"/> where
/// named, else <see cref="Default"/>) and the cuts. A node's messages to itself pass through
/// the transport too but never meet a fault: they stand for hand-offs inside one process, and
/// take <see cref="Local"/>. Together with the seed this is everything a failing run needs to
/// replay.
/// </summary>
internal sealed record NetworkFaults(LinkFaults Default)
{
    /// <summary>A hand-off within a node: never lost, and not free, so that a simulation whose
    /// transactions are all local still moves time forward.</summary>
    public TimeSpan Local { get; init; } = TimeSpan.FromMicroseconds(1);

    public IReadOnlyDictionary<(int From, int To), LinkFaults> Links { get; init; } = new Dictionary<(int, int), LinkFaults>();
    public IReadOnlyList<LinkCut> Cuts { get; init; } = [];

    public static NetworkFaults None { get; } = new(LinkFaults.None);

    /// <summary>Every link with a fixed delay and nothing else wrong.</summary>
    public static NetworkFaults Delay(TimeSpan delay) => new(new LinkFaults(delay, delay));

    public LinkFaults For(int from, int to) =>
        from == to ? new LinkFaults(Local, Local) : Links.TryGetValue((from, to), out var link) ? link : Default;

    /// <summary>The shortest delay any message can take: a simulation whose network has 0 here
    /// could run for ever without its clock moving.</summary>
    public TimeSpan ShortestDelay => Links.Values.Select(l => l.MinDelay).Append(Default.MinDelay).Append(Local).Min();

    public override string ToString() =>
        $"default {Default}; {Links.Count} links set apart; cuts: {(Cuts.Count == 0 ? "none" : string.Join(", ", Cuts))}";
}
