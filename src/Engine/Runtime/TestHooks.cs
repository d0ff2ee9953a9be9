namespace Contend.Engine.Runtime;

/// <summary>
/// Whether this process may use the engine's test hooks: mutants (<see cref="Protocols.MutantFlag"/>),
/// step traces (<see cref="StepTrace{TEvent}"/>, <see cref="TracedStep"/>) and StealDB's audit.
/// Only the test projects set the runtime switch <see cref="SwitchName"/>. In every other process
/// <see cref="Enabled"/> is a static readonly false, which the JIT folds once the class is
/// initialized: a hook's check and the code it guards are compiled away. For a traced step
/// that is more than a branch: its try/finally, kept where no trace could exist, made every
/// method with a step hold its locals on the stack: without it StealDB ran 1.07-1.12x faster
/// with one worker (docs/measured/StealDB.md, "Test hooks compiled away").
/// </summary>
internal static class TestHooks
{
    public const string SwitchName = "Contend.Engine.TestHooks";

    public static readonly bool Enabled = AppContext.TryGetSwitch(SwitchName, out bool on) && on;

    /// <summary>A hook being attached: returned as is where hooks are enabled; elsewhere it would
    /// be ignored without a word, so it is refused. Null (no hook) is always accepted.</summary>
    /// <param name="hook">the hook, or null</param>
    /// <param name="what">what the hook is, for the error</param>
    public static T? Attach<T>(T? hook, string what) where T : class => Attach(hook, what, Enabled);

    /// <summary><see cref="Attach{T}(T, string)"/> as a process with hooks <paramref name="enabled"/> or not would.</summary>
    internal static T? Attach<T>(T? hook, string what, bool enabled) where T : class =>
        hook is null || enabled ? hook : throw Refused(what);

    /// <summary>The error for a hook, or a mutant, asked for in a process without the switch.</summary>
    /// <param name="what">what was asked for, for the message</param>
    public static InvalidOperationException Refused(string what) =>
        new($"{what}: this process has not enabled the engine's test hooks (runtime switch {SwitchName}); only the test projects do");
}
