using Contend.Engine.Durability;
using Contend.Engine.History;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Silo;

/// <summary>
/// Silo's optimistic commit (Tu et al., SOSP 2013), without epochs: ops run on private
/// copies taken by a stable read; commit locks the write set in one global order (so two
/// committers never wait on each other in a cycle), validates that every row read still
/// has the version read and is not locked by another, installs, and unlocks by writing
/// the new version.
/// <code>
///   record word   63   62 ........................................... 0
///                [ L ][ version: id of the transaction that installed it ]
///   L = 1 while a committer holds the row. The version field is the row's version
///   word too (Table.Version), kept equal so the history reads one place for every protocol.
/// </code>
/// Decision: Silo's TIDs are ordered (epoch, sequence) so that they also give a serial order
/// for recovery. Here a version is the writer's attempt id, unique but not ordered: validation
/// needs only equality, and the engine does no logging.
/// </summary>
internal sealed class SiloOcc(ProtocolSetup setup) : OpByOpProtocol(setup)
{
    const long LockBit = 1L << 63;
    const byte InWriteSet = SiloState.InWriteSet, LockedByMe = SiloState.LockedByMe;

    internal static readonly ProtocolDescriptor Descriptor = new("Silo", "optimistic: read versions, lock writes in order, validate, install",
        ProtocolKind.PerTransaction, null, s => new SiloOcc(s), mutants: typeof(SiloMutants));

    public override string Name => Descriptor.Name;

    /// <summary>ReactDB's twin <see cref="ReactDB.ReactDbMutants.ReadIgnoresLocks"/>, in the step it breaks.</summary>
    readonly MutantFlag _readIgnoresLocks = new(setup.Mutants, ReactDB.ReactDbMutants.ReadIgnoresLocks);
    readonly MutantFlag _skipValidation = new(setup.Mutants, SiloMutants.SkipValidation);

    /// <summary>The worker's Silo state on <paramref name="ctx"/>, made on its first use.</summary>
    static SiloState State(TxnContext ctx)
    {
        if (ctx.ProtocolState is SiloState state) return state;
        System.Diagnostics.Debug.Assert(ctx.ProtocolState is null, $"worker {ctx.Worker}: its context carries another protocol's state ({ctx.ProtocolState?.GetType().Name})");
        ctx.ProtocolState = state = new SiloState(ctx.AccessCapacity);
        return state;
    }

    protected override bool Access(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason)
    {
        reason = AbortReason.None;
        var state = State(ctx);
        if (Revisit(ctx, state, table, row, write, out data, out access)) return true;
        data = ctx.Reserve(table.PayloadSize, out int offset);
        access = AddAccess(ctx, state, table, row, write, offset, StableRead(table, row, data));
        return true;
    }

    /// <summary>True, with its private copy, when the attempt has the row already (marking it
    /// written when <paramref name="write"/>).</summary>
    static bool Revisit(TxnContext ctx, SiloState state, Table table, int row, bool write, out Span<byte> data, out int access)
    {
        access = ctx.FindAccess(table.Id, row);
        if (access < 0)
        {
            data = default;
            return false;
        }
        data = ctx.Buffer.AsSpan(state.Copy[access], table.PayloadSize);
        if (write) state.Mode[access] = InWriteSet;
        return true;
    }

    static int AddAccess(TxnContext ctx, SiloState state, Table table, int row, bool write, int copy, long version)
    {
        int access = ctx.AddAccess(table.Id, row);
        state.Copy[access] = copy;
        state.Mode[access] = write ? InWriteSet : SiloState.ReadOnly;
        state.Blind[access] = false;
        ctx.AccessVersion[access] = version;
        return access;
    }

    /// <summary>Copies the row and returns the version it had, unlocked, both before and after the copy.</summary>
    static long StableRead(Table table, int row, Span<byte> copy)
    {
        var wait = new SpinWait();
        while (true)
        {
            if (TryStableRead(table, row, copy, out long version)) return version;
            Spin.Once(ref wait);
        }
    }

