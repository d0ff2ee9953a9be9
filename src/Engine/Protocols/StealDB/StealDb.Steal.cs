using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using Contend.Engine.History;
using Contend.Engine.Locks;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.StealDB;

// StealDB's wait for a lock, with Algorithm 3 (stealing) inside it.
internal sealed partial class StealDb
{
    // ---------------------------------------------------------------------------------
    // The wait loop of Alg. 2 lines 7-9, with Algorithm 3 inside.

    /// <summary>Waits until the op's node is granted (WaiterProceed: true) or the wait has been
    /// idle for the threshold (WaiterTimeout: false), stealing meanwhile. s is the slot of the
    /// op's transaction, whose word the queue policy hands contexts down through;
    /// <paramref name="predecessorWorker"/> is -1 when no node was queued ahead.</summary>
    bool AwaitLock(Slot s, int op, int node, long tid, int predecessorWorker, int depth, int runner)
    {
        _detector.Waits(runner, depth, s.Worker, node);
        return AwaitGrant(s, op, node, tid, predecessorWorker, depth, runner);
    }

    /// <summary>The loop of <see cref="AwaitLock"/>. Every <see cref="QueueDeadlockDetector.SearchEvery"/> idle rounds it
    /// searches the waits-for graph; found the victim of a deadlock, it searches again in the
    /// next round's step, and if the cycle is still there the wait gives up as a timed-out one
    /// does (StealDBDeadlock.tla's DetectorAbort: WaiterTimeout with a cycle for guard, which
    /// trace validation checks in the spec's state).</summary>
    bool AwaitGrant(Slot s, int op, int node, long tid, int predecessorWorker, int depth, int runner)
    {
        var wait = new SpinWait();
        ref long tail = ref RowWord(s, op);
        bool suspect = false;
        for (int idle = 0; ;)
        {
            long context = 0;
            int stolen = -1;
            using (new TracedStep(Trace?.Gate))
            {
                // WaiterProceed's first exit only, as StealDB.tla has it with SharedReads: "the
                // predecessor no longer runs" does not mean granted when readers hold ahead
                // (StealDBMutantProceedWhenPredEnds).
                if (Granted(s, op, node, ref tail))
                {
                    _detector.Stops(runner, depth);
                    Trace?.Add(new(StealDbAction.WaiterProceed, RunnerTid(runner), tid, op));
                    return true;
                }
                // The second search, in the step that gives the wait up: a cycle the first found
                // must still be there when the victim leaves it (DetectorAbort's guard).
                bool deadlocked = suspect && _detector.IsVictim(runner, depth);
                if (deadlocked) Audit?.Victim(_detector.CycleThroughStolenFrame(runner, depth));
                // The transaction's deadline or its caller's cancellation gives the wait up
                // too: WaiterTimeout is enabled at any step of a wait, not at a threshold only.
                var reason = deadlocked ? AbortReason.Deadlock
                           : idle >= _options.WaitThreshold ? AbortReason.WaitTimeout
                           : s.Ctx.GivingUp ? AbortReason.Deadline : AbortReason.None;
                if (reason != AbortReason.None)
                {
                    // WaiterTimeout (C2): the node stays queued; the owner releases it at the head.
                    // The frame stops waiting in this step, as in the spec: a search after it
                    // must not find a cycle through a wait already given up (trace validation
                    // caught a DetectorAbort that did, the frame cleared only after the step).
                    _detector.Stops(runner, depth);
                    s.Ops[op].Lock = Abandoned;
                    Doom(s, reason);
                    Finish(s, op, tid, insertDependents: false, runner);
                    Trace?.Add(new(reason == AbortReason.Deadlock ? StealDbAction.DetectorAbort : StealDbAction.WaiterTimeout,
                                   RunnerTid(runner), tid, op));
                    return false;
                }
                if (depth < _options.MaxNesting)
                {
                    if (_policy == StealPolicy.Queue)
                        context = TakeQueue(s, node, ref tail, predecessorWorker < 0 ? null : _slots[predecessorWorker], runner);
                    else if (_policy == StealPolicy.Basic) stolen = TakeBasic(s, op, runner, out context);
                }
            }
            if (_policy == StealPolicy.Queue && context != 0) stolen = RunStolen(s, context, runner);
            if (stolen >= 0)
            {
                long owner = TidOf(context);
                RunOp(_slots[WorkerOf(owner)], stolen, owner, depth + 1, runner);
                continue;
            }
            if (++idle % QueueDeadlockDetector.SearchEvery == 0)
            {
                suspect = _detector.IsVictim(runner, depth);
            }
            Spin.Once(ref wait);
        }
    }

