using System.Diagnostics;
using Contend.Engine.Runtime;

namespace Contend.Engine.Locks;

/// <summary>
/// Deadlock detection for MCS queue locks, the waits-for graph of specs/StealDB/StealDBDeadlock.tla
/// (proofs/StealDB.md section 4.7), shared by <see cref="Protocols.TwoPhaseLocking.Mcs"/> and the StealDB family. Each
/// worker publishes the frames of its stack that wait for a lock (which transaction slot's op
/// each runs, and the queue node it waits on), and each queue node records the node queued
/// ahead of it (<see cref="McsLock.AheadOf"/>). A frame that does not wait has no edge out
/// (nothing runs above it: a frame above another is a stolen op run from the lower one's wait
/// loop), so leaving it out changes no cycle, and an op granted its lock at once writes nothing
/// for the detector. The
/// graph's three kinds of node and their edges ("cannot move before") are the spec's SuccIn:
/// <code>
///   R(slot)   the slot's transaction reaching its release  -> every frame running one of its ops
///   F(w, k)   frame k of worker w's stack                  -> F(w, k + 1), if k is not the top
///                                                          -> C(its node), if it waits and the node is not granted
///   C(node)   a lock context in a queue                    -> C(the node ahead), if not granted
///                                                          -> R(the node's slot), if at the head
///                                                          -> R(each slot holding it shared), if a
///                                                             writer at the head waiting for readers
/// </code>
/// A node that has given up its wait (C2) stays queued and is in the graph like any other: its
/// successors still wait for it. Mcs is the one-frame case: a worker runs one op at a time, its own.
///
/// Decision (the spec's "an engine must pick one by a fixed rule"): a waiting top frame on a
/// cycle aborts itself only if no other waiting top frame of its strongly connected component
/// has a younger transaction (a larger start timestamp; ties by the larger worker). Every cycle lies in one
/// component and a deadlock's cycle is stable (CycleStableProp), so the component's one victim
/// finds it, and the others wait for its abort instead of aborting too. Timestamps survive a
/// retry (<see cref="Runtime.TxnContext.Start"/>), so a transaction that keeps losing grows
/// older than the ones it meets and stops being chosen.
///
/// The words are read while their writers run, so a search can see an edge that was just
/// removed, and a cycle that was not there at any one moment. Callers abort only when two
/// searches a spin apart both name them: a deadlock stays put between the two, a transient
/// mix of old and new words rarely lines up twice. A search reads with plain loads: it wants
/// no order among them, and under Coyote (which sees Volatile reads as scheduling points, not
/// plain ones) a search is one step, so a schedule spends its priority changes on the
/// protocol's own words rather than on the dozens a search reads.
/// </summary>
internal sealed class QueueDeadlockDetector
{
    /// <summary>Idle rounds of a lock wait between two searches, for every protocol that uses the
    /// detector: every round, since a deadlock found late costs more than the searches
    /// (docs/measured/StealDB.md, "Deadlock detection": every fourth round ran Mcs at 444,310 txn/s
    /// on the hot set, every round at 485,000-717,000).</summary>
    public const int SearchEvery = 1;

    readonly McsLock _lock;
    readonly int _workers, _frames, _nodesPerSlot, _stride, _stacksStart, _slotsStart;
    /// <summary>Per worker from <see cref="_stacksStart"/>, one block of <see cref="_stride"/> longs on lines of its own (<see cref="CacheLines"/>):
    /// [0] the stack's depth, [1 + k] frame k: slot + 1 in the low half, waited node + 1 in the high.</summary>
    readonly long[] _stacks;
    /// <summary>Per slot from <see cref="_slotsStart"/>, a line each: [0] its transaction's start timestamp, written once an
    /// attempt; [1] the most of its nodes any of its transactions has locked (<see cref="Uses"/>).</summary>
    readonly long[] _slotWords;
    readonly Search[] _searches;
    readonly bool _ownFramesOnly, _ignoresReaders;

    /// <param name="workers">workers, which are also the transaction slots</param>
    /// <param name="frames">the deepest stack a worker can have</param>
    /// <param name="nodesPerSlot">queue nodes per slot: node n belongs to slot n / nodesPerSlot</param>
    /// <param name="ownFramesOnly">mutant: a frame running another slot's op is left out of the graph</param>
    /// <param name="ignoresReaders">mutant: a writer waiting for readers has no edge out</param>
    public QueueDeadlockDetector(McsLock queueLock, int workers, int frames, int nodesPerSlot, bool ownFramesOnly = false, bool ignoresReaders = false)
    {
        _lock = queueLock;
        _workers = workers;
        _frames = frames;
        _nodesPerSlot = nodesPerSlot;
        // The depth and the frames on whole lines, and one line more between two workers' blocks.
        int linesPerWorker = (1 + frames + CacheLines.Longs - 1) / CacheLines.Longs + 1;
        _stride = linesPerWorker * CacheLines.Longs;
        (_stacks, _stacksStart) = CacheLines.Blocks(workers * linesPerWorker);
        (_slotWords, _slotsStart) = CacheLines.Blocks(workers);
        int graph = workers + workers * frames + workers * nodesPerSlot;
        _searches = new Search[workers];
        for (int w = 0; w < workers; w++) _searches[w] = new Search(graph);
        _ownFramesOnly = ownFramesOnly;
        _ignoresReaders = ignoresReaders;
    }

