using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Contend.Engine.History;
using Contend.Engine.Locks;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.StealDB;

// StealDB's Algorithm 2: an op run, claimed, locked and executed on whichever worker calls it.
internal sealed partial class StealDb
{
    // ---------------------------------------------------------------------------------
    // Algorithm 2, RUNOP(op, tid): op of the transaction in slot s, on behalf of tid, on
    // whichever worker calls it; depth counts the stolen ops it is nested in.

    void RunOp(Slot s, int op, long tid, int depth, int runner)
    {
        if (!Claim(s, op, tid, runner)) return;
        Audit?.Claimed(tid, op);
        switch (TryLock(s, op, tid, runner, out int node, out int predecessor, out int predecessorOp))
        {
            case LockStep.Finished:
                return;
            case LockStep.Queued when predecessor == s.Worker:
                GiveUpWaitOnItself(s, op, predecessorOp, tid, runner);
                return;
            case LockStep.Queued when !s.Ops[op].SharedLock && SharedByOwnOp(s, op) is int reader and >= 0:
                GiveUpWaitOnItself(s, op, reader, tid, runner);
                return;
            case LockStep.Queued when OwnOpOnRow(s, op) is int ahead and >= 0:
                GiveUpWaitOnItself(s, op, ahead, tid, runner);
                return;
            case LockStep.Queued when !_runWithoutLock && !AwaitLock(s, op, node, tid, predecessor, depth, runner):
                return; // WaiterTimeout
        }
        Execute(s, op, tid, runner);
    }

    /// <summary>
    /// The op's node was queued right behind a node of its own transaction: another of its ops
    /// locked the same row, and holds it (or will) until the transaction ends, so this wait
    /// would end only at the threshold, and every retry would meet it again. The spec has one
    /// op per record; the engine refuses such a transaction instead of looping: the wait is
    /// given up at once (WaiterTimeout, enabled at any step of a wait; the node stays queued
    /// for the owner's release), and the transaction fails, naming both ops. Decided here, and
    /// for an op of its own further ahead in the queue too (<see cref="OwnOpOnRow"/>).
    /// </summary>
    void GiveUpWaitOnItself(Slot s, int op, int ahead, long tid, int runner)
    {
        using var step = new TracedStep(Trace?.Gate);
        var program = s.Ctx.Program;
        var o = program.Ops[op];
        s.Ops[op].Lock = Abandoned;
        Fail(s, new InvalidOperationException(
            $"program {program.Name}: op {o.Name} and op {program.Ops[ahead].Name} use the same row of table {_db[o.TableId].Name} (key {o.ResolveKey(s.Ctx.Args, s.Ctx.Results)}); " +
            "StealDB runs a transaction's ops on any worker, each holding its own row's lock, so each op must use a row of its own"));
        Finish(s, op, tid, insertDependents: false, runner);
        Trace?.Add(new(StealDbAction.WaiterTimeout, RunnerTid(runner), tid, op));
    }

    /// <summary>Another op of the transaction that holds the row of write <paramref name="op"/>
    /// shared, -1 if none: the write would wait for its own transaction's reader. Read on the
    /// queued path only; an op that reads the row on another thread at this moment may be
    /// missed, and the detector or the threshold ends that wait instead.</summary>
    /// <summary>Another op of the transaction that has queued on (or holds) the row op
    /// <paramref name="op"/> has just queued on, further ahead than right in front: its lock
    /// context is released only when the transaction ends, so this wait ends only at the
    /// threshold, or never when another transaction's waiter stands between the two (found by
    /// the front door's fuzzer: two transfers from an account to itself stalled every caller
    /// for more than 20 s). The same refusal as the op right behind its own (<see cref="GiveUpWaitOnItself"/>).
    /// An op's row is set by its TryLock before it queues, so an op ahead in this queue has it set.</summary>
    static int OwnOpOnRow(Slot s, int op)
    {
        var table = s.Ops[op].Table;
        int row = s.Ops[op].Row, n = s.Ctx.Program.Ops.Length;
        for (int j = 0; j < n; j++)
        {
            if (j != op && ReferenceEquals(s.Ops[j].Table, table) && s.Ops[j].Row == row) return j;
        }
        return -1;
    }

    static int SharedByOwnOp(Slot s, int op)
    {
        var ops = s.Ctx.Program.Ops;
        for (int j = 0; j < ops.Length; j++)
        {
            if (j != op && s.Ops[j].Lock == Held && s.Ops[j].SharedLock && s.Ops[j].Row == s.Ops[op].Row
                && ops[j].TableId == ops[op].TableId) return j;
        }
        return -1;
    }

