namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>Deliberately broken steps of the 2PL protocols, for the tests that must catch them
/// (internal, test builds only: <see cref="MutantFlag"/>).</summary>
[Flags]
internal enum TwoPhaseLockingMutants
{
    None = 0,
    /// <summary>MCSLock.tla MutantReleaseClearTail: UNLOCK clears the tail without a CAS
    /// (the paper's one-line UNLOCK), losing the wake-up of a waiter not yet linked (the
    /// exclusive <see cref="Locks.McsLock"/>).</summary>
    McsReleaseClearTail = 1,
    /// <summary>NoWait that takes the lock without checking it is held (no mutual exclusion).</summary>
    NoWaitIgnoreLock = 2,
    /// <summary>WaitDie in which a younger requester waits instead of dying (deadlock).</summary>
    WaitDieYoungerWaits = 4,
    /// <summary>Mcs whose waiters never search for a deadlock: the wait threshold alone ends
    /// one, as before the detector (StealDBDeadlock.tla's DetectSpec without DetectorAbort).</summary>
    McsNoDetection = 8,
    /// <summary>RWMCSLock.tla MutantReaderBargesPastWriter: a reader joins the readers that hold
    /// although a writer is queued, breaking FIFO order (Mcs).</summary>
    McsReaderBarges = 16,
    /// <summary>Mcs whose deadlock detector gives a writer waiting for readers no edge, so a
    /// cycle through shared holds is never found (the reader-writer lock's twin of
    /// StealDBDeadlock.tla MutantNoStealEdges).</summary>
    McsDetectorIgnoresReaders = 32,
    /// <summary>RWMCSLock.tla MutantGivesUpWoken: a waiter gives its node up without the CAS,
    /// even once woken; a woken reader stays counted (McsLock).</summary>
    McsGivesUpWoken = 64,
    /// <summary>RWMCSLock.tla MutantWakeStores: the wake stores instead of its CAS, so a node
    /// given up is woken as if it waited, and nobody takes it out of the queue (McsLock).</summary>
    McsWakeStores = 128,
    /// <summary>RWMCSLock.tla MutantLetGoBeforeRead: a node given up is released to its owner
    /// before its successor is read (McsLock).</summary>
    McsLetGoBeforeRead = 256,
    /// <summary>MCRWMCSLock.tla MutantWriterEntersRead: the writer's fast path guesses a word with no
    /// queue but keeps the readers' count, so it takes a word readers hold (McsLock).</summary>
    McsWriterEntersRead = 512,
    /// <summary>WaitsFor whose cycle search misses a cycle of two (each waiter holding what the
    /// other waits for): the plainest deadlock stays.</summary>
    WaitsForMissesTwoCycles = 1024,
    /// <summary>Ordered that takes its locks in the program's order instead of (table, row) order,
    /// so two transactions that lock two rows in opposite orders deadlock.</summary>
    OrderedInProgramOrder = 2048,
}
