using Contend.Engine.Protocols;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
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

    public static IEnumerable<CoyoteTest> All =>
    [
        new("McsLock", () => Run(releaseClearsTail: false)),
        // MCSLock.tla MutantReleaseClearTail, the paper's one-line UNLOCK.
        new("McsLockTwinReleaseClearTail", () => Run(releaseClearsTail: true), CaughtBy: CoyoteSuite.StepsBound),
    ];

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