    /// <summary>One try of <see cref="StableRead"/>: false when the row was locked, or changed under the copy.</summary>
    static bool TryStableRead(Table table, int row, Span<byte> copy, out long version)
    {
        ref long word = ref table.Word(row);
        version = Volatile.Read(ref word);
        if ((version & LockBit) != 0) return false;
        table.Payload(row).CopyTo(copy);
        Interlocked.MemoryBarrier(); // the copy's loads complete before the word is read again
        return Volatile.Read(ref word) == version;
    }

    internal override bool RunsAcrossPartitions => true;

    /// <summary>As <see cref="Access"/>; a row locked by a committer is a wait, since its commit
    /// may hang on messages still to come.</summary>
    private protected override OpStep TryAccess(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason)
    {
        reason = AbortReason.None;
        var state = State(ctx);
        if (Revisit(ctx, state, table, row, write, out data, out access)) return OpStep.Done;
        data = ctx.Reserve(table.PayloadSize, out int offset);
        if (!TryStableRead(table, row, data, out long version))
        {
            ctx.BufferUsed = offset;
            return OpStep.Wait;
        }
        access = AddAccess(ctx, state, table, row, write, offset, version);
        return OpStep.Done;
    }

    /// <summary>Across partitions, the write set is locked (and inserted keys claimed) without waiting: partitions lock their
    /// shares in parallel, each in its own order, so two transactions could each hold a row the
    /// other waits for on another partition, with nothing to break the cycle (Deneva's
    /// distributed Silo does the same). A held lock is a no vote.</summary>
    private protected override Vote PrepareWithoutWaiting(TxnContext ctx) => Prepare(ctx, waitForLocks: false);

    /// <summary>Silo's commit phases 1 and 2, then the inserts: votes yes holding the write set's
    /// locks, every read validated.</summary>
    protected override Vote Prepare(TxnContext ctx) => Prepare(ctx, waitForLocks: true);

    Vote Prepare(TxnContext ctx, bool waitForLocks)
    {
        var vote = LockWriteSet(ctx, waitForLocks);
        if (vote.IsYes && !_skipValidation) vote = ValidateReads(ctx);
        // An inserted row's word is its version, as every other row's, so that a reader records
        // the insert it read from.
        return vote.IsYes ? InsertSet.Prepare(Db, ctx, versionInWord: true, waitForClaims: waitForLocks) : vote;
    }

    /// <summary>Phase 1: locks the write set in (table, row) order. Without
    /// <paramref name="waitForLocks"/>, a lock held by another committer is a no vote
    /// (<see cref="AbortReason.LockBusy"/>), and what was locked stays for <see cref="Abort"/> to
    /// release. ReactDB's commit takes this step in every container before any validation.</summary>
    internal Vote LockWriteSet(TxnContext ctx, bool waitForLocks)
    {
        var state = State(ctx);
        Span<int> writes = ctx.Scratch.AsSpan(0, ctx.AccessCount);
        int n = 0;
        for (int i = 0; i < ctx.AccessCount; i++)
            if (state.Mode[i] == InWriteSet) writes[n++] = i;
        writes = writes[..n];
        SortByRow(ctx, writes);
        foreach (int i in writes)
        {
            ref long word = ref Db[ctx.AccessTable[i]].Word(ctx.AccessRow[i]);
            var wait = new SpinWait();
            while (true)
            {
                long seen = Volatile.Read(ref word);
                if ((seen & LockBit) == 0 && Interlocked.CompareExchange(ref word, seen | LockBit, seen) == seen)
                {
                    if (state.Blind[i]) ctx.AccessVersion[i] = seen; // the version this write overwrites
                    break;
                }
                if (!waitForLocks && (seen & LockBit) != 0) return new Vote(AbortReason.LockBusy);
                Spin.Once(ref wait);
            }
            state.Mode[i] = LockedByMe;
        }
        return Vote.Yes;
    }

