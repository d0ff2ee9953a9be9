using Contend.Engine.Locks;
using Contend.Engine.Protocols.TwoPhaseLocking;

namespace Contend.Tests;

/// <summary>
/// The queue locks' deadlock detector on graphs laid out by hand with real MCS queues: it finds
/// the textbook cycle and the one through a stolen op, names one victim per cycle (the younger
/// transaction), and finds nothing while the holder can still move. The mutant that leaves
/// stolen frames out misses the stolen-op cycle (StealDBDeadlock.tla's MutantNoStealEdges). With
/// reader-writer locks it finds the cycle through shares, and only through shares of the row a
/// writer waits for; the mutant that ignores readers misses it.
/// </summary>
public class QueueDeadlockDetectorTests
{
    const int NodesPerSlot = 4;

    /// <summary>Two workers, two rows (A and B), MCS queues over them, and the detector.</summary>
    sealed class Graph
    {
        public readonly McsLock Lock = new(2 * NodesPerSlot);
        public readonly QueueDeadlockDetector D;
        public long A, B;

        /// <param name="ownFramesOnly">the mutant that leaves other slots' frames out</param>
        /// <param name="ignoresReaders">the mutant that gives a writer waiting for readers no edge</param>
        public Graph(bool ownFramesOnly = false, bool ignoresReaders = false)
        {
            D = new QueueDeadlockDetector(Lock, workers: 2, frames: 2, NodesPerSlot, ownFramesOnly, ignoresReaders);
            D.Began(0, timestamp: 1);
            D.Began(1, timestamp: 2);
            // As the protocols do before they lock: the reader scan looks at no node past this.
            D.Uses(0, NodesPerSlot);
            D.Uses(1, NodesPerSlot);
        }

        /// <summary>Slot <paramref name="slot"/>'s op <paramref name="op"/> queues on a row; true if granted at once.</summary>
        public bool Enqueue(ref long row, int slot, int op)
        {
            int node = slot * NodesPerSlot + op;
            return Lock.TryLock(ref row, node);
        }

        /// <summary>Worker <paramref name="worker"/>'s frame <paramref name="depth"/> runs slot's op and waits for its node.</summary>
        public void Wait(int worker, int depth, int slot, int op)
        {
            D.Waits(worker, depth, slot, slot * NodesPerSlot + op);
        }
    }

    [Fact]
    public void Opposite_order_is_a_cycle_and_the_younger_transaction_is_its_one_victim()
    {
        var g = new Graph();
        Assert.True(g.Enqueue(ref g.A, slot: 0, op: 0));
        Assert.True(g.Enqueue(ref g.B, slot: 1, op: 0));
        Assert.False(g.Enqueue(ref g.B, slot: 0, op: 1));
        g.Wait(worker: 0, depth: 0, slot: 0, op: 1);
        Assert.False(g.D.IsVictim(0, 0)); // t1 holds B and is not waiting: no cycle yet

        Assert.False(g.Enqueue(ref g.A, slot: 1, op: 1));
        g.Wait(worker: 1, depth: 0, slot: 1, op: 1);
        Assert.True(g.D.IsVictim(1, 0));  // t1 started later (timestamp 2)
        Assert.False(g.D.IsVictim(0, 0)); // on the cycle, but older: it waits for t1's abort
    }

    [Fact]
    public void A_lone_wait_is_not_searched_even_behind_its_own_transaction()
    {
        // Slot 0's op 1 queues on A behind its own op 0, which the spec's ASSUME rules out: a
        // cycle through the one waiting frame and its own transaction, left to the threshold.
        var g = new Graph();
        Assert.True(g.Enqueue(ref g.A, slot: 0, op: 0));
        Assert.False(g.Enqueue(ref g.A, slot: 0, op: 1));
        g.Wait(worker: 0, depth: 0, slot: 0, op: 1);
        Assert.False(g.D.IsVictim(0, 0));
    }

