namespace Contend.Engine.Protocols.Silo;

/// <summary>Deliberately broken steps of Silo, for the tests that must catch them (internal,
/// test builds only: <see cref="MutantFlag"/>).</summary>
[Flags]
internal enum SiloMutants
{
    None = 0,
    /// <summary>Commit skips phase 2: a row read is installed over without checking that its
    /// version is still the one read, so two read-modify-writes of one row lose one of them.</summary>
    SkipValidation = 1,
}
