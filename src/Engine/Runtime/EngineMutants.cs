namespace Contend.Engine.Runtime;

/// <summary>Deliberately broken steps of <see cref="ContendEngine"/> (the engine's alone: no spec
/// models it), for the tests that must catch them (internal, test builds only:
/// <see cref="Protocols.MutantFlag"/>).</summary>
[Flags]
internal enum EngineMutants
{
    None = 0,
    /// <summary>A worker that found no work reads the wake-up count only then, just before it
    /// sleeps, so a submission made between its look and that read wakes no one (the lost
    /// wake-up the event count exists to prevent).</summary>
    LostWakeup = 1,
    /// <summary>Closing stops taking submissions without waiting for those under way, so one
    /// that got past the check is queued after the workers have looked for the last time, and
    /// never runs.</summary>
    CloseWithoutWait = 2,
}
