using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.StealDB;

/// <summary>Who may run a waiting transaction's lock holder's ops (StealDB.tla's StealPolicy).</summary>
internal enum StealPolicy
{
    /// <summary>StealDB: a waiter takes its queue predecessor's steal context and hands the rest down.</summary>
    Queue,
    /// <summary>Basic work stealing (Section 2.2): every waiter takes from the lock holder's one word by CAS.</summary>
    Basic,
    /// <summary>Vanilla 2PL over MCS locks: waiters only wait.</summary>
    None,
}

/// <summary>
/// Queue-stealing 2PL: <c>Spec</c> of specs/StealDB/StealDB.tla, argued in proofs/StealDB.md
/// (seed 000, Algorithms 1-4). Each step names the spec action it implements.
///
/// A transaction's ops run in its program's DAG order on whichever worker claims them; the
/// claim is a CAS on the op's tid word (exactly once). An op locks its row with a reader-writer
/// MCS queue lock (one queue node per (worker, op); specs/MCSLock/RWMCSLock.tla), shared if it
/// only reads, else exclusive (StealDB.tla with SharedReads); a waiter that is not granted takes
/// the steal context of the transaction queued ahead of it and runs one of that transaction's
/// ops. A writer that finds only readers holding (they leave the queue once granted) has no
/// transaction ahead to follow: it waits, stealing only what it handed down itself (C3). The
/// steal context is one word per transaction slot:
/// <code>
///   steal context  [ 63 .............. 15 | 14 ....... 8 | 7 ........ 0 ]
///                  [ tid (49 bits)         | rq position  | write count  ]   0: empty
/// </code>
/// The tid is the attempt's <see cref="TxnContext.TxnId"/>, which only grows per worker, so a
/// context, an op's tid word or a queue node naming an ended attempt can never be mistaken for
/// a live one (proofs/StealDB.md section 7): every CAS that claims an op compares the full tid.
/// The write count, bumped per store, makes each stored context distinct, which is what
/// <see cref="StealDbAudit"/> checks "each context is taken once" with. Positions are
/// 1-based (the spec's); tids need 49 bits (2^41 attempts per worker).
///
/// Writes go in place under the exclusive lock with a before-image per op; abort restores them.
/// A transaction must touch each row at most once (the spec's ASSUME): a second lock context
/// on a row its own transaction holds would queue behind itself, or a write wait for its own
/// transaction's share (<see cref="GiveUpWaitOnItself"/>).
///
/// A key function or body that throws is a bug in its program, and its op may be running on
/// another transaction's worker. Decision: that worker catches it, and the op ends as the
/// spec's failing op (RunOpExecute with ok = FALSE, or before its lock, as a missing row
/// does); the exception is handed to the transaction's slot, and the owner raises it after
/// OwnerFinish, once the attempt is undone and every lock released, as the other protocols
/// do. The thief's own transaction goes on. Any op may fail this way, where the spec lets only
/// ops marked mayAbort fail: that is Spec with every op marked so. Its models mark one op, and
/// the argument they check (C4, proofs/StealDB.md section 4.5) is for whichever op aborts.
/// </summary>
[SkipLocalsInit] // the trace's event temporaries, never used in production, were zeroed per call (docs/measured/StealDB.md)
internal sealed class StealDb : ITransactionProtocol
{
    const byte NotLocked = 0, Held = 1, Abandoned = 2;
    const int PositionShift = 8, TidShift = 15;

    readonly Database _db;
    readonly StealDbOptions _options;
    readonly StealPolicy _policy;
    readonly Slot[] _slots;
    readonly McsLock _lock;
    readonly QueueDeadlockDetector _detector;
    readonly int _imageBytes;
    /// <summary>Basic policy only: per table and row, the worker slot whose transaction holds the row's lock, + 1
    /// (of its readers, the last to execute): whom a waiter steals from, a hint that may be stale.</summary>
    readonly HolderHints[]? _holders;
    readonly MutantFlag _readThenClear, _claimTestThenSet, _earlyRelease, _runWithoutLock, _timeoutLeavesQueue, _failureEscapes;

