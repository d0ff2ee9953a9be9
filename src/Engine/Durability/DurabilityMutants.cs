namespace Contend.Engine.Durability;

/// <summary>Deliberately broken steps of the log and recovery, each the engine's form of a mutant of
/// specs/Durability/Durability.tla, for the tests that must catch them (internal, test builds
/// only: <see cref="Protocols.MutantFlag"/>).</summary>
[Flags]
internal enum DurabilityMutants
{
    None = 0,
    /// <summary>MutantAcknowledgeAtCommit: a commit's caller is answered at once, before its
    /// epoch is durable.</summary>
    AcknowledgeAtCommit = 1,
    /// <summary>MutantDurableIsMax: the durable epoch is the most any logger has synced, not the
    /// least.</summary>
    DurableIsMax = 2,
    /// <summary>MutantApplyInFileOrder: recovery applies every log record over its rows, file
    /// after file, whatever the row's commit id.</summary>
    ApplyInFileOrder = 4,
    /// <summary>MutantCommitIdWithoutEpoch: a commit id larger than what its transaction read and
    /// overwrote and than its worker's last, without the epoch in it.</summary>
    CommitIdWithoutEpoch = 8,
}