    /// <summary>The slot's transaction began an attempt with this start timestamp.</summary>
    public void Began(int slot, long timestamp) => Volatile.Write(ref _slotWords[_slotsStart + slot * CacheLines.Longs], timestamp);

    /// <summary>The slot's transaction may lock its first <paramref name="nodes"/> nodes; called by
    /// the slot's own worker before it locks them. The search for the readers a writer waits for
    /// scans a slot's nodes only up to the most it has ever used (a mark that only grows, so a
    /// node held shared is never past it): 8 of 64 on the hot set's transactions, where the scan
    /// of every node took most of the search's time (docs/measured/StealDB.md). A plain store: the
    /// lock's interlocked swap that follows orders it before any share the node takes, and under
    /// Coyote it adds no scheduling point to every transaction's start.</summary>
    public void Uses(int slot, int nodes)
    {
        ref long mark = ref _slotWords[_slotsStart + slot * CacheLines.Longs + 1];
        if (nodes > mark) mark = nodes;
    }

    /// <summary>Frame <paramref name="depth"/> of the worker, which runs an op of the slot's
    /// transaction, waits for <paramref name="node"/>; every frame under it waits too (a frame
    /// above another is a stolen op that the one below runs from its wait loop).</summary>
    public void Waits(int worker, int depth, int slot, int node)
    {
        Debug.Assert(depth < _frames, $"worker {worker}: frame {depth} past the {_frames} the detector holds");
        int at = _stacksStart + worker * _stride;
        Volatile.Write(ref _stacks[at + 1 + depth], ((long)(node + 1) << 32) | (uint)(slot + 1));
        Volatile.Write(ref _stacks[at], depth + 1);
    }

    /// <summary>The worker's frame <paramref name="depth"/> no longer waits: granted, or given up.</summary>
    public void Stops(int worker, int depth) => Volatile.Write(ref _stacks[_stacksStart + worker * _stride], depth);

    /// <summary>Whether the worker's top frame, at <paramref name="depth"/> and waiting, lies on a
    /// cycle and is its component's victim (the class comment's rule).
    ///
    /// A worker's only waiting frame (depth 0) searches only if another worker has a waiting
    /// frame. Every frame in the graph waits, so with no other the cycle would have to run from
    /// the frame's queue back to its own transaction: a transaction waiting on a row it holds or
    /// queued for. The spec's ASSUME rules that out (one op per record); StealDB refuses a
    /// program that queues right behind itself (<c>GiveUpWaitOnItself</c>) and leaves the rest to
    /// the wait threshold, and Mcs cannot form one (an attempt releases its abandoned nodes
    /// before its retry queues). The check reads one word per other worker, where a search
    /// reads the predecessor's node and every worker's stack: on the hot set, most waits are for
    /// a transaction that is running, and the searches they skip were lines fetched from the
    /// other core (docs/measured/StealDB.md, "Searching only beside another wait").</summary>
    public bool IsVictim(int worker, int depth)
    {
        if (depth == 0 && !OtherWorkerWaits(worker)) return false;
        var search = _searches[worker];
        int me = Frame(worker, depth);
        int reached = search.Run(this, me, me);
        if (reached < 0) return false;
        long myAge = Age(worker, depth);
        // The younger waiting top frames reached from here, gathered before any second search
        // overwrites the marks; then each that leads back here shares the component and wins.
        Span<int> younger = stackalloc int[_workers];
        int count = 0;
        for (int v = 0; v < _workers; v++)
        {
            if (v == worker) continue;
            int top = (int)_stacks[_stacksStart + v * _stride] - 1;
            if (top < 0 || top >= _frames || !search.Reached(Frame(v, top), reached) || WaitedNode(v, top) < 0) continue;
            long age = Age(v, top);
            if (age > myAge || age == myAge && v > worker) younger[count++] = Frame(v, top);
        }
        for (int i = 0; i < count; i++)
            if (search.Run(this, younger[i], me) >= 0) return false;
        return true;
    }

    bool OtherWorkerWaits(int worker)
    {
        for (int v = 0; v < _workers; v++)
            if (v != worker && _stacks[_stacksStart + v * _stride] > 0) return true;
        return false;
    }