    readonly StealDbAudit? _audit;
    readonly StealDbTrace? _trace;

    /// <summary>Test hook: when set, every claim, take, lock and release is checked against the
    /// spec's invariants. Null, and folded to null by the JIT, where test hooks are off (<see cref="TestHooks"/>).</summary>
    internal StealDbAudit? Audit
    {
        get => TestHooks.Enabled ? _audit : null;
        init => _audit = TestHooks.Attach(value, nameof(Audit));
    }

    /// <summary>Test hook: when set, every step is recorded as the spec action it implements,
    /// for trace validation against the spec (<see cref="StealDbTrace"/>). Null, and folded to
    /// null by the JIT, where test hooks are off: then no step takes the trace's gate, and no
    /// method keeps the finally that would release it.</summary>
    internal StealDbTrace? Trace
    {
        get => TestHooks.Enabled ? _trace : null;
        init => _trace = TestHooks.Attach(value, nameof(Trace));
    }

    public string Name { get; }

    /// <summary>The knobs the protocol was built with.</summary>
    internal StealDbOptions Options => _options;

    public StealDb(ProtocolSetup setup, StealPolicy policy, StealDbOptions options, string name)
    {
        options.Validate(setup.Workers);
        _db = setup.Database;
        _policy = policy;
        _options = options;
        Name = name;
        _imageBytes = (Math.Max(1, _db.Tables.Count == 0 ? 1 : _db.Tables.Max(t => t.PayloadSize)) + 63) & ~63;
        _slots = new Slot[setup.Workers];
        for (int w = 0; w < setup.Workers; w++) _slots[w] = new Slot(w, _imageBytes);
        _lock = new McsLock(setup.Workers * TxnContext.MaxOps, new MutantFlag(setup.Mutants, StealDbMutants.McsReleaseClearTail));
        _detector = new(_lock, setup.Workers, frames: options.MaxNesting + 1, TxnContext.MaxOps,
                        ownFramesOnly: new MutantFlag(setup.Mutants, StealDbMutants.DetectorIgnoresStolenFrames),
                        ignoresReaders: new MutantFlag(setup.Mutants, StealDbMutants.DetectorIgnoresReaders));
        if (policy == StealPolicy.Basic) _holders = _db.Tables.Select(t => new HolderHints(t.Capacity)).ToArray();
        _readThenClear = new(setup.Mutants, StealDbMutants.ReadThenClear);
        _claimTestThenSet = new(setup.Mutants, StealDbMutants.ClaimTestThenSet);
        _earlyRelease = new(setup.Mutants, StealDbMutants.EarlyRelease);
        _runWithoutLock = new(setup.Mutants, StealDbMutants.RunWithoutLock);
        _timeoutLeavesQueue = new(setup.Mutants, StealDbMutants.TimeoutLeavesQueue);
        _failureEscapes = new(setup.Mutants, StealDbMutants.FailureEscapes);
    }

    /// <summary>The name of <see cref="StolenShare"/> among the shares the protocol reports (<see cref="ProtocolReport.Shares"/>).</summary>
    public const string StolenShareName = "stolen_share";

    /// <summary>Ops run by a worker other than their transaction's owner, summed over workers;
    /// read once the workers have stopped.</summary>
    public long StolenOps => _slots.Sum(s => s.Words.Stolen);

    /// <summary>The share of executed ops that a waiter ran for another transaction (the paper's
    /// "25 out of 32 operations are executed by lock waiters"); read once the workers have stopped.</summary>
    public double StolenShare => StolenOps / (double)Math.Max(1, _slots.Sum(s => s.Words.Executed));

    static long Context(long tid, int position, int writes) =>
        (tid << TidShift) | ((long)position << PositionShift) | (byte)writes;
    static long TidOf(long context) => context >>> TidShift;
    static int PositionOf(long context) => (int)(context >> PositionShift) & 0x7F;
    static int WorkerOf(long tid) => (int)(tid & 0xFF);

