using System.Diagnostics.CodeAnalysis;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Contend.Engine.Durability;
using Contend.Engine.History;
using Contend.Engine.Locks;
using Contend.Engine.Programs;
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
internal sealed partial class StealDb : ITransactionProtocol
{
    // One file per algorithm of the paper: this one the type, its state and Algorithm 1 (the
    // owner's transaction); StealDb.RunOp.cs Algorithm 2 (an op, on whichever worker runs it);
    // StealDb.Steal.cs the lock wait with Algorithm 3 (stealing) inside; StealDb.Layout.cs the
    // per-worker slot and the words other workers read.

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
                ctx.InsertOp[k] = inserts[k];
                ctx.InsertKey[k] = s.Ops[inserts[k]].InsertKey;
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
                // Logged while every lock is held, and before the inserts are revealed (proofs/Durability.md).
                if (ctx.Log is { } log) ctx.CommitEpoch = log.Commit(ctx, _db, new Commits(s, n));
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

    /// <summary>The transaction's rows as the log sees them: every op that holds its lock, written in place.</summary>
    readonly struct Commits(Slot s, int ops) : ICommitSet
    {
        public int Count => ops;
        public Table Table(int i) => s.Ops[i].Table;
        public int Row(int i) => s.Ops[i].Row;
        public bool Holds(int i) => s.Ops[i].Lock == Held;
        public bool Written(int i) => s.Ops[i].Lock == Held && s.Ops[i].Wrote;
        public ReadOnlySpan<byte> After(int i) => s.Ops[i].Table.Payload(s.Ops[i].Row);
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
}
