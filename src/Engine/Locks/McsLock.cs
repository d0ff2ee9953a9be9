using System.Diagnostics;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;

namespace Contend.Engine.Locks;

/// <summary>
/// The MCS queue lock of specs/MCSLock/MCSLock.tla (exclusive: <see cref="TryLock(ref long, int)"/>,
/// <see cref="CheckAcquired"/>, <see cref="Unlock"/>; since the StealDB family moved to the other
/// form only the Coyote McsLock tests take it whole, checking it against its spec) and its
/// reader-writer form of specs/MCSLock/RWMCSLock.tla (<see cref="TryLockShared"/>,
/// <see cref="TryLockExclusive"/> and theirs, which Mcs and the StealDB family take). A record word
/// serves one form or the other, never both. Each waiter spins on
/// its own queue node. Nodes live in one managed array, one cache line each, and are named by
/// index + 1 so that 0 is the empty tail:
/// <code>
///   record word   [ 63 .............. 32 | 31 ............ 0 ]
///                 [ readers holding      | tail node id + 1  ]   0 | 0: free, no queue
///                 (readers: the reader-writer form only; the exclusive form's swap keeps it 0)
///   queue node    long[8]: [0] next node id + 1 (0: none), bit 32 set if that node is a
///                          reader's (its waker counts it without reading its line), [1] spin flag
///                          (1: wait, 0: woken, 2: given up, 3: let go by its waker: TryAbandon),
///                          [2] ahead: the node queued ahead, for the deadlock detector,
///                          [3] padding, [4] the lock's key + 1 while the node's reader
///                          holds (0 otherwise), [5] the lock's key + 1, [6] 1: a writer not yet
///                          holding, [7] padding
/// </code>
/// Words [2] and [4]-[6] are only for <see cref="QueueDeadlockDetector"/>, which reads them racily. A
/// node belongs to one (worker, access) pair and is reused only after the access released it,
/// which MutantInitKeepsNext shows must start by clearing next, or after its waker let it go.
/// </summary>
internal sealed class McsLock
{
    const int NodeLongs = 8, Next = 0, SpinFlag = 1, Ahead = 2, HeldKey = 4, Key = 5, WriterWaits = 6;
    const long OneReader = 1L << 32, TailMask = uint.MaxValue, ReaderLink = 1L << 32;
    /// <summary>Values of a node's spin flag.</summary>
    const long Granted = 0, Waiting = 1, Abandoned = 2, Released = 3;

    /// <summary>Values of a node's ahead word besides a node id + 1.</summary>
    public const long AheadUnknown = 0, AheadNone = -1;

    /// <summary>The nodes, one cache line each from <see cref="_start"/> (<see cref="CacheLines"/>).</summary>
    readonly long[] _nodes;
    readonly int _start, _count;
    /// <summary>Whether a node may be given up (<see cref="TryAbandon"/>): then a wake is a CAS.</summary>
    readonly bool _givingUp;
    readonly MutantFlag _releaseClearsTail, _readerBarges, _givesUpWoken, _wakeStores, _letGoBeforeRead, _writerEntersRead;

    public McsLock(int nodes) : this(nodes, default, default) { }

    /// <param name="givingUp">whether waiters may give their nodes up (<see cref="TryAbandon"/>);
    /// if not, a wake is a plain store, one interlocked instruction fewer per hand-over</param>
    internal McsLock(int nodes, MutantFlag releaseClearsTail, MutantFlag readerBarges = default, bool givingUp = false,
                     MutantFlag givesUpWoken = default, MutantFlag wakeStores = default, MutantFlag letGoBeforeRead = default,
                     MutantFlag writerEntersRead = default)
    {
        (_nodes, _start) = CacheLines.Blocks(nodes);
        _count = nodes;
        _givingUp = givingUp;
        _releaseClearsTail = releaseClearsTail;
        _readerBarges = readerBarges;
        _givesUpWoken = givesUpWoken;
        _wakeStores = wakeStores;
        _letGoBeforeRead = letGoBeforeRead;
        _writerEntersRead = writerEntersRead;
    }