    /// <summary>RunOpClaim: Alg. 2 line 1, CAS(&amp;op.tid, tid, null). False: someone else has it.</summary>
    bool Claim(Slot s, int op, long tid, int runner)
    {
        using var step = new TracedStep(Trace?.Gate);
        bool claimed;
        if (_claimTestThenSet)
        {
            // Mutant (MutantClaimCheckThenSet): test op.tid, then set it in a separate store.
            claimed = Volatile.Read(ref s.Ops[op].Tid) == tid;
            if (claimed) Volatile.Write(ref s.Ops[op].Tid, 0);
        }
        else
        {
            claimed = Volatile.Read(ref s.Ops[op].Tid) == tid && Interlocked.CompareExchange(ref s.Ops[op].Tid, 0, tid) == tid;
        }
        Trace?.Add(new(StealDbAction.RunOpClaim, RunnerTid(runner), tid, op, Ok: claimed));
        return claimed;
    }

    /// <summary>How RunOpTryLock left the op: finished without a lock (skipped as doomed, an insert, a
    /// missing row), holding it, or queued behind a predecessor.</summary>
    enum LockStep { Finished, Granted, Queued }

    /// <summary>RunOpTryLock: Alg. 2 lines 3-6 and Alg. 4. A doomed transaction's op is skipped,
    /// not locked; otherwise the op's node is appended, shared if the op only reads, and the old
    /// tail is its predecessor (its worker in <paramref name="predecessor"/>, -1 if none: a
    /// writer waiting for readers, who left the queue when granted).</summary>
    LockStep TryLock(Slot s, int op, long tid, int runner, out int node, out int predecessor, out int predecessorOp)
    {
        using var step = new TracedStep(Trace?.Gate);
        node = Node(s, op);
        predecessor = predecessorOp = -1;
        if (Volatile.Read(ref s.Words.Doom) != 0)
        {
            Finish(s, op, tid, insertDependents: false, runner);
            Trace?.Add(new(StealDbAction.RunOpSkip, RunnerTid(runner), tid, op));
            return LockStep.Finished;
        }
        var ctx = s.Ctx;
        var o = ctx.Program.Ops[op];
        long key;
        try
        {
            key = o.ResolveKey(ctx.Args, ctx.Results);
        }
        catch (Exception e) when (!_failureEscapes)
        {
            Fail(s, e);
            Finish(s, op, tid, insertDependents: true, runner);
            return LockStep.Finished;
        }
        if (o.Mode == AccessMode.Insert)
        {
            // Inserts lock nothing (no row exists yet); the owner applies them at commit.
            s.Ops[op].InsertKey = key;
            Audit?.Executed(tid, op);
            Finish(s, op, tid, insertDependents: true, runner);
            return LockStep.Finished;
        }
        var table = _db[o.TableId];
        int row = table.Find(key);
        if (row < 0)
        {
            Doom(s, AbortReason.KeyNotFound);
            Finish(s, op, tid, insertDependents: true, runner);
            return LockStep.Finished;
        }
        s.Ops[op].Row = row;
        s.Ops[op].Table = table;
        bool shared = !o.Writes(ctx.Args);
        s.Ops[op].SharedLock = shared;
        ref long word = ref table.Word(row);
        long lockKey = ((long)table.Id << 32) | (uint)row;
        bool granted = shared ? _lock.TryLockShared(ref word, node, lockKey) : _lock.TryLockExclusive(ref word, node, lockKey);
        long ahead = granted ? McsLock.AheadNone : _lock.AheadOf(node);
        if (ahead > 0)
        {
            predecessor = (int)((ahead - 1) / TxnContext.MaxOps);
            predecessorOp = (int)((ahead - 1) % TxnContext.MaxOps);
        }
        Trace?.Add(new(StealDbAction.RunOpTryLock, RunnerTid(runner), tid, op,
                       Predecessor: predecessor < 0 ? 0 : _slots[predecessor].Ctx.TxnId, Row: HistoryRecorder.RowKey(table.Id, row)));
        return granted ? LockStep.Granted : LockStep.Queued;
    }

