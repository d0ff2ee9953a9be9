namespace Contend.Engine.Protocols.Strife;

/// <summary>Deliberately broken steps of Strife, for the tests that must catch them (internal,
/// test builds only: <see cref="MutantFlag"/>).</summary>
[Flags]
internal enum StrifeMutants
{
    None = 0,
    /// <summary>MCStrifeAnalysis.tla MutantAllocateAcross: a transaction whose items lie in two
    /// clusters joins one of them instead of the residual.</summary>
    AllocateAcross = 1,
    /// <summary>MCStrifeAnalysis.tla MutantIgnoreReads: a transaction takes part in the analysis
    /// with the items it writes only, not those it reads.</summary>
    IgnoreReads = 2,
    /// <summary>MCStrifeExec.tla MutantNoBarrier: a worker with no cluster left starts on the
    /// residuals while other workers still run clusters.</summary>
    NoBarrier = 4,
    /// <summary>MCStrifeExec.tla MutantAbortKeepsLocks: a residual's conflict abort keeps its locks.</summary>
    AbortKeepsLocks = 8,
    /// <summary>MCStrifeExec.tla MutantOverlapEarly: batch n+1's clusters start as soon as it is
    /// analysed, while batch n's residuals still run.</summary>
    OverlapEarly = 16,
    /// <summary>MCStrifeExec.tla MutantRetryAfterCommit: a worker runs a committed residual again.</summary>
    RetryAfterCommit = 32,
    /// <summary>The engine's alone (the specs do not model before-images): a clustered
    /// transaction that writes without them does not reserve its inserts' rows first, so a
    /// table found full at commit leaves its writes behind (StrifeClusterTests).</summary>
    ImagelessNoReserve = 64,
}
