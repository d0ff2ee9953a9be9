using Contend.Engine.Locks;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Microsoft.Coyote.Random;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote;

/// <summary>
/// The MCS queue lock (MCSLock.tla's TRYLOCK / CHECKACQUIRED / UNLOCK), three threads each
/// taking it twice with the same queue node (the spec's context reuse). Checked on every
/// schedule: mutual exclusion (MutualExclusionInv), FIFO hand-over (FifoHandoverInv: a waiter
/// queued behind P gets the lock from P), and no lost wake-up (every thread gets through
/// within the steps bound, NoLostWakeupInv / StarvationFreedomProp).
/// </summary>
public static class McsLockTests
{
    const int Threads = 3, Rounds = 2;
    const string GaveUpUnwoken = "a give-up that lost to the wake found the node not woken";

    public static IEnumerable<CoyoteTest> All =>
    [
        new("McsLock", () => Run(releaseClearsTail: false)),
        // MCSLock.tla MutantReleaseClearTail, the paper's one-line UNLOCK.
        new("McsLockTwinReleaseClearTail", () => Run(releaseClearsTail: true), CaughtBy: CoyoteSuite.StepsBound),
        new("McsLockReaderWriter", () => RunReaderWriter(TwoPhaseLockingMutants.None)),
        // RWMCSLock.tla MutantReaderBargesPastWriter.
        new("McsLockTwinReaderBarges", () => RunReaderWriter(TwoPhaseLockingMutants.McsReaderBarges), CaughtBy: "FIFO"),
        // MCRWMCSLock.tla MutantWriterEntersRead: the writer's fast path takes a word readers hold.
        new("McsLockTwinWriterEntersRead", () => RunReaderWriter(TwoPhaseLockingMutants.McsWriterEntersRead), CaughtBy: "mutual exclusion"),
        new("McsLockGiveUp", () => RunGivingUp(TwoPhaseLockingMutants.None)),
        // RWMCSLock.tla's mutants of giving up, each its twin here.
        new("McsLockTwinGivesUpWoken", () => RunGivingUp(TwoPhaseLockingMutants.McsGivesUpWoken), CaughtBy: CoyoteSuite.StepsBound),
        new("McsLockTwinWakeStores", () => RunGivingUp(TwoPhaseLockingMutants.McsWakeStores), CaughtBy: CoyoteSuite.StepsBound),
        // Its waker's late mark can land on the node queued again: a wake that never comes, or a
        // give-up that fails on a node not woken either (TLC catches it as a FIFO violation).
        new("McsLockTwinLetGoBeforeRead", () => RunGivingUp(TwoPhaseLockingMutants.McsLetGoBeforeRead), CaughtBy: CoyoteSuite.StepsBound,
            OrCaughtBy: GaveUpUnwoken),
    ];

