namespace Contend.Engine.Protocols.StealDB;

/// <summary>Deliberately broken steps of StealDB, each one of MCStealDB.tla's or MCSLock.tla's
/// mutants unless it says otherwise, for the tests that must catch them (internal, test builds
/// only: <see cref="MutantFlag"/>).</summary>
[Flags]
internal enum StealDbMutants
{
    None = 0,
    /// <summary>MCSLock.tla MutantReleaseClearTail, in StealDB's queue locks: a release clears the
    /// tail whoever swapped it.</summary>
    McsReleaseClearTail = 1,
    /// <summary>MutantStealTakeNonAtomic (C1 undone): STEALOP reads the predecessor's steal
    /// context and clears it in a later store (Algorithm 3 lines 1 and 5 as written).</summary>
    ReadThenClear = 2,
    /// <summary>MutantClaimCheckThenSet: RUNOP tests op.tid, then sets it, without CAS.</summary>
    ClaimTestThenSet = 4,
    /// <summary>MutantExecuteAndRelease: an op releases its lock right after executing.</summary>
    EarlyRelease = 8,
    /// <summary>MutantProceedWithoutLock: a waiter executes without being granted the lock.</summary>
    RunWithoutLock = 16,
    /// <summary>MutantTimeoutCancelsContext: a timed-out waiter's node leaves the queue at once
    /// instead of waiting to reach the head.</summary>
    TimeoutLeavesQueue = 32,
    /// <summary>The engine's alone (the specs model no exceptions): StealDB does not catch a
    /// throwing body where its op runs, so a stolen op's exception escapes into the thief's own
    /// transaction, and an owner's leaves its attempt's locks held (StealDB before it caught them).</summary>
    FailureEscapes = 64,
    /// <summary>StealDBDeadlock.tla's MutantDetectorAbort, in the engine: the deadlock detector
    /// leaves out every frame that runs another transaction's op, as a graph that each worker
    /// publishes for its own transaction would, and so misses a cycle through a stolen op.</summary>
    DetectorIgnoresStolenFrames = 128,
    /// <summary>MCStealDBDeadlock.tla's MutantEdgesIgnoreReaders, in the engine: a writer waiting
    /// for readers (who left the queue when granted) has no edge in the detector's graph, so two
    /// writers each behind the other's reader are never found.</summary>
    DetectorIgnoresReaders = 256,
}