    // ---------------------------------------------------------------------------------
    // Algorithm 1, RUNTRANSACTION, by the owner's worker.

    public Outcome Run(TxnContext ctx, out AbortReason reason)
    {
        var s = _slots[ctx.Worker];
        Begin(s, ctx);
        long tid = ctx.TxnId;
        var program = ctx.Program;
        int n = program.Ops.Length;
        // One wait for the whole loop, restarted by each op run: a new one each round would
        // spin its shortest round for ever and never yield the core to a descheduled thief.
        var idle = new SpinWait();
        for (int cursor = 0; ;)
        {
            int entry = NextRunnable(s, cursor, tid);
            if (entry > 0)
            {
                cursor++;
                RunOp(s, entry - 1, tid, 0, s.Worker);
                idle.Reset();
                continue;
            }
            if (entry == 0)
            {
                if (s.Words.OwnFinished + Volatile.Read(ref s.Words.Finished) == n) break;
                // OwnerCloseOp: the doomed transaction's ops nobody has claimed are claimed
                // here and skipped, before the slot is reused.
                if (Volatile.Read(ref s.Words.Doom) != 0) CloseUnclaimed(s, tid, cursor);
            }
            Spin.Once(ref idle);
        }
        var outcome = Decide(s, ctx, out reason);
        if (s.Failure is { } failure)
        {
            s.Failure = null;
            failure.Throw();
        }
        return outcome;
    }

    /// <summary>OwnerRunNext: Alg. 1 lines 1-2. The op at the cursor's position of the runnable
    /// queue, + 1; 0 when the queue holds no more; -1 while a finisher has reserved the position
    /// and not yet written it (one step to wait out).</summary>
    int NextRunnable(Slot s, int cursor, long tid)
    {
        using var step = new TracedStep(Trace?.Gate);
        if (cursor >= Volatile.Read(ref s.Words.RqLength)) return 0;
        int entry = Volatile.Read(ref s.Rq[cursor]);
        if (entry == 0) return -1;
        Trace?.Add(new(StealDbAction.OwnerRunNext, tid, tid, entry - 1));
        return entry;
    }

    void Begin(Slot s, TxnContext ctx)
    {
        ctx.BeginAttempt();
        var program = ctx.Program;
        int n = program.Ops.Length;
        Debug.Assert(n <= TxnContext.MaxOps, $"program {program.Name}: {n} ops, more than {TxnContext.MaxOps}");
        s.Ctx = ctx;
        _detector.Began(s.Worker, ctx.Timestamp);
        _detector.Uses(s.Worker, n);
        for (int i = 0; i < n; i++)
        {
            s.Ops[i].Lock = NotLocked;
            s.Ops[i].Wrote = false;
            s.Ops[i].Table = null!; // set by the op's TryLock: OwnOpOnRow reads it
            if (program.DependencyCount[i] > 1) Volatile.Write(ref s.Ops[i].DepsLeft, program.DependencyCount[i]);
            Volatile.Write(ref s.Rq[i], 0);
        }
        var roots = program.Roots;
        for (int k = 0; k < roots.Length; k++) Volatile.Write(ref s.Rq[k], roots[k] + 1);
        s.Words.Finished = 0;
        s.Words.OwnFinished = 0;
        s.Words.Doom = 0;
        Volatile.Write(ref s.Words.RqLength, roots.Length);
        // The roots are not published (StealDB.tla Roots): only ops made runnable later are.
        // An empty word is not written: a waiter of the last attempt may have its line.
        if (Volatile.Read(ref s.Words.StealContext) != 0) Interlocked.Exchange(ref s.Words.StealContext, 0);
        // Init: op.tid = tid for every op. A stale context names an older tid, which no op
        // word holds again, so its CAS fails whichever of these stores it sees.
        for (int i = 0; i < n; i++) Volatile.Write(ref s.Ops[i].Tid, ctx.TxnId);
        Volatile.Write(ref s.Words.Running, ctx.TxnId);
    }

