using System.Runtime.CompilerServices;

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
/// without a trace (one test of a flag). The step keeps a flag, not the gate: a reference in a
/// struct that a finally disposes made the frame of every method with a step zero a few hundred
/// bytes on entry, once per op in StealDB's production path, where no trace exists
/// (docs/measured/StealDB.md, "Frames without zeroing"). The gates a thread holds are on its own
/// stack instead, innermost last, which the steps' nesting keeps in order.</summary>
internal readonly ref struct TracedStep
{
    [ThreadStatic] static Stack<object>? t_held;
    readonly bool _entered;

    public TracedStep(object? gate)
    {
        if (!TestHooks.Enabled || gate is null) return;
        Enter(gate);
        _entered = true;
    }

    /// <summary>Empty where test hooks are off, so the JIT drops the finally a <c>using</c> makes.</summary>
    public void Dispose()
    {
        if (TestHooks.Enabled && _entered) Monitor.Exit(t_held!.Pop());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Enter(object gate)
    {
        Monitor.Enter(gate);
        (t_held ??= new()).Push(gate);
    }
}
