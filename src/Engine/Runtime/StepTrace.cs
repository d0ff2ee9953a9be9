namespace Contend.Engine.Runtime;

/// <summary>
/// A protocol's recorded steps, for trace validation against its spec (tests only; null in
/// production). Every step the engine records runs inside <see cref="Gate"/>, and no step waits
/// while inside it, so the order of <see cref="Events"/> is an order in which the steps took
/// effect, each seeing the state the previous ones left. A step that writes several words (a
/// write set's locks, an install) is then atomic, as the spec's actions are; in production it is
/// not, which the Coyote tests explore.
/// </summary>
internal class StepTrace<TEvent>
{
    internal readonly object Gate = new();

    /// <summary>The steps in order; read once the engine has stopped.</summary>
    public List<TEvent> Events { get; } = new();

    /// <summary>Called inside <see cref="Gate"/>.</summary>
    internal void Add(TEvent e) => Events.Add(e);
}

/// <summary>One recorded step: holds a trace's gate from construction to Dispose; nothing
/// without a trace (one null test).</summary>
internal readonly ref struct TracedStep
{
    readonly object? _gate;

    public TracedStep(object? gate)
    {
        _gate = gate;
        if (gate is not null) Monitor.Enter(gate);
    }

    public void Dispose()
    {
        if (_gate is not null) Monitor.Exit(_gate);
    }
}