    /// <summary>OwnerCloseOp, then RunOpClaim and RunOpTryLock's doomed branch, per op nobody
    /// claimed. Stops when a finisher has inserted ops meanwhile: the owner runs (and skips) those
    /// from the runnable queue first, as OwnerCloseOp waits for the cursor to pass its end.</summary>
    void CloseUnclaimed(Slot s, long tid, int cursor)
    {
        int n = s.Ctx.Program.Ops.Length;
        for (int i = 0; i < n; i++)
        {
            using var step = new TracedStep(Trace?.Gate);
            if (cursor < Volatile.Read(ref s.Words.RqLength)) return;
            if (Volatile.Read(ref s.Ops[i].Tid) != tid || Interlocked.CompareExchange(ref s.Ops[i].Tid, 0, tid) != tid) continue;
            Finish(s, i, tid, insertDependents: false, s.Worker);
            Trace?.Add(new(StealDbAction.OwnerCloseOp, tid, tid, i));
            Trace?.Add(new(StealDbAction.RunOpClaim, tid, tid, i, Ok: true));
            Trace?.Add(new(StealDbAction.RunOpSkip, tid, tid, i));
        }
    }

    /// <summary>OwnerDecide, OwnerRelease and OwnerFinish: Alg. 1 lines 5-14.</summary>
    Outcome Decide(Slot s, TxnContext ctx, out AbortReason reason)
    {
        bool committed = Install(s, ctx, out reason);
        Release(s, ctx.TxnId, committed);
        return committed ? Outcome.Committed : AbortReasons.OutcomeOf(reason);
    }

    /// <summary>OwnerDecide: commit, recording the history, or abort, restoring the before-images
    /// of the rows written in place. True when committed. A committed row's version is installed
    /// by <see cref="Release"/>, under its lock, which hides the version until the unlock.
    /// The participant's steps, as the op-by-op protocols take them: the prepare is the doom
    /// word's vote and the inserts' (every op has ended, so the attempt waits for nothing else);
    /// an insert body that throws is the owner's failure, raised once the release is done.</summary>
    bool Install(Slot s, TxnContext ctx, out AbortReason reason)
    {
        var program = ctx.Program;
        int n = program.Ops.Length;
        using var step = new TracedStep(Trace?.Gate);
        reason = (AbortReason)Volatile.Read(ref s.Words.Doom);
        if (reason == AbortReason.None)
        {
            Audit?.Committing(ctx.TxnId, n);
            // The program's list of its inserts, where looking at every op's mode loaded each
            // op's object on every commit of programs that insert nothing.
            var inserts = program.InsertsInOrder;
            ctx.InsertCount = inserts.Length;
            for (int k = 0; k < inserts.Length; k++)
            {
                ctx.InsOp[k] = inserts[k];
                ctx.InsKey[k] = s.Ops[inserts[k]].InsertKey;
            }
            try
            {
                reason = InsertSet.Prepare(_db, ctx, versionInWord: false).Reason;
            }
            catch (Exception e) when (!_failureEscapes)
            {
                Fail(s, e);
                reason = AbortReason.User;
            }
            if (reason == AbortReason.None)
            {
                var history = ctx.Recorder is null ? null : new List<Access>(n);
                InsertSet.Commit(_db, ctx, history);
                if (history is not null)
                {
                    for (int i = 0; i < n; i++)
                    {
                        if (s.Ops[i].Lock != Held) continue;
                        long rowKey = HistoryRecorder.RowKey(s.Ops[i].Table.Id, s.Ops[i].Row);
                        history.Add(new Access(rowKey, s.Ops[i].ReadVersion, s.Ops[i].Wrote));
                    }
                    ctx.Recorder!.Commit(ctx, history);
                }
                Trace?.Add(new(StealDbAction.OwnerDecide, ctx.TxnId, Ok: true));
                return true;
            }
            InsertSet.Abort(_db, ctx);
        }
        for (int i = n - 1; i >= 0; i--)
        {
            if (s.Ops[i].Lock == Held && s.Ops[i].Wrote)
            {
                var table = s.Ops[i].Table;
                s.Images.AsSpan(i * _imageBytes, table.PayloadSize).CopyTo(table.Payload(s.Ops[i].Row));
            }
        }
        Trace?.Add(new(StealDbAction.OwnerDecide, ctx.TxnId, Ok: false));
        return false;
    }

