using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// The MCS queue lock of specs/MCSLock/MCSLock.tla, exclusive mode. The record word is the
/// queue's tail; each waiter spins on its own queue node. Nodes live in one managed array,
/// one cache line each, and are named by index + 1 so that 0 is the empty tail:
/// <code>
///   record word   [ 63 .......... 32 | 31 ............ 0 ]
///                 [        0         | tail node id + 1  ]   0: free, no queue
///   queue node    long[8]: [0] next node id + 1 (0: none), [1] spin flag (1: wait),
///                          [2] ahead: the node queued ahead, for the deadlock detector, [3..7] padding
/// </code>
/// A node belongs to one (worker, access) pair and is reused only after the access
/// released it, which MutantInitKeepsNext shows must start by clearing next (TryLock).
/// </summary>
internal sealed class McsLock
{
    const int NodeLongs = 8, Next = 0, SpinFlag = 1, Ahead = 2;

    /// <summary>Values of a node's ahead word besides a node id + 1.</summary>
    public const long AheadUnknown = 0, AheadNone = -1;

    readonly long[] _nodes;
    readonly MutantFlag _releaseClearsTail;

    public McsLock(int nodes) : this(nodes, default) { }

    internal McsLock(int nodes, MutantFlag releaseClearsTail)
    {
        _nodes = new long[nodes * NodeLongs];
        _releaseClearsTail = releaseClearsTail;
    }

    /// <summary>TRYLOCK: MCSLock.tla InitContext, SwapTail, then EnterFree (true: the
    /// lock is ours) or LinkBehindPred (false: wait with <see cref="CheckAcquired"/>).</summary>
    public bool TryLock(ref long tail, int node) => TryLock(ref tail, node, out _);

    /// <inheritdoc cref="TryLock(ref long, int)"/>
    /// <param name="predecessor">the node queued ahead (id + 1), 0 if none: TRYLOCK's return value, which the
    /// FIFO hand-over check and StealDB's steal both read</param>
    public bool TryLock(ref long tail, int node, out long predecessor)
    {
        int me = node * NodeLongs;
        // InitContext: nobody can reach this node before the swap publishes it.
        Volatile.Write(ref _nodes[me + Next], 0);
        Volatile.Write(ref _nodes[me + SpinFlag], 1);
        // Not in the spec: the ahead word, which only QueueDeadlockDetector reads, by plain
        // loads of a racy snapshot. Plain stores, on the node's own line: the exchange orders
        // the first before the swap, and a reader that sees "unknown" stops there.
        _nodes[me + Ahead] = AheadUnknown;
        // SwapTail: ctx_p = XCHG(lock.tail, lockCtx).
        long pred = predecessor = Interlocked.Exchange(ref tail, node + 1);
        _nodes[me + Ahead] = pred == 0 ? AheadNone : pred;
        if (pred == 0) return true; // EnterFree
        // LinkBehindPred: ctx_p.next = lockCtx.
        Volatile.Write(ref _nodes[(int)(pred - 1) * NodeLongs + Next], node + 1);
        return false;
    }

    /// <summary>CHECKACQUIRED, one look: MCSLock.tla WaiterAcquire once the predecessor cleared our flag.</summary>
    public bool CheckAcquired(int node) => Volatile.Read(ref _nodes[node * NodeLongs + SpinFlag]) == 0;

    /// <summary>The node queued ahead of <paramref name="node"/> at its swap (id + 1),
    /// <see cref="AheadNone"/> if it entered a free lock, <see cref="AheadUnknown"/> while it
    /// is being queued; a plain load, as <see cref="SeemsGranted"/>.</summary>
    public long AheadOf(int node) => _nodes[node * NodeLongs + Ahead];

    /// <summary><see cref="CheckAcquired"/> as a plain load, for a racy snapshot of many words
    /// (<see cref="QueueDeadlockDetector"/>) that needs no ordering among them.</summary>
    public bool SeemsGranted(int node) => _nodes[node * NodeLongs + SpinFlag] == 0;

    /// <summary>True while <paramref name="node"/> is the last in the queue: no successor has swapped the tail.</summary>
    public static bool IsTail(ref long tail, int node) => Volatile.Read(ref tail) == node + 1;

    /// <summary>UNLOCK: HolderCheckNext, then HolderReleaseCas or HolderAwaitLink, then HolderHandover.</summary>
    public void Unlock(ref long tail, int node)
    {
        int me = node * NodeLongs;
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
            // HolderAwaitLink: a successor swapped the tail and is about to link itself.
            var wait = new SpinWait();
            while ((next = Volatile.Read(ref _nodes[me + Next])) == 0) Spin.Once(ref wait);
        }
        // HolderHandover: clear the successor's spin flag.
        Volatile.Write(ref _nodes[(int)(next - 1) * NodeLongs + SpinFlag], 0);
    }
}

