using Contend.Engine.Locks;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// 2PL on reader-writer MCS queue locks (StealDB's vanilla baseline, with readers: specs/MCSLock/RWMCSLock.tla).
/// A read takes its row shared and a write exclusive; readers queued one after another are
/// admitted together, otherwise the queue is FIFO. A waiter looks for a deadlock through itself
/// every few rounds (<see cref="QueueDeadlockDetector"/>); the youngest waiter of a deadlock
/// aborts its transaction. It releases every lock it holds; its node cannot leave the queue
/// (StealDBMutantTimeoutCancels shows an unlinked node breaks mutual exclusion), so it stays
/// queued as "abandoned". By default the aborter then waits for that node to be woken and lets
/// it go at once (proofs/StealDB.md, C2): a writer's never held, so it wakes the node behind it
/// without waiting for readers, and a reader's, counted by whoever woke it, leaves the queue and
/// uncounts itself. That wait ends: the nodes ahead are held by transactions that finish or
/// abort in turn, and the aborter holds nothing. With <see cref="McsOptions.GiveUpQueuedNodes"/>
/// it gives the node up instead (<see cref="McsLock.TryAbandon"/>, RWMCSLock.tla GiveUp), and
/// whoever would have woken it takes it out of the queue, so the aborter waits for nobody; each
/// access then has two nodes and queues the other while one is given up (only if that one is
/// given up too and not yet taken out does the aborter wait, holding nothing). A node woken
/// before its give-up is released as above. The StealDB family has no such option: its waiters
/// also enter when their predecessor's transaction ended (proofs/StealDB.md section 5.1). A wait past
/// <see cref="McsOptions.WaitThreshold"/> rounds aborts too, as the last resort the issue asks to keep.
/// </summary>
/// <remarks>
/// Decision: a write to a row the attempt holds shared is not an upgrade in place. The attempt
/// gives up its share, queues as a writer, and once it holds the row checks that its version is
/// still the one it read, else it aborts (<see cref="AbortReason.Validation"/>). Why: a writer
/// at the head waits for the readers to release, its own share among them, and two attempts
/// upgrading one row would each wait for the other's share; a queue has no place to let an
/// upgrade jump ahead without breaking FIFO order. The version check keeps the attempt
/// serializable: what it read is what it overwrites, as if it had held the row all along.
/// </remarks>
internal sealed class Mcs : LockingProtocol
{
    /// <summary>Modes of an access whose wait gave up: its node is still queued.</summary>
    const byte AbandonedShared = 3, AbandonedExclusive = 4;

    readonly McsLock _lock;
    readonly QueueDeadlockDetector _detector;
    readonly MutantFlag _noDetection;
    /// <summary>Rounds of <see cref="Spin.Once"/> before a waiter gives up. Before the detector,
    /// deadlocks were broken only by this, at 2^8 (docs/measured/StealDB.md, "Deadlock detection").</summary>
    readonly int _waitThreshold;

    public Mcs(ProtocolSetup setup, McsOptions options) : base(setup)
    {
        _waitThreshold = options.WaitThreshold;
        _givingUp = options.GiveUpQueuedNodes;
        _nodesPerAccess = _givingUp ? 2 : 1;
        _noDetection = new(setup.Mutants, TwoPhaseLockingMutants.McsNoDetection);
        _lock = new(setup.Workers * TxnContext.MaxOps * _nodesPerAccess, default, new MutantFlag(setup.Mutants, TwoPhaseLockingMutants.McsReaderBarges), _givingUp);
        _detector = new(_lock, setup.Workers, frames: 1, TxnContext.MaxOps * _nodesPerAccess,
                        ignoresReaders: new MutantFlag(setup.Mutants, TwoPhaseLockingMutants.McsDetectorIgnoresReaders));
    }

    public override string Name => TwoPhaseLockingProtocols.Mcs.Name;

    /// <summary><see cref="McsOptions.GiveUpQueuedNodes"/>.</summary>
    readonly bool _givingUp;
    /// <summary>Queue nodes per access: giving up, two (one given up is its waker's until let go,
    /// and the access queues the other meanwhile); else one.</summary>
    readonly int _nodesPerAccess;

    int Node(TxnContext ctx, LockingState state, int access)
    {
        int first = ctx.Worker * TxnContext.MaxOps + access;
        return _givingUp ? first * 2 + ((McsState)state).Turn[access] : first;
    }