    /// <summary>For tests, after <see cref="IsVictim"/> said true: whether a frame that runs another
    /// slot's op than its worker's lies on a cycle through the victim (StolenCycleReachable).</summary>
    internal bool CycleThroughStolenFrame(int worker, int depth)
    {
        var search = _searches[worker];
        int me = Frame(worker, depth);
        int reached = search.Run(this, me, me);
        if (reached < 0) return false;
        Span<int> stolen = stackalloc int[_workers * _frames];
        int count = 0;
        for (int w = 0; w < _workers; w++)
            for (int k = 0; k < _frames; k++)
                if (search.Reached(Frame(w, k), reached) && (int)(uint)_stacks[_stacksStart + w * _stride + 1 + k] - 1 != w) stolen[count++] = Frame(w, k);
        for (int i = 0; i < count; i++)
            if (stolen[i] == me || search.Run(this, stolen[i], me) >= 0) return true;
        return false;
    }

    /// <summary>The start timestamp of the transaction whose op the frame runs.</summary>
    long Age(int worker, int depth)
    {
        int slot = (int)(uint)_stacks[_stacksStart + worker * _stride + 1 + depth] - 1;
        return slot < 0 ? long.MaxValue : _slotWords[_slotsStart + slot * CacheLines.Longs];
    }

    int WaitedNode(int worker, int depth) => (int)(_stacks[_stacksStart + worker * _stride + 1 + depth] >> 32) - 1;

    // Graph ids: R(slot) = slot; F(w, k) = workers + w * frames + k; C(node) = workers + workers * frames + node.
    int Frame(int worker, int depth) => _workers + worker * _frames + depth;
    int Context(int node) => _workers + _workers * _frames + node;

    /// <summary>Hands <paramref name="search"/> each successor of graph node <paramref name="id"/>.</summary>
    void Successors(int id, Search search)
    {
        if (id < _workers)
        {
            // R(slot): every frame, on any worker, running one of the slot's ops.
            for (int w = 0; w < _workers; w++)
            {
                int depth = Math.Min((int)_stacks[_stacksStart + w * _stride], _frames);
                for (int k = 0; k < depth; k++)
                {
                    int slot = (int)(uint)_stacks[_stacksStart + w * _stride + 1 + k] - 1;
                    if (slot == id && Visible(w, k)) search.Push(Frame(w, k));
                }
            }
            return;
        }
        id -= _workers;
        if (id < _workers * _frames)
        {
            int w = id / _frames, k = id % _frames;
            int depth = (int)_stacks[_stacksStart + w * _stride];
            if (k >= depth || !Visible(w, k)) return;
            if (k + 1 < depth && k + 1 < _frames && Visible(w, k + 1)) search.Push(Frame(w, k + 1));
            int node = WaitedNode(w, k);
            if (node >= 0 && !_lock.SeemsGranted(node)) search.Push(Context(node));
            return;
        }
        int n = id - _workers * _frames;
        if (_lock.SeemsWaitingForReaders(n))
        {
            // A reader-writer writer at the head waits for every reader holding its lock.
            if (_ignoresReaders) return;
            for (int slot = 0; slot < _workers; slot++)
            {
                if (slot == n / _nodesPerSlot) continue;
                int used = (int)_slotWords[_slotsStart + slot * CacheLines.Longs + 1];
                for (int m = slot * _nodesPerSlot; m < slot * _nodesPerSlot + used; m++)
                    if (_lock.SeemsSharing(m, n)) { search.Push(slot); break; }
            }
            return;
        }
        long ahead = _lock.AheadOf(n);
        if (ahead == McsLock.AheadUnknown) return;
        if (ahead == McsLock.AheadNone || _lock.SeemsGranted(n)) search.Push(n / _nodesPerSlot);
        else search.Push(Context((int)(ahead - 1)));
    }

    /// <summary>False only for the mutant's hidden frames: another slot's op on this worker.</summary>
    bool Visible(int worker, int depth) =>
        !_ownFramesOnly || (int)(uint)_stacks[_stacksStart + worker * _stride + 1 + depth] - 1 == worker;

    /// <summary>One worker's scratch for depth-first searches: marks stamped per search, so none is cleared.</summary>
    sealed class Search(int nodes)
    {
        readonly int[] _mark = new int[nodes];
        readonly int[] _stack = new int[nodes];
        int _top, _stamp;

        /// <summary>Marks everything reachable from <paramref name="from"/> in one or more edges;
        /// the search's stamp if <paramref name="target"/> is among it, else -1.</summary>
        public int Run(QueueDeadlockDetector graph, int from, int target)
        {
            int stamp = ++_stamp;
            bool found = false;
            _top = 0;
            graph.Successors(from, this);
            while (_top > 0)
            {
                int id = _stack[--_top];
                if (id == target) found = true;
                graph.Successors(id, this);
            }
            return found ? stamp : -1;
        }

        public void Push(int id)
        {
            if (_mark[id] == _stamp) return;
            _mark[id] = _stamp;
            _stack[_top++] = id;
        }

        public bool Reached(int id, int stamp) => _mark[id] == stamp;
    }
}