    [Fact]
    public void A_cycle_through_a_stolen_op_is_found_and_the_mutant_misses_it()
    {
        foreach (bool mutant in new[] { false, true })
        {
            // t0 holds B; t1 holds A and waits for B behind t0; t1's worker, waiting, steals t0's
            // op on A, which queues behind t1's own context: t0's release waits for that op.
            var g = new Graph(mutant);
            Assert.True(g.Enqueue(ref g.B, slot: 0, op: 0));
            Assert.True(g.Enqueue(ref g.A, slot: 1, op: 0));
            Assert.False(g.Enqueue(ref g.B, slot: 1, op: 1));
            g.Wait(worker: 1, depth: 0, slot: 1, op: 1);
            Assert.False(g.Enqueue(ref g.A, slot: 0, op: 1));
            g.Wait(worker: 1, depth: 1, slot: 0, op: 1);
            Assert.Equal(!mutant, g.D.IsVictim(1, 1));
            if (!mutant) Assert.True(g.D.CycleThroughStolenFrame(1, 1));
        }
    }

    [Fact]
    public void A_cycle_through_shares_is_found_and_the_mutant_misses_it()
    {
        foreach (bool mutant in new[] { false, true })
        {
            // Reader-writer locks: t0 and t1 each hold one row shared, then each asks to write the
            // other's: each writer is the head of its queue, waiting for the other's share.
            var g = new Graph(ignoresReaders: mutant);
            Assert.True(g.Lock.TryLockShared(ref g.A, 0 * NodesPerSlot + 0, key: 1));
            Assert.True(g.Lock.TryLockShared(ref g.B, 1 * NodesPerSlot + 0, key: 2));
            Assert.False(g.Lock.TryLockExclusive(ref g.B, 0 * NodesPerSlot + 1, key: 2));
            g.Wait(worker: 0, depth: 0, slot: 0, op: 1);
            Assert.False(g.D.IsVictim(0, 0)); // t1 is not waiting yet
            Assert.False(g.Lock.TryLockExclusive(ref g.A, 1 * NodesPerSlot + 1, key: 1));
            g.Wait(worker: 1, depth: 0, slot: 1, op: 1);
            Assert.Equal(!mutant, g.D.IsVictim(1, 0)); // t1, the younger, is the victim
            Assert.False(g.D.IsVictim(0, 0));
        }
    }

    [Fact]
    public void A_share_of_another_row_is_no_edge()
    {
        // t0 holds A shared and waits to write B, which t1 holds shared; t1 waits to write C,
        // held shared by a reader outside the graph. t0's share is of A, not C: no cycle.
        var g = new Graph();
        long c = 1L << 32; // one reader counted on C
        Assert.True(g.Lock.TryLockShared(ref g.A, 0 * NodesPerSlot + 0, key: 1));
        Assert.True(g.Lock.TryLockShared(ref g.B, 1 * NodesPerSlot + 0, key: 2));
        Assert.False(g.Lock.TryLockExclusive(ref g.B, 0 * NodesPerSlot + 1, key: 2));
        g.Wait(worker: 0, depth: 0, slot: 0, op: 1);
        Assert.False(g.Lock.TryLockExclusive(ref c, 1 * NodesPerSlot + 1, key: 3));
        g.Wait(worker: 1, depth: 0, slot: 1, op: 1);
        Assert.False(g.D.IsVictim(0, 0));
        Assert.False(g.D.IsVictim(1, 0));
    }

    [Fact]
    public void A_granted_waiter_breaks_the_cycle()
    {
        var g = new Graph();
        g.Enqueue(ref g.A, 0, 0);
        g.Enqueue(ref g.B, 1, 0);
        g.Enqueue(ref g.B, 0, 1);
        g.Wait(0, 0, 0, 1);
        g.Enqueue(ref g.A, 1, 1);
        g.Wait(1, 0, 1, 1);
        // t1's release of B hands it to t0's node: t0 no longer waits.
        g.Lock.Unlock(ref g.B, 1 * NodesPerSlot + 0);
        Assert.False(g.D.IsVictim(1, 0));
        Assert.False(g.D.IsVictim(0, 0));
    }
}