    sealed class McsState : LockingState
    {
        /// <summary>Per access, which of its two nodes it queues next.</summary>
        public readonly byte[] Turn = new byte[TxnContext.MaxOps];
    }

    private protected override LockingState NewState() => _givingUp ? new McsState() : new LockingState();

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason)
    {
        reason = AbortReason.None;
        byte held = state.Mode[access];
        if (held == Exclusive || held == Shared && !exclusive) return true;
        int node = Node(ctx, state, access), row = ctx.AccessRow[access];
        ref long word = ref table.Word(row);
        long key = ((long)table.Id << 32) | (uint)row;
        if (held == Shared)
        {
            // The class remark's decision: give the share up, then queue as a writer.
            _lock.UnlockShared(ref word, node);
            state.Mode[access] = None;
        }
        _detector.Uses(ctx.Worker, (access + 1) * _nodesPerAccess);
        bool granted = exclusive ? _lock.TryLockExclusive(ref word, node, key) : _lock.TryLockShared(ref word, node, key);
        if (!granted)
        {
            // The one frame of the worker's stack: its own transaction's op, waiting.
            _detector.Began(ctx.Worker, ctx.Timestamp);
            _detector.Waits(ctx.Worker, 0, ctx.Worker, node);
            reason = Wait(ctx, ref word, node, exclusive);
            _detector.Stops(ctx.Worker, 0);
            if (reason != AbortReason.None)
            {
                state.Mode[access] = exclusive ? AbandonedExclusive : AbandonedShared;
                return false;
            }
        }
        state.Mode[access] = exclusive ? Exclusive : Shared;
        if (held == Shared && Volatile.Read(ref table.Version(row)) != ctx.AccessVersion[access])
        {
            reason = AbortReason.Validation; // another writer came between the share and the upgrade
            return false;
        }
        return true;
    }

    /// <summary>Waits for the node's grant: None once granted, else why the wait gave up.</summary>
    AbortReason Wait(TxnContext ctx, ref long word, int node, bool exclusive)
    {
        var wait = new SpinWait();
        bool seen = false;
        int threshold = _waitThreshold;
        for (int round = 1; !(exclusive ? _lock.CheckAcquiredExclusive(ref word, node) : _lock.CheckAcquiredShared(ref word, node)); round++)
        {
            if (round == threshold) return AbortReason.WaitTimeout;
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
            byte mode = state.Mode[i];
            if (mode == Exclusive) _lock.UnlockExclusive(ref Db[ctx.AccessTable[i]].Word(ctx.AccessRow[i]), Node(ctx, state, i));
            else if (mode == Shared) _lock.UnlockShared(ref Db[ctx.AccessTable[i]].Word(ctx.AccessRow[i]), Node(ctx, state, i));
            else if (mode is AbandonedShared or AbandonedExclusive) abandoned = i;
            if (mode is not (AbandonedShared or AbandonedExclusive)) state.Mode[i] = None;
        }
        if (abandoned < 0) return; // an attempt waits on at most one lock at a time: its last
        ref long word = ref Db[ctx.AccessTable[abandoned]].Word(ctx.AccessRow[abandoned]);
        int node = Node(ctx, state, abandoned);
        if (_givingUp && _lock.TryAbandon(node))
        {
            // Its waker's now. The access queues its other node next, once that one is back.
            var mcs = (McsState)state;
            mcs.Turn[abandoned] ^= 1;
            int other = Node(ctx, state, abandoned);
            var wait = new SpinWait();
            while (_lock.IsAbandoned(other)) Spin.Once(ref wait);
        }
        else if (state.Mode[abandoned] == AbandonedShared)
        {
            // Woken (first, if giving up): counted; it leaves the queue, then uncounts itself.
            var wait = new SpinWait();
            while (!_lock.CheckAcquiredShared(ref word, node)) Spin.Once(ref wait);
            _lock.UnlockShared(ref word, node);
        }
        else
        {
            // Woken (first, if giving up): the head (HeadGivesUp). It never held, so it leaves
            // without waiting for readers.
            var wait = new SpinWait();
            while (!_lock.CheckAcquired(node)) Spin.Once(ref wait);
            _lock.UnlockExclusive(ref word, node);
        }
        state.Mode[abandoned] = None;
    }
}
