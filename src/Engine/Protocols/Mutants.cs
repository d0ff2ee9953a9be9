using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols;

/// <summary>
/// One mutant's switch as a protocol holds it: read where the broken step would run, it is
/// false unless the process enabled the engine's test hooks (<see cref="TestHooks"/>, which
/// only the test projects do) and the protocol was built with the mutant. In every other
/// process <see cref="TestHooks.Enabled"/> is a static readonly false, which the JIT folds:
/// the check and the branch it guards are compiled away, and the mutant's field is never
/// loaded on the hot path.
/// </summary>
/// <remarks>Each protocol declares its mutants as an internal flags enum in its own folder
/// (<see cref="ProtocolDescriptor.Mutants"/>); the core's own are <see cref="OpByOpMutants"/>.
/// A flag of another enum than the one asked about is off.</remarks>
internal readonly struct MutantFlag
{
    readonly bool _on;

    /// <param name="built">the mutants the protocol was built with (null: none)</param>
    /// <param name="mutant">the one this switch stands for</param>
    public MutantFlag(Enum? built, Enum mutant)
    {
        bool on = built is not null && built.GetType() == mutant.GetType() && built.HasFlag(mutant);
        if (on && !TestHooks.Enabled) throw TestHooks.Refused($"mutant {mutant}");
        _on = on;
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
    public static implicit operator bool(MutantFlag flag) => TestHooks.Enabled && flag._on;
}

/// <summary>The core's mutants, which every op-by-op protocol honours (internal: the test
/// projects reach them, a service cannot).</summary>
[Flags]
internal enum OpByOpMutants
{
    None = 0,
    /// <summary>The engine's alone (the specs model no exceptions): the op-by-op protocols prepare
    /// outside the undo that covers the ops, so an insert body that throws at prepare leaves the
    /// attempt's locks held and its writes in place (every protocol before prepare was split out).</summary>
    PrepareOutsideUndo = 1,
}