    /// <summary>Phase 2: every row read (written ones too: their bodies read the copy) must still
    /// hold the version read, and must not be locked by another committer.</summary>
    internal Vote ValidateReads(TxnContext ctx)
    {
        var state = State(ctx);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (state.Blind[i]) continue;
            long now = Volatile.Read(ref Db[ctx.AccessTable[i]].Word(ctx.AccessRow[i]));
            bool lockedByOther = (now & LockBit) != 0 && state.Mode[i] != LockedByMe && !_readIgnoresLocks;
            if ((now & ~LockBit) != ctx.AccessVersion[i] || lockedByOther) return new Vote(AbortReason.Validation);
        }
        return Vote.Yes;
    }

    /// <summary>A private copy of the row for code that is not an op of a program DAG (a ReactDB
    /// reactor function's read or write): as an op's access, the row joins the attempt's read set,
    /// and its write set when <paramref name="write"/>.</summary>
    internal Span<byte> Grant(TxnContext ctx, Table table, int row, bool write)
    {
        Access(ctx, table, row, write, out var data, out _, out _);
        return data;
    }

    /// <summary>As <see cref="Grant"/>, but a row another committer holds locked is a false, with
    /// nothing recorded: for a caller that waits outside a step of its own (ReactDB's traced
    /// access, which must not wait inside the trace's gate, where the committer's release is).</summary>
    internal bool TryGrant(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access) =>
        TryAccess(ctx, table, row, write, out data, out access, out _) == OpStep.Done;

    /// <summary>A blind write of the row (ReactDB's): a zeroed private copy for the caller to fill
    /// whole, in the write set without a read. Silo validates reads only, so the row's version is
    /// not checked at commit; it serializes at its lock like every write.</summary>
    internal Span<byte> GrantBlind(TxnContext ctx, Table table, int row)
    {
        var state = State(ctx);
        if (!Revisit(ctx, state, table, row, write: true, out var data, out _))
        {
            data = ctx.Reserve(table.PayloadSize, out int offset);
            state.Blind[AddAccess(ctx, state, table, row, write: true, offset, version: 0)] = true;
        }
        data.Clear();
        return data;
    }

    /// <summary>Phase 3: install, and unlock by publishing the new version.</summary>
    protected override void Commit(TxnContext ctx)
    {
        var state = State(ctx);
        // Logged while the write set is locked, before anything of it is visible (proofs/Durability.md).
        if (ctx.Log is { } log) ctx.CommitEpoch = log.Commit(ctx, Db, new Commits(ctx, Db, state));
        var history = ctx.Recorder is null ? null : new List<Access>(ctx.AccessCount + ctx.InsertCount);
        InsertSet.Commit(Db, ctx, history);
        if (history is not null) RecordAccesses(ctx, history, static (c, i) => State(c).Mode[i] == LockedByMe);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (state.Mode[i] != LockedByMe) continue;
            var table = Db[ctx.AccessTable[i]];
            int row = ctx.AccessRow[i];
            ctx.Buffer.AsSpan(state.Copy[i], table.PayloadSize).CopyTo(table.Payload(row));
            Volatile.Write(ref table.Version(row), ctx.TxnId);
            Volatile.Write(ref table.Word(row), ctx.TxnId);
        }
        if (history is not null) ctx.Recorder!.Commit(ctx, history);
    }

    /// <summary>The attempt's rows as the log sees them: the write set's new values are its copies.</summary>
    readonly struct Commits(TxnContext ctx, Database db, SiloState state) : ICommitSet
    {
        public int Count => ctx.AccessCount;
        public Table Table(int i) => db[ctx.AccessTable[i]];
        public int Row(int i) => ctx.AccessRow[i];
        public bool Holds(int i) => true;
        public bool Written(int i) => state.Mode[i] == LockedByMe;
        public ReadOnlySpan<byte> After(int i) => ctx.Buffer.AsSpan(state.Copy[i], db[ctx.AccessTable[i]].PayloadSize);
    }

    /// <summary>Gives back the inserts' keys and unlocks whatever phase 1 locked; the ops wrote
    /// only private copies.</summary>
    protected override void Abort(TxnContext ctx)
    {
        InsertSet.Abort(Db, ctx);
        var state = State(ctx);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (state.Mode[i] != LockedByMe) continue;
            ref long word = ref Db[ctx.AccessTable[i]].Word(ctx.AccessRow[i]);
            Volatile.Write(ref word, Volatile.Read(ref word) & ~LockBit);
            state.Mode[i] = SiloState.ReadOnly;
        }
    }
}