    /// <summary>
    /// The reader-writer form with giving up (RWMCSLock.tla GiveUp, HeadGivesUp, Reclaim): the
    /// threads of <see cref="RunReaderWriter"/>, each wait of which Coyote may end by giving the
    /// node up. A node given up (<see cref="McsLock.TryAbandon"/> true) is queued again only once
    /// its waker has let it go, as the spec's processes (one node each, so that a node is reused
    /// as soon as the lock allows); one whose give-up came too late was woken, and its thread
    /// leaves as a holder (a reader) or a head writer does. Checked on every schedule: a writer
    /// holds alone, a reader is not admitted past a writer still queued before it, everyone gets
    /// through within the steps bound, and at the end the word is free and no node is given up.
    /// </summary>
    static async Task RunGivingUp(TwoPhaseLockingMutants mutants)
    {
        MutantFlag Flag(TwoPhaseLockingMutants m) => new(mutants, m);
        var mcs = new McsLock(Threads, default, default, givingUp: true, Flag(TwoPhaseLockingMutants.McsGivesUpWoken),
                              Flag(TwoPhaseLockingMutants.McsWakeStores), Flag(TwoPhaseLockingMutants.McsLetGoBeforeRead));
        var choices = Generator.Create();
        var word = new long[1];
        var readers = new int[1];
        var writers = new int[1];
        var writerQueued = new int[1];
        var workers = Enumerable.Range(0, Threads).Select(node => Task.Run(() =>
        {
            bool reader = node != 1;
            for (int round = 0; round < Rounds; round++)
            {
                var wait = new SpinWait();
                if (reader)
                {
                    int writerAhead = Volatile.Read(ref writerQueued[0]);
                    bool held = mcs.TryLockShared(ref word[0], node, key: 0), gaveUp = false;
                    while (!held && !(held = mcs.CheckAcquiredShared(ref word[0], node)))
                    {
                        if (choices.NextBoolean())
                        {
                            if (gaveUp = mcs.TryAbandon(node)) break;
                            held = mcs.CheckAcquiredShared(ref word[0], node); // woken first: it holds
                            Specification.Assert(held, $"reader {node}: {GaveUpUnwoken}");
                        }
                        Spin.Once(ref wait);
                    }
                    if (gaveUp)
                    {
                        while (mcs.IsAbandoned(node)) Spin.Once(ref wait); // Reclaim
                        continue;
                    }
                    ReaderHolds(mcs, word, node, writerAhead, writerQueued, readers, writers);
                }
                else
                {
                    bool gaveUp = false;
                    if (!mcs.TryLockExclusive(ref word[0], node, key: 0))
                    {
                        Volatile.Write(ref writerQueued[0], round + 1);
                        while (!mcs.CheckAcquiredExclusive(ref word[0], node))
                        {
                            if (choices.NextBoolean())
                            {
                                gaveUp = true;
                                break;
                            }
                            Spin.Once(ref wait);
                        }
                        Volatile.Write(ref writerQueued[0], 0);
                    }
                    if (gaveUp)
                    {
                        if (mcs.TryAbandon(node))
                            while (mcs.IsAbandoned(node)) Spin.Once(ref wait); // Reclaim
                        else
                            mcs.UnlockExclusive(ref word[0], node); // HeadGivesUp: leaves, never having held
                        continue;
                    }
                    WriterHolds(mcs, word, node, readers, writers);
                }
            }
        })).ToArray();
        await Task.WhenAll(workers);
        Specification.Assert(Volatile.Read(ref word[0]) == 0, $"the lock is not free after every thread released it: word {Volatile.Read(ref word[0]):x}");
        for (int node = 0; node < Threads; node++)
            Specification.Assert(!mcs.IsAbandoned(node), $"node {node} is still given up after every thread ended: nobody took it out of the queue");
    }

    /// <summary>
    /// The reader-writer form (RWMCSLock.tla): readers on nodes 0 and 2, a writer on node 1, each
    /// taking the lock twice with the same node. Checked on every schedule: a writer holds alone
    /// (MutualExclusionInv), a reader that starts after a writer has queued is not admitted before
    /// that writer (FIFO order, RWFifoRefinementProp), and everyone gets through within the steps
    /// bound (StarvationFreedomProp).
    /// </summary>
    static async Task RunReaderWriter(TwoPhaseLockingMutants mutants)
    {
        var mcs = new McsLock(Threads, default, new MutantFlag(mutants, TwoPhaseLockingMutants.McsReaderBarges),
                              writerEntersRead: new MutantFlag(mutants, TwoPhaseLockingMutants.McsWriterEntersRead));
        var word = new long[1];
        var readers = new int[1];
        var writers = new int[1];
        var writerQueued = new int[1]; // round + 1 from the writer's queuing to its grant, else 0
        var workers = Enumerable.Range(0, Threads).Select(node => Task.Run(() =>
        {
            bool reader = node != 1;
            for (int round = 0; round < Rounds; round++)
            {
                var wait = new SpinWait();
                if (reader)
                {
                    int writerAhead = Volatile.Read(ref writerQueued[0]);
                    if (!mcs.TryLockShared(ref word[0], node, key: 0))
                        while (!mcs.CheckAcquiredShared(ref word[0], node)) Spin.Once(ref wait);
                    ReaderHolds(mcs, word, node, writerAhead, writerQueued, readers, writers);
                }
                else
                {
                    if (!mcs.TryLockExclusive(ref word[0], node, key: 0))
                    {
                        Volatile.Write(ref writerQueued[0], round + 1);
                        while (!mcs.CheckAcquiredExclusive(ref word[0], node)) Spin.Once(ref wait);
                        Volatile.Write(ref writerQueued[0], 0);
                    }
                    WriterHolds(mcs, word, node, readers, writers);
                }
            }
        })).ToArray();
        await Task.WhenAll(workers);
        Specification.Assert(Volatile.Read(ref word[0]) == 0, $"the lock is not free after every thread released it: word {Volatile.Read(ref word[0]):x}");
    }