/// <summary>
/// 2PL on exclusive MCS queue locks (StealDB's vanilla baseline). A waiter waits in FIFO
/// order and looks for a deadlock through itself every few rounds (<see cref="QueueDeadlockDetector"/>);
/// the youngest waiter of a deadlock aborts its transaction. Its node cannot leave the queue
/// (StealDBMutantTimeoutCancels shows an abortable queue breaks mutual exclusion), so it stays
/// queued as "abandoned": the aborting transaction first releases every lock it holds, then
/// waits for each abandoned node to reach the head and releases it at once (proofs/StealDB.md,
/// C2). That wait ends: the nodes ahead are held by transactions that finish or abort in turn,
/// and the aborter holds nothing. A wait past <see cref="WaitThreshold"/> rounds aborts too,
/// as the last resort the issue asks to keep.
/// </summary>
internal sealed class Mcs : LockingProtocol
{
    /// <summary>Rounds of <see cref="Spin.Once"/> before a waiter gives up. Before the detector,
    /// deadlocks were broken only by this, at 2^8 (docs/measured/StealDB.md, "Deadlock detection").</summary>
    public const int WaitThreshold = 1 << 14;
    const byte Abandoned = 3;

    readonly McsLock _lock;
    readonly QueueDeadlockDetector _detector;
    readonly MutantFlag _noDetection;

    public Mcs(ProtocolSetup setup) : base(setup)
    {
        _noDetection = new(setup.Mutants, TwoPhaseLockingMutants.McsNoDetection);
        _lock = new(setup.Workers * TxnContext.MaxOps, new MutantFlag(setup.Mutants, TwoPhaseLockingMutants.McsReleaseClearTail));
        _detector = new(_lock, setup.Workers, frames: 1, TxnContext.MaxOps);
    }

    public override string Name => TwoPhaseLockingProtocols.Mcs.Name;

    static int Node(TxnContext ctx, int access) => ctx.Worker * TxnContext.MaxOps + access;

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason)
    {
        reason = AbortReason.None;
        if (state.Mode[access] == Exclusive) return true; // reads lock exclusive too: nothing to upgrade
        int node = Node(ctx, access);
        ref long tail = ref table.Word(ctx.AccRow[access]);
        if (!_lock.TryLock(ref tail, node))
        {
            // The one frame of the worker's stack: its own transaction's op, waiting.
            _detector.Began(ctx.Worker, ctx.Timestamp);
            _detector.Waits(ctx.Worker, 0, ctx.Worker, node);
            reason = Wait(ctx, node);
            _detector.Stops(ctx.Worker, 0);
            if (reason != AbortReason.None)
            {
                state.Mode[access] = Abandoned;
                return false;
            }
        }
        state.Mode[access] = Exclusive;
        return true;
    }

    /// <summary>Waits for the node's grant: None once granted, else why the wait gave up.</summary>
    AbortReason Wait(TxnContext ctx, int node)
    {
        var wait = new SpinWait();
        bool seen = false;
        for (int round = 1; !_lock.CheckAcquired(node); round++)
        {
            if (round == WaitThreshold) return AbortReason.WaitTimeout;
            if (ctx.GivingUp) return AbortReason.Deadline;
            if (round % QueueDeadlockDetector.SearchEvery == 0 && !_noDetection)
            {
                // Two searches in a row must agree (the detector's comment).
                bool victim = _detector.IsVictim(ctx.Worker, 0);
                if (victim && seen) return AbortReason.Deadlock;
                seen = victim;
            }
            Spin.Once(ref wait);
        }
        return AbortReason.None;
    }

    protected override void ReleaseAll(TxnContext ctx)
    {
        var state = State(ctx);
        int abandoned = -1;
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (state.Mode[i] == Exclusive) _lock.Unlock(ref Db[ctx.AccTable[i]].Word(ctx.AccRow[i]), Node(ctx, i));
            else if (state.Mode[i] == Abandoned) abandoned = i;
            state.Mode[i] = None;
        }
        if (abandoned < 0) return; // an attempt waits on at most one lock at a time: its last
        var wait = new SpinWait();
        while (!_lock.CheckAcquired(Node(ctx, abandoned))) Spin.Once(ref wait);
        _lock.Unlock(ref Db[ctx.AccTable[abandoned]].Word(ctx.AccRow[abandoned]), Node(ctx, abandoned));
    }
}