    /// <summary>OwnerRelease: unlock every held node, then each abandoned node once it is granted
    /// (C2: a node cannot leave an MCS queue). Polling every abandoned node, not one at a
    /// time, matters: two aborting transactions may each have one abandoned behind the other's.
    /// Then OwnerFinish: the transaction stops running only after all of it.
    ///
    /// The first held lock (the first op's, where a chain of waiters forms) goes at once, with its
    /// version. Every other committed version is then stored before any other unlock: each store
    /// fetches its row's line for writing, and plain stores issued back to back fetch their lines
    /// together, where a store just before each unlock's CAS waited for one line at a time. A
    /// stolen op's row was last written on the thief's core, and that CAS was the release's
    /// costliest instruction; batched, StealDB ran about 1.07x at one hot record
    /// (docs/measured/StealDB.md, "The release's stores batched").</summary>
    void Release(Slot s, long tid, bool committed)
    {
        var program = s.Ctx.Program;
        int n = program.Ops.Length, abandoned = 0, first = 0;
        while (first < n && s.Ops[first].Lock != Held) first++;
        if (first < n)
        {
            if (committed) InstallVersion(s, first, tid);
            Unlock(s, first, tid);
            for (int i = first + 1; committed && i < n; i++)
            {
                if (s.Ops[i].Lock == Held) InstallVersion(s, i, tid);
            }
        }
        for (int i = 0; i < n; i++)
        {
            if (s.Ops[i].Lock == Held)
            {
                Unlock(s, i, tid);
            }
            else if (s.Ops[i].Lock == Abandoned)
            {
                if (_timeoutLeavesQueue)
                {
                    // Mutant (MutantTimeoutCancelsContext): the abandoned node leaves at once,
                    // handing the lock to its successor while the holder ahead still holds it.
                    Unlock(s, i, tid, audited: false);
                }
                else abandoned++;
            }
        }
        var wait = new SpinWait();
        while (abandoned > 0)
        {
            for (int i = 0; i < n; i++)
            {
                if (s.Ops[i].Lock != Abandoned) continue;
                using var step = new TracedStep(Trace?.Gate);
                if (!Granted(s, i, Node(s, i), ref RowWord(s, i))) continue;
                Unlock(s, i, tid, audited: false);
                abandoned--;
            }
            if (abandoned > 0) Spin.Once(ref wait);
        }
        using (new TracedStep(Trace?.Gate))
        {
            Volatile.Write(ref s.Words.Running, 0);
            Trace?.Add(new(StealDbAction.OwnerFinish, tid));
        }
    }

    /// <summary>CHECKACQUIRED of the op's node in its mode, one look: a reader's woken, counted and
    /// out of the queue; a writer's woken and with no reader holding. The wait loop asks it, and
    /// so does the release of an abandoned node (OwnerRelease releases a context once granted;
    /// Mcs lets an abandoned writer go once woken, without waiting for readers, which is safe
    /// too, since only counted readers hold while it is the head, but is not a step of
    /// StealDB.tla, whose traces check this one).</summary>
    bool Granted(Slot s, int op, int node, ref long word) =>
        s.Ops[op].SharedLock ? _lock.CheckAcquiredShared(ref word, node) : _lock.CheckAcquiredExclusive(ref word, node);

    ref long RowWord(Slot s, int op) => ref s.Ops[op].Table.Word(s.Ops[op].Row);

    /// <summary>A committed op's version, if it wrote its row; stored while the row is still locked.</summary>
    void InstallVersion(Slot s, int op, long tid)
    {
        if (s.Ops[op].Wrote) Volatile.Write(ref s.Ops[op].Table.Version(s.Ops[op].Row), tid);
    }

