namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>The knobs of <c>Mcs</c> (<see cref="Runtime.EngineOptions.ProtocolOptions"/>).</summary>
/// <param name="WaitThreshold">rounds of a lock wait before the waiter gives up and aborts its
/// transaction (a <c>WaitTimeout</c> abort): the last resort, since the deadlock detector ends
/// deadlocks first; at least 1. The default is the StealDB family's.</param>
/// <param name="GiveUpQueuedNodes">true: a transaction that aborts while its lock request is
/// queued gives the queue node up and retries at once; whoever would have woken the node takes
/// it out of the queue (specs/MCSLock/RWMCSLock.tla, GiveUp). False (the default): it waits for
/// the node to be woken and passes the lock on, as StealDB's C2 does. Giving up makes every
/// hand-over a compare-and-swap instead of a store: with more workers than cores, where that
/// wait is for a descheduled thread, it ran the hot set about 3x faster; with one hot record and
/// no deadlocks, about 5% slower (docs/measured/StealDB.md, "Giving up queued nodes").</param>
public sealed record McsOptions(int WaitThreshold = 1 << 14, bool GiveUpQueuedNodes = false) : ProtocolOptions
{
    internal static readonly ProtocolKnobs CommandLine = new(
        [ProtocolKnob.WaitThreshold(new McsOptions().WaitThreshold),
         new("--give-up-nodes", "an aborting transaction gives its queued lock request up instead of waiting for it to be woken (GiveUpQueuedNodes)", false)],
        value => new McsOptions((int)value("--wait-threshold"), (bool)value("--give-up-nodes")));

    internal override void Validate(int workers)
    {
        if (WaitThreshold < 1)
            throw new ArgumentOutOfRangeException(nameof(WaitThreshold), $"Mcs wait threshold {WaitThreshold}: must be 1 or more rounds");
    }
}
