namespace Contend.Engine.Protocols.StealDB;

/// <summary>The knobs of <c>StealDB</c>, <c>StealDBBasicWS</c> and <c>StealDBNoSteal</c>
/// (<see cref="Runtime.EngineOptions.ProtocolOptions"/>); which waiters steal is the protocol's
/// name, not a knob.</summary>
/// <param name="WaitThreshold">idle rounds of a lock wait (rounds that stole nothing) before the
/// waiter gives up and aborts its op's transaction (C2, a <c>WaitTimeout</c> abort): the last
/// resort, since the deadlock detector ends deadlocks first; at least 1</param>
/// <param name="MaxNesting">how deep stolen ops may nest (a stolen op that waits may steal
/// again); at the limit a waiter only waits. Bounds each worker's stack; the spec has no bound,
/// and fewer steals are a subset of its behaviours. 0..64</param>
public sealed record StealDbOptions(int WaitThreshold = 1 << 14, int MaxNesting = 4) : ProtocolOptions
{
    /// <summary>The deepest <see cref="MaxNesting"/>.</summary>
    public const int DeepestNesting = 64;

    internal static readonly ProtocolKnobs CommandLine = new(
        [ProtocolKnob.WaitThreshold(new StealDbOptions().WaitThreshold),
         new("--max-nesting", "how deep stolen ops may nest (0: waiters only wait)", new StealDbOptions().MaxNesting)],
        value => new StealDbOptions((int)value("--wait-threshold"), (int)value("--max-nesting")));

    internal override void Validate(int workers)
    {
        if (WaitThreshold < 1)
            throw new ArgumentOutOfRangeException(nameof(WaitThreshold), $"StealDB wait threshold {WaitThreshold}: must be 1 or more idle rounds");
        if (MaxNesting is < 0 or > DeepestNesting)
            throw new ArgumentOutOfRangeException(nameof(MaxNesting), $"StealDB nesting bound {MaxNesting}: must be 0..{DeepestNesting}");
    }
}