    /// <summary>Nodes in the lock's array.</summary>
    public int Nodes => _count;

    /// <summary>TRYLOCK: MCSLock.tla InitContext, SwapTail, then EnterFree (true: the
    /// lock is ours) or LinkBehindPred (false: wait with <see cref="CheckAcquired"/>).</summary>
    public bool TryLock(ref long tail, int node) => TryLock(ref tail, node, out _);

    /// <inheritdoc cref="TryLock(ref long, int)"/>
    /// <param name="predecessor">the node queued ahead (id + 1), 0 if none: TRYLOCK's return value, which the
    /// FIFO hand-over check and StealDB's steal both read</param>
    public bool TryLock(ref long tail, int node, out long predecessor)
    {
        int me = InitContext(node, key: 0);
        // SwapTail: ctx_p = XCHG(lock.tail, lockCtx).
        long pred = predecessor = Interlocked.Exchange(ref tail, node + 1);
        Debug.Assert(pred >> 32 == 0, $"node {node}: the exclusive TRYLOCK swapped out a word with readers counted; a record word serves one form only");
        Publish(me, pred);
        if (pred == 0) return true; // EnterFree
        Link(pred, node, reader: false);
        return false;
    }

    /// <summary>CHECKACQUIRED, one look: MCSLock.tla WaiterAcquire once the predecessor cleared our flag.</summary>
    public bool CheckAcquired(int node) => Volatile.Read(ref _nodes[At(node) + SpinFlag]) == 0;

    /// <summary>UNLOCK: HolderCheckNext, then HolderReleaseCas or HolderAwaitLink, then HolderHandover.</summary>
    public void Unlock(ref long tail, int node)
    {
        int me = At(node);
        long next = Volatile.Read(ref _nodes[me + Next]); // HolderCheckNext
        if (next == 0)
        {
            if (_releaseClearsTail)
            {
                // MCSLock.tla MutantReleaseClearTail (the paper's one-line UNLOCK): a successor
                // that swapped the tail but has not linked yet is never woken.
                Volatile.Write(ref tail, 0);
                return;
            }
            // HolderReleaseCas: CAS(lock.tail, lockCtx, null).
            if (Interlocked.CompareExchange(ref tail, 0, node + 1) == node + 1) return;
            next = AwaitLink(me); // HolderAwaitLink
        }
        // HolderHandover: clear the successor's spin flag.
        Volatile.Write(ref _nodes[At((int)(next & TailMask) - 1) + SpinFlag], 0);
    }

    /// <summary>RWMCSLock.tla InitContext and SwapTail of a reader: true when it found no queue
    /// and holds, counted; false when it queued (wait with <see cref="CheckAcquiredShared"/>).</summary>
    /// <param name="key">names the lock for the deadlock detector (the same for every node of one record word)</param>
    public bool TryLockShared(ref long word, int node, long key)
    {
        int me = InitContext(node, key);
        while (true)
        {
            long w = Volatile.Read(ref word);
            if ((w & TailMask) == 0 || _readerBarges && w >> 32 != 0)
            {
                // No queue: counted and holding (RWMCSLock.tla's fast path). The mutant
                // (MutantReaderBargesPastWriter) also joins readers that hold while a writer queues.
                _nodes[me + HeldKey] = key + 1; // before the count: the detector may see an edge early, never late
                if (Interlocked.CompareExchange(ref word, w + OneReader, w) == w)
                {
                    Publish(me, 0);
                    return true;
                }
                _nodes[me + HeldKey] = 0;
                continue; // the word moved: another thread's step succeeded
            }
            if (Interlocked.CompareExchange(ref word, (w & ~TailMask) | (uint)(node + 1), w) == w)
            {
                long pred = w & TailMask;
                Publish(me, pred);
                Link(pred, node, reader: true);
                return false;
            }
        }
    }