    /// <summary>OwnerRelease of one lock context. An abandoned one (a waiter gave up on it) was
    /// never used, so the audit has nothing to check.</summary>
    void Unlock(Slot s, int op, long tid, bool audited = true)
    {
        using var step = new TracedStep(Trace?.Gate);
        var table = s.Ops[op].Table;
        long rowKey = HistoryRecorder.RowKey(table.Id, s.Ops[op].Row);
        if (audited) Audit?.Released(rowKey, tid);
        // Only if it still names us: readers share a row, and the hint names the last to execute.
        if (audited && Hinted(s.Ctx.Program)) Interlocked.CompareExchange(ref _holders[table.Id].Of(s.Ops[op].Row), 0, s.Worker + 1);
        if (s.Ops[op].SharedLock) _lock.UnlockShared(ref table.Word(s.Ops[op].Row), Node(s, op));
        else _lock.UnlockExclusive(ref table.Word(s.Ops[op].Row), Node(s, op));
        s.Ops[op].Lock = NotLocked;
        Trace?.Add(new(StealDbAction.OwnerRelease, tid, Row: rowKey));
    }

    static int Node(Slot s, int op) => s.Worker * TxnContext.MaxOps + op;

    /// <summary>Whether the program's rows get holder hints: under the basic policy, and only if
    /// some op depends on another. A program of independent ops has every op a root, and roots
    /// are never published, so its transaction's word stays empty and a waiter that found it
    /// through a hint would take nothing, as it takes nothing from no hint. Leaving such rows'
    /// hints alone saves two writes per op to lines the other workers read (on the hot set's
    /// YCSB programs, docs/measured/StealDB.md, "Hints only where something can be published").</summary>
    [MemberNotNullWhen(true, nameof(_holders))]
    bool Hinted(TxnProgram program) => _holders is not null && program.Roots.Length < program.Ops.Length;

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

    /// <summary>One worker's transaction state that other workers reach: the spec's per-transaction
    /// variables for the attempt the worker is running.</summary>
    sealed class Slot(int worker, int imageBytes)
    {
        public readonly int Worker = worker;
        public TxnContext Ctx = null!;
        /// <summary>The exception an op of the running attempt threw, for the owner to raise;
        /// written at most once an attempt, so it may sit beside the references a steal reads.
        /// The owner clears it as it raises it, so every attempt begins with none.</summary>
        public ExceptionDispatchInfo? Failure;
        public SlotWords Words;
        /// <summary>Per op, a line's 64 bytes: the owner runs ops from the front of the runnable
        /// queue while a waiter runs them from the back, and neither should invalidate the other's.
        /// The array is not line-aligned, so each op shares a line with a neighbour at one end;
        /// aligned (<see cref="CacheLines"/>), StealDB ran no faster (docs/measured/StealDB.md).</summary>
        public readonly OpLine[] Ops = new OpLine[TxnContext.MaxOps];
        /// <summary>rq: op index + 1 per position, 0 while a position is reserved but unwritten.</summary>
        public readonly int[] Rq = new int[TxnContext.MaxOps];
        /// <summary>Before-images, one region of a whole number of cache lines per op.</summary>
        public readonly byte[] Images = new byte[TxnContext.MaxOps * imageBytes];
    }

    /// <summary>One op's words. Everything but the claim word and the dependency counter is
    /// written by the thread that runs the op and read by the owner once the op is counted finished.</summary>
    [StructLayout(LayoutKind.Explicit, Size = 64)]
    struct OpLine
    {
        /// <summary>opTid: the attempt's tid until claimed, then 0.</summary>
        [FieldOffset(0)] public long Tid;
        [FieldOffset(8)] public long ReadVersion;
        [FieldOffset(16)] public long InsertKey;
        [FieldOffset(24)] public int Row;
        /// <summary>Dependencies not yet finished; kept only for an op with more than one, since
        /// an op with one has a single finisher, which needs no count (<see cref="Finish"/>).</summary>
        [FieldOffset(28)] public int DepsLeft;
        [FieldOffset(32)] public byte Lock;
        [FieldOffset(33)] public bool Wrote;
        /// <summary>The op's node is a reader's (the op only reads its row).</summary>
        [FieldOffset(34)] public bool SharedLock;
        /// <summary>The row's table, once the row is found: what the release and the undo use,
        /// where looking it up again from the program took six dependent loads an op, each time
        /// (docs/measured/StealDB.md, "Frames without zeroing"). In the op's line, not an array
        /// of its own: the thread that runs the op writes it, as it writes the row.</summary>
        [FieldOffset(40)] public Table Table;
    }

