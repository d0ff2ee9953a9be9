namespace Contend.Engine.Protocols.TwoPhaseCommit;

/// <summary>Deliberately broken steps of two-phase commit, for the tests that must catch them
/// (internal, test builds only: <see cref="MutantFlag"/>).</summary>
[Flags]
internal enum TwoPhaseCommitMutants
{
    None = 0,
    /// <summary>A participant commits as soon as it votes yes, before the coordinator has every
    /// vote (another partition's no then leaves the transaction half committed).</summary>
    ParticipantCommitsOnYes = 1,
    /// <summary>A coordinator that decides abort tells no participant, so those that ran ops or
    /// voted yes keep their locks for ever.</summary>
    CoordinatorForgetsAbort = 2,
}