    /// <summary>RWMCSLock.tla WaiterWoken of a reader, then its leaving the queue
    /// (ReaderCheckNext to ReaderPassOn): true once the reader holds and has left the queue,
    /// having woken the node behind it.</summary>
    public bool CheckAcquiredShared(ref long word, int node)
    {
        int me = At(node);
        if (Volatile.Read(ref _nodes[me + SpinFlag]) != 0) return false;
        _nodes[me + HeldKey] = _nodes[me + Key];
        LeaveQueue(ref word, node);
        return true;
    }

    /// <summary>RWMCSLock.tla ReaderRelease: one decrement of the count.</summary>
    public void UnlockShared(ref long word, int node)
    {
        Debug.Assert(Volatile.Read(ref word) >> 32 > 0, $"node {node}: a reader released a word with no reader counted");
        Interlocked.Add(ref word, -OneReader);
        _nodes[At(node) + HeldKey] = 0;
    }

    /// <summary>RWMCSLock.tla WriterEnterFree, or if the word is not free InitContext and SwapTail
    /// of a writer, then WriterEnter if it is the head: true when it holds; false when it waits (with <see cref="CheckAcquiredExclusive"/>)
    /// for its predecessor, or, at the head, for the readers to release.</summary>
    public bool TryLockExclusive(ref long word, int node, long key)
    {
        // RWMCSLock.tla WriterEnterFree: a free word (no queue, no reader) is taken with one CAS
        // that guesses it, before the node is set up for waiting: where rows are rarely shared
        // the word is cold, and a read before the CAS can fetch its line once to read and again
        // to own it (docs/measured/StealDB.md, "The exclusive fast path"). The node is then the
        // head and holds. A successor links to it, so its next must be clear before the CAS; the
        // detector, which stops at a node whose ahead is unknown, must see it granted with nobody
        // ahead; its key is read only while it waits. Its flag is cleared, not set to wait: no
        // predecessor will wake it.
        int me = At(node);
        _nodes[me + Next] = 0;
        _nodes[me + SpinFlag] = Granted;
        _nodes[me + WriterWaits] = 0;
        Publish(me, pred: 0);
        // MCRWMCSLock.tla MutantWriterEntersRead guesses the readers' count kept.
        long free = _writerEntersRead ? Volatile.Read(ref word) & ~TailMask : 0;
        long w = Interlocked.CompareExchange(ref word, free | (uint)(node + 1), free), seen;
        if (w == free) return true;
        InitContext(node, key);
        _nodes[me + WriterWaits] = 1;
        // SwapTail, as CASes since it keeps the count, the first guessing the word the failed one saw.
        while ((seen = Interlocked.CompareExchange(ref word, (w & ~TailMask) | (uint)(node + 1), w)) != w) w = seen;
        long pred = w & TailMask;
        Publish(me, pred);
        if (pred == 0) Volatile.Write(ref _nodes[me + SpinFlag], 0); // the head from the start
        else Link(pred, node, reader: false);
        return CheckAcquiredExclusive(ref word, node);
    }

    /// <summary>One look: RWMCSLock.tla WaiterWoken of a writer, then WriterEnter once no reader holds.</summary>
    public bool CheckAcquiredExclusive(ref long word, int node)
    {
        int me = At(node);
        if (Volatile.Read(ref _nodes[me + SpinFlag]) != 0 || Volatile.Read(ref word) >> 32 != 0) return false;
        _nodes[me + WriterWaits] = 0;
        return true;
    }

    /// <summary>RWMCSLock.tla's writer release (WriterCheckNext to WriterHandover): wakes the node
    /// behind, counting a reader first. An abandoned writer's node (C2) leaves this way once
    /// woken: it never held, so it does not wait for readers.</summary>
    public void UnlockExclusive(ref long word, int node) => LeaveQueue(ref word, node);