    /// <summary>Algorithm 3, STEALOP(T, Tp) lines 1-5 with C1 and C3: the context taken, 0 if none.
    /// Between the caller's failed lock check and the exchange the predecessor may end and its
    /// worker publish for its next transaction; the context taken then names a live transaction
    /// that is not the predecessor. Outside Spec, not unsafe: its op is claimed by CAS on the full
    /// tid and locked like any other (proofs/StealDB.md section 7).</summary>
    long TakeQueue(Slot s, int node, ref long tail, Slot? predecessor, int runner)
    {
        long context;
        if (predecessor is not null)
        {
            if (_readThenClear)
            {
                // Mutant (MutantStealTakeNonAtomic): Alg. 3 as written, line 1 reads, line 5 clears.
                context = Volatile.Read(ref predecessor.Words.StealContext);
                if (context != 0) Volatile.Write(ref predecessor.Words.StealContext, 0);
            }
            else
            {
                // WaiterStealSwap (C1): lines 1-5 as one exchange with the empty context. An
                // empty word is left alone: swapping it for itself is the same step, and the
                // exchange would take the predecessor's line from its core on every round.
                context = Volatile.Read(ref predecessor.Words.StealContext) == 0 ? 0
                        : Interlocked.Exchange(ref predecessor.Words.StealContext, 0);
            }
            if (context != 0)
            {
                Audit?.Taken(predecessor.Worker, context);
                Trace?.Add(new(StealDbAction.WaiterStealSwap, RunnerTid(runner), From: predecessor.Ctx.TxnId,
                               Token: (TidOf(context), PositionOf(context))));
                return context;
            }
        }
        if (!McsLock.IsTail(ref tail, node)) return 0;
        // WaiterStealBack (C3): with no successor queued, nobody else will take what we handed down.
        context = Volatile.Read(ref s.Words.StealContext) == 0 ? 0 : Interlocked.Exchange(ref s.Words.StealContext, 0);
        if (context == 0) return 0;
        Audit?.Taken(s.Worker, context);
        Trace?.Add(new(StealDbAction.WaiterStealBack, RunnerTid(runner), Token: (TidOf(context), PositionOf(context))));
        return context;
    }

    /// <summary>WaiterStealRun: Alg. 3 lines 6-11. If the context's transaction still runs, hand
    /// <c>&lt;tid, position - 1&gt;</c> down through s's word and return the op to run; else -1.</summary>
    int RunStolen(Slot s, long context, int runner)
    {
        using var step = new TracedStep(Trace?.Gate);
        long tid = TidOf(context);
        int position = PositionOf(context);
        var owner = _slots[WorkerOf(tid)];
        if (Volatile.Read(ref owner.Words.Running) != tid)
        {
            Trace?.Add(new(StealDbAction.WaiterStealRun, RunnerTid(runner), Ok: false));
            return -1;
        }
        if (position > 1) Publish(s, tid, position - 1);
        int entry = Volatile.Read(ref owner.Rq[position - 1]);
        // Reserved, not yet written: the owner will run it. Not with a trace, whose steps are atomic.
        Debug.Assert(entry != 0 || Trace is null, "a published position of the runnable queue is unwritten in a traced run");
        if (entry == 0) return -1;
        Trace?.Add(new(StealDbAction.WaiterStealRun, RunnerTid(runner), tid, entry - 1, Ok: true));
        return entry - 1;
    }

    /// <summary>WaiterStealBasic: take the holder's last published op by CAS on its word, and
    /// return it (the context in <paramref name="context"/>); -1 if there is none to take.</summary>
    int TakeBasic(Slot s, int op, int runner, out long context)
    {
        int holder = Volatile.Read(ref _holders![s.Ops[op].Table.Id].Of(s.Ops[op].Row)) - 1;
        context = 0;
        if (holder < 0) return -1;
        var h = _slots[holder];
        long seen = Volatile.Read(ref h.Words.StealContext);
        if (seen == 0) return -1;
        long tid = TidOf(seen);
        int position = PositionOf(seen);
        long next = position > 1 ? Context(tid, position - 1, Interlocked.Increment(ref h.Words.Writes)) : 0;
        if (Interlocked.CompareExchange(ref h.Words.StealContext, next, seen) != seen) return -1;
        Audit?.Taken(h.Worker, seen);
        if (Volatile.Read(ref h.Words.Running) != tid) return -1;
        int entry = Volatile.Read(ref h.Rq[position - 1]);
        Debug.Assert(entry != 0 || Trace is null, "a published position of the runnable queue is unwritten in a traced run");
        if (entry == 0) return -1;
        context = seen;
        Trace?.Add(new(StealDbAction.WaiterStealBasic, RunnerTid(runner), tid, entry - 1, Token: (tid, position)));
        return entry - 1;
    }
}