    /// <summary>RunOpExecute: Alg. 2 lines 10-14. The row is ours: read it, save its image, run the body.</summary>
    void Execute(Slot s, int op, long tid, int runner)
    {
        using var step = new TracedStep(Trace?.Gate);
        var ctx = s.Ctx;
        var o = ctx.Program.Ops[op];
        ReadOnlySpan<long> args = ctx.Args;
        var table = s.Ops[op].Table;
        int row = s.Ops[op].Row;
        s.Ops[op].Lock = Held;
        Audit?.Acquired(HistoryRecorder.RowKey(table.Id, row), tid, s.Ops[op].SharedLock);
        if (Hinted(ctx.Program)) Volatile.Write(ref _holders[table.Id].Of(row), s.Worker + 1);
        var data = table.Payload(row);
        s.Ops[op].ReadVersion = Volatile.Read(ref table.Version(row));
        Audit?.Executed(tid, op);
        var runnerSlot = _slots[runner];
        runnerSlot.Words.Executed++;
        if (runner != s.Worker) runnerSlot.Words.Stolen++;
        long result;
        try
        {
            bool write = !s.Ops[op].SharedLock; // TryLock chose the mode from o.Writes(args)
            if (write)
            {
                data.CopyTo(s.Images.AsSpan(op * _imageBytes, data.Length));
                s.Ops[op].Wrote = true;
            }
            result = ctx.Program.RunBody(o, write, data, args, ctx.Results);
        }
        catch (Exception e) when (!_failureEscapes)
        {
            // The image was saved before the body ran: the owner's abort restores the row.
            Fail(s, e);
            result = TxnProgram.UserAbort;
        }
        if (_earlyRelease)
        {
            // Mutant (MutantExecuteAndRelease): the lock goes as soon as the op has run.
            Unlock(s, op, tid);
        }
        bool ok = result != TxnProgram.UserAbort;
        if (ok) ctx.Results[op] = result;
        else Doom(s, AbortReason.User);
        Finish(s, op, tid, insertDependents: true, runner);
        Trace?.Add(new(StealDbAction.RunOpExecute, RunnerTid(runner), tid, op, Ok: ok, Read: s.Ops[op].ReadVersion));
    }

    /// <summary>The transaction a worker runs: how the spec names the worker.</summary>
    long RunnerTid(int runner) => _slots[runner].Ctx.TxnId;

    static void Doom(Slot s, AbortReason reason) => Interlocked.CompareExchange(ref s.Words.Doom, (int)reason, 0);

    /// <summary>An op's key function or body threw: the first exception is kept for the owner to
    /// raise, and the transaction is doomed. Written before the op counts itself finished, so
    /// the owner, which decides only once every op has, sees it.</summary>
    static void Fail(Slot s, Exception e)
    {
        Interlocked.CompareExchange(ref s.Failure, ExceptionDispatchInfo.Capture(e), null);
        Doom(s, AbortReason.User);
    }

    /// <summary>The end of ExecuteOp (decision 1 of proofs/StealDB.md): the finishing thread
    /// inserts the ops it made runnable and publishes <c>&lt;tid, last position&gt;</c>. An op's
    /// outcome needs no word of its own: a failing op has already doomed the transaction. An op
    /// that did not execute (skipped, timed out) inserts nothing but still counts as finished
    /// for its dependents, as the spec's <c>ready</c> counts every op with a status.</summary>
    void Finish(Slot s, int op, long tid, bool insertDependents, int runner)
    {
        var dependents = s.Ctx.Program.Dependents[op];
        if (dependents.Length > 0) Ready(s, dependents, tid, insertDependents);
        // Last: the owner may decide, and reuse the slot, once every op has counted itself.
        if (runner == s.Worker) s.Words.OwnFinished++;
        else Interlocked.Increment(ref s.Words.Finished);
    }

    /// <summary>Counts the finished op off its dependents and, if asked, inserts those it made
    /// runnable. Apart from <see cref="Finish"/>: its stack buffer gave every finish a frame
    /// sized at run time, the ops without dependents (all of YCSB's) included.</summary>
    void Ready(Slot s, int[] dependents, long tid, bool insertDependents)
    {
        var program = s.Ctx.Program;
        Span<int> ready = stackalloc int[dependents.Length];
        int count = 0;
        foreach (int d in dependents)
        {
            // An op with one dependency has one finisher, this thread: its counter needs no
            // atomic step. On the micro-benchmark that is every op but the first, and this
            // loop is on the path every waiter waits on before it can steal.
            if (program.DependencyCount[d] > 1 && Interlocked.Decrement(ref s.Ops[d].DepsLeft) != 0) continue;
            if (insertDependents) ready[count++] = d;
        }
        if (count == 0) return;
        // ExecuteOp appends the whole ready set at once: one reservation of its positions.
        int last = Interlocked.Add(ref s.Words.RqLength, count);
        for (int k = 0; k < count; k++) Volatile.Write(ref s.Rq[last - count + k], ready[k] + 1);
        if (_policy != StealPolicy.None) Publish(s, tid, last);
    }

    static void Publish(Slot s, long tid, int position) =>
        Interlocked.Exchange(ref s.Words.StealContext, Context(tid, position, Interlocked.Increment(ref s.Words.Writes)));
}