    /// <summary>The node queued ahead of <paramref name="node"/> at its swap (id + 1),
    /// <see cref="AheadNone"/> if it entered a free lock, <see cref="AheadUnknown"/> while it
    /// is being queued; a plain load, as <see cref="SeemsGranted"/>.</summary>
    public long AheadOf(int node) => _nodes[At(node) + Ahead];

    /// <summary>Whether the node holds, as a plain load for a racy snapshot of many words
    /// (<see cref="QueueDeadlockDetector"/>) that needs no ordering among them: its flag is
    /// clear, and a reader-writer writer has seen no reader.</summary>
    public bool SeemsGranted(int node) => _nodes[At(node) + SpinFlag] == 0 && _nodes[At(node) + WriterWaits] == 0;

    /// <summary>A writer at the head of its queue, waiting for readers to release (plain loads).</summary>
    public bool SeemsWaitingForReaders(int node) => _nodes[At(node) + SpinFlag] == 0 && _nodes[At(node) + WriterWaits] != 0;

    /// <summary>Whether <paramref name="reader"/>'s node holds shared the lock <paramref name="writer"/>'s waits for (plain loads).</summary>
    public bool SeemsSharing(int reader, int writer)
    {
        long held = _nodes[At(reader) + HeldKey];
        return held != 0 && held == _nodes[At(writer) + Key];
    }

    /// <summary>True while <paramref name="node"/> is the last in the queue: no successor has swapped the tail.</summary>
    public static bool IsTail(ref long tail, int node) => (Volatile.Read(ref tail) & TailMask) == (uint)(node + 1);

    /// <summary>Where a node's words begin in <see cref="_nodes"/>.</summary>
    int At(int node) => _start + node * NodeLongs;

    /// <summary>The node whose words begin at <paramref name="at"/>.</summary>
    int NodeAt(int at) => (at - _start) / NodeLongs;

    /// <summary>InitContext: nobody can reach this node before the swap publishes it.</summary>
    int InitContext(int node, long key)
    {
        int me = At(node);
        Volatile.Write(ref _nodes[me + Next], 0);
        Volatile.Write(ref _nodes[me + SpinFlag], 1);
        // The detector's words, plain stores on the node's own line: the swap's interlocked
        // instruction orders them before it, and a reader that sees "unknown" stops there.
        _nodes[me + Ahead] = AheadUnknown;
        _nodes[me + Key] = key + 1;
        _nodes[me + WriterWaits] = 0;
        return me;
    }

    void Publish(int me, long pred) => _nodes[me + Ahead] = pred == 0 ? AheadNone : pred;

    /// <summary>LinkBehindPred: ctx_p.next = lockCtx, with whether it is a reader's, which its waker
    /// reads from its own line (one cache miss fewer on every hand-over: docs/measured/StealDB.md).</summary>
    void Link(long pred, int node, bool reader) =>
        Volatile.Write(ref _nodes[At((int)pred - 1) + Next], (node + 1L) | (reader ? ReaderLink : 0L));

    /// <summary>A reader's leaving the queue once woken (ReaderCheckNext to ReaderPassOn) and a
    /// writer's release (WriterCheckNext to WriterHandover), the same steps in RWMCSLock.tla:
    /// clear the tail if no successor has swapped it, else wait for the successor's link and
    /// wake it.</summary>
    void LeaveQueue(ref long word, int node)
    {
        long next = SuccessorOrClearTail(ref word, At(node));
        if (next != 0) Wake(ref word, next);
    }