    /// <summary>A reader that holds: not admitted past a writer still queued before it (FIFO
    /// order), no writer inside (mutual exclusion); then it releases.</summary>
    static void ReaderHolds(McsLock mcs, long[] word, int node, int writerAhead, int[] writerQueued, int[] readers, int[] writers)
    {
        Specification.Assert(writerAhead == 0 || Volatile.Read(ref writerQueued[0]) != writerAhead,
            $"FIFO order: reader {node} was admitted while the writer queued before it still waited");
        Interlocked.Increment(ref readers[0]);
        Specification.Assert(Volatile.Read(ref writers[0]) == 0, $"mutual exclusion: reader {node} entered while the writer held the lock");
        Interlocked.Decrement(ref readers[0]);
        mcs.UnlockShared(ref word[0], node);
    }

    /// <summary>The writer that holds: no reader inside (mutual exclusion); then it releases.</summary>
    static void WriterHolds(McsLock mcs, long[] word, int node, int[] readers, int[] writers)
    {
        Interlocked.Increment(ref writers[0]);
        Specification.Assert(Volatile.Read(ref readers[0]) == 0, $"mutual exclusion: the writer entered while {Volatile.Read(ref readers[0])} readers held the lock");
        Interlocked.Decrement(ref writers[0]);
        mcs.UnlockExclusive(ref word[0], node);
    }

    static async Task Run(bool releaseClearsTail)
    {
        var mcs = new McsLock(Threads, new MutantFlag(releaseClearsTail ? TwoPhaseLockingMutants.McsReleaseClearTail : TwoPhaseLockingMutants.None, TwoPhaseLockingMutants.McsReleaseClearTail));
        var tail = new long[1];
        var inCriticalSection = new int[1];
        var lastHolder = new long[] { -1 };
        var workers = Enumerable.Range(0, Threads).Select(node => Task.Run(() =>
        {
            for (int round = 0; round < Rounds; round++)
            {
                if (!mcs.TryLock(ref tail[0], node, out long predecessor))
                {
                    var wait = new SpinWait();
                    while (!mcs.CheckAcquired(node)) Spin.Once(ref wait);
                }
                Specification.Assert(Interlocked.Increment(ref inCriticalSection[0]) == 1,
                    $"mutual exclusion: node {node} entered while another held the lock");
                long previous = Volatile.Read(ref lastHolder[0]);
                Specification.Assert(predecessor == 0 || previous == predecessor - 1,
                    $"FIFO hand-over: node {node} queued behind node {predecessor - 1} but took the lock after node {previous}");
                Volatile.Write(ref lastHolder[0], node);
                Interlocked.Decrement(ref inCriticalSection[0]);
                mcs.Unlock(ref tail[0], node);
            }
        })).ToArray();
        await Task.WhenAll(workers);
        Specification.Assert(Volatile.Read(ref tail[0]) == 0, "the lock is not free after every thread released it");
    }
}