    /// <summary>The slot's words that change while it runs, in groups by who writes them and
    /// when, no two groups on one cache line. A steal reads the slot's references
    /// (<see cref="Slot.Ctx"/>, its arrays) and takes its steal context while the slot's own
    /// worker counts every op it runs: where the runtime laid the counters out beside either,
    /// each op and each steal moved that line between the cores, which cost StealDB 6-8% at one
    /// hot record (docs/measured/StealDB.md). The struct sits at whatever offset mod 64 the
    /// slot's address gives it, so groups a line apart could still share one: each group is
    /// under 64 bytes and starts 128 after the last, so that any two words of different groups,
    /// the first word and the struct's start, and the last word and its end, are 64 bytes apart
    /// or more (StealDbLayoutTests).</summary>
    [StructLayout(LayoutKind.Explicit, Size = 896)]
    internal struct SlotWords
    {
        /// <summary>Ops the owner's own thread finished; the other workers count theirs in <see cref="Finished"/>.</summary>
        [FieldOffset(128)] public int OwnFinished;
        /// <summary>Ops this worker executed, and how many of them were other transactions';
        /// like <see cref="OwnFinished"/>, written by this slot's worker alone.</summary>
        [FieldOffset(136)] public long Executed;
        [FieldOffset(144)] public long Stolen;
        [FieldOffset(256)] public long StealContext;
        /// <summary>Bumped by whoever publishes into <see cref="StealContext"/>, just before it.</summary>
        [FieldOffset(264)] public int Writes;
        [FieldOffset(384)] public long Running;
        [FieldOffset(512)] public int RqLength;
        /// <summary>Ops finished by workers other than the owner.</summary>
        [FieldOffset(640)] public int Finished;
        [FieldOffset(768)] public int Doom;
    }

    /// <summary>The basic policy's holder hints of one table, one int per row, the rows spread
    /// over up to <see cref="MostGroups"/> groups of at least a cache line each: row r is in group
    /// r mod the group count. Dense (row r at index r), sixteen rows shared a line, and every
    /// worker wrote it on every lock and release of any of them: the hot set's 16 rows were one
    /// line between the cores (docs/measured/StealDB.md). Spread, two rows less than the group
    /// count apart never share a line, and a table of more rows than that takes the room dense
    /// hints took.</summary>
    internal sealed class HolderHints
    {
        const int MostGroups = 4096, IntsPerLine = CacheLines.Bytes / sizeof(int);
        readonly int[] _hints;
        readonly int _rows, _groupMask, _groupShift, _groupWidth;

        public HolderHints(int rows)
        {
            _rows = rows;
            int groups = (int)Math.Min(BitOperations.RoundUpToPowerOf2((uint)Math.Max(rows, 1)), MostGroups);
            _groupMask = groups - 1;
            _groupShift = BitOperations.Log2((uint)groups);
            _groupWidth = Math.Max(IntsPerLine, (rows + groups - 1) / groups);
            _hints = new int[groups * _groupWidth];
        }

        /// <summary>Row <paramref name="row"/>'s hint.</summary>
        public ref int Of(int row)
        {
            Debug.Assert((uint)row < (uint)_rows, $"holder hint of row {row} outside the table's {_rows} rows");
            return ref _hints[(row & _groupMask) * _groupWidth + (row >> _groupShift)];
        }
    }
}