    /// <summary>The node behind, once linked; 0 if the tail was this node and is now cleared.
    /// The count may move under the CAS; only a new tail means a successor.</summary>
    long SuccessorOrClearTail(ref long word, int me)
    {
        long next = Volatile.Read(ref _nodes[me + Next]);
        if (next != 0) return next;
        if (_releaseClearsTail)
        {
            // RWMCSLock.tla has no such step; MCSLock.tla's MutantReleaseClearTail in this
            // form: the tail cleared whoever swapped it, so a successor that has not linked
            // yet is never woken.
            long v;
            do v = Volatile.Read(ref word); while (Interlocked.CompareExchange(ref word, v & ~TailMask, v) != v);
            return 0;
        }
        // The CAS first guesses the word a writer's release finds (the tail is this node, no
        // reader counted), as the writer's swap does; a failed one gives the next guess.
        long mine = (uint)(NodeAt(me) + 1), w = mine, seen;
        while ((seen = Interlocked.CompareExchange(ref word, w & ~TailMask, w)) != w)
        {
            if ((seen & TailMask) != mine) return AwaitLink(me);
            w = seen;
        }
        return 0;
    }

    /// <summary>AwaitLink: a successor swapped the tail and is about to link itself.</summary>
    long AwaitLink(int me)
    {
        long next;
        var wait = new SpinWait();
        while ((next = Volatile.Read(ref _nodes[me + Next])) == 0) Spin.Once(ref wait);
        return next;
    }

    /// <summary>WakeSuccessor (RWMCSLock.tla Wake): a reader is counted before its flag clears, so
    /// that a head writer never sees no reader while a woken one has yet to move. The flag's CAS
    /// races the owner's <see cref="TryAbandon"/>; a node given up is not woken: the waker uncounts
    /// it and takes it out of the queue on its owner's behalf (SkipCheckNext to SkipOn), marks it
    /// released, and wakes the node behind it instead (SkipWake).</summary>
    void Wake(ref long word, long next)
    {
        while (true)
        {
            int successor = At((int)(next & TailMask) - 1);
            bool reader = (next & ReaderLink) != 0;
            if (reader) Interlocked.Add(ref word, OneReader);
            if (!_givingUp || _wakeStores)
            {
                // No node is given up (or, wrongly, MCRWMCSLock.tla MutantWakeStores: a node given
                // up is woken as if it waited).
                Volatile.Write(ref _nodes[successor + SpinFlag], Granted);
                return;
            }
            if (Interlocked.CompareExchange(ref _nodes[successor + SpinFlag], Granted, Waiting) == Waiting) return;
            Debug.Assert(_nodes[successor + SpinFlag] == Abandoned, $"node {NodeAt(successor)}: a wake found it neither waiting nor given up (woken twice?)");
            if (reader) Interlocked.Add(ref word, -OneReader);
            // MCRWMCSLock.tla MutantLetGoBeforeRead: released before its successor is read.
            if (_letGoBeforeRead) Volatile.Write(ref _nodes[successor + SpinFlag], Released);
            next = SuccessorOrClearTail(ref word, successor);
            Volatile.Write(ref _nodes[successor + SpinFlag], Released); // after its last read: its owner may queue it again
            if (next == 0) return;
        }
    }

    /// <summary>RWMCSLock.tla GiveUp: the owner of a queued node gives its wait up. True if the
    /// node was not yet woken and is now its waker's to take out of the queue (its owner may not
    /// queue it again while <see cref="IsAbandoned"/>); false if it was woken first, and the owner
    /// holds (a reader, counted) or is the head (a writer, HeadGivesUp) and leaves as usual.</summary>
    public bool TryAbandon(int node)
    {
        Debug.Assert(_givingUp, $"node {node}: given up in a lock built without givingUp, whose wakes are plain stores");
        ref long flag = ref _nodes[At(node) + SpinFlag];
        if (_givesUpWoken)
        {
            // MCRWMCSLock.tla MutantGivesUpWoken: no CAS, so a woken node is given up too.
            Volatile.Write(ref flag, Abandoned);
            return true;
        }
        return Interlocked.CompareExchange(ref flag, Abandoned, Waiting) == Waiting;
    }

    /// <summary>Abandoned and not yet taken out of its queue by its waker.</summary>
    public bool IsAbandoned(int node) => Volatile.Read(ref _nodes[At(node) + SpinFlag]) == Abandoned;
}
