namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>The knob of <c>Mcs</c> (<see cref="Runtime.EngineOptions.ProtocolOptions"/>).</summary>
/// <param name="WaitThreshold">rounds of a lock wait before the waiter gives up and aborts its
/// transaction (a <c>WaitTimeout</c> abort): the last resort, since the deadlock detector ends
/// deadlocks first; at least 1. The default is the StealDB family's.</param>
public sealed record McsOptions(int WaitThreshold = 1 << 14) : ProtocolOptions
{
    internal override void Validate(int workers)
    {
        if (WaitThreshold < 1)
            throw new ArgumentOutOfRangeException(nameof(WaitThreshold), $"Mcs wait threshold {WaitThreshold}: must be 1 or more rounds");
    }
}
