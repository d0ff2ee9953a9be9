using System.Diagnostics;
using Contend.Engine.Durability;
using Contend.Engine.History;
using Contend.Engine.Locks;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// Strict two-phase locking over in-place rows: an op locks its row (shared to read,
/// exclusive to write) before its body runs, the first write of a row saves its
/// before-image, and every lock is released only after commit installs the versions (or
/// abort restores the images). The lock policy on a conflict is the subclass's.
/// </summary>
internal abstract class LockingProtocol(ProtocolSetup setup) : OpByOpProtocol(setup)
{
    protected const byte None = 0, Shared = 1, Exclusive = 2;

    /// <summary>The worker's 2PL state on <paramref name="ctx"/>, made on its first use.</summary>
    private protected LockingState State(TxnContext ctx) => ctx.ProtocolState as LockingState ?? Attach(ctx);

    LockingState Attach(TxnContext ctx)
    {
        Debug.Assert(ctx.ProtocolState is null, $"worker {ctx.Worker}: its context carries another protocol's state ({ctx.ProtocolState?.GetType().Name})");
        var state = NewState();
        ctx.ProtocolState = state;
        return state;
    }

    /// <summary>A worker's state: a subclass that keeps more per access extends it.</summary>
    private protected virtual LockingState NewState() => new();

    /// <summary>Adds access for (table, row), holding nothing and not written yet.</summary>
    private protected static int AddAccess(TxnContext ctx, LockingState state, int table, int row)
    {
        int access = ctx.AddAccess(table, row);
        state.Mode[access] = None;
        state.Image[access] = LockingState.NotWritten;
        return access;
    }

    /// <summary>Takes or upgrades the lock of access <paramref name="access"/> and sets its mode; on
    /// false the mode says what the attempt still holds or must clean up.</summary>
    private protected abstract bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason);

    /// <summary>Whether the attempt saves a row's before-image when it first writes it: always,
    /// unless the protocol has ruled out every abort of the attempt.</summary>
    protected virtual bool KeepsImages(TxnContext ctx) => true;

    /// <summary>Whether an attempt that ended by an exception (a body that threw) was undone,
    /// every row it wrote given back its image: then that transaction alone has failed.</summary>
    internal bool UndoesAFailedAttempt(TxnContext ctx) => KeepsImages(ctx);

    /// <summary>Releases whatever access <paramref name="access"/> holds.</summary>
    private protected virtual void Unlock(TxnContext ctx, LockingState state, Table table, int access)
    {
        ref long word = ref table.Word(ctx.AccessRow[access]);
        if (state.Mode[access] == Exclusive) LockWord.ReleaseExclusive(ref word);
        else if (state.Mode[access] == Shared) LockWord.ReleaseShared(ref word);
        state.Mode[access] = None;
    }

    protected override bool Access(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason)
    {
        var state = State(ctx);
        access = ctx.FindAccess(table.Id, row);
        data = default;
        if (access < 0)
        {
            access = AddAccess(ctx, state, table.Id, row);
            if (!Lock(ctx, state, table, access, write, out reason)) return false;
            ctx.AccessVersion[access] = Volatile.Read(ref table.Version(row));
        }
        else if (write && state.Mode[access] != Exclusive)
        {
            if (!Lock(ctx, state, table, access, true, out reason)) return false;
        }
        reason = AbortReason.None;
        data = GrantRow(ctx, state, table, row, write, access);
        return true;
    }

    /// <summary>The row, its before-image saved first when the op is the attempt's first write of it.</summary>
    Span<byte> GrantRow(TxnContext ctx, LockingState state, Table table, int row, bool write, int access)
    {
        var data = table.Payload(row);
        if (write && state.Image[access] == LockingState.NotWritten)
        {
            if (KeepsImages(ctx))
            {
                data.CopyTo(ctx.Reserve(data.Length, out int offset));
                state.Image[access] = offset;
            }
            else state.Image[access] = LockingState.WrittenWithoutImage;
        }
        return data;
    }

    internal override bool RunsAcrossPartitions => ParticipantPolicy is not null;

    /// <summary>What a participant does on a conflict, where it cannot hold its thread; null for a
    /// protocol that does not run across partitions.</summary>
    private protected virtual OnConflict? ParticipantPolicy => null;

    private protected override OpStep TryAccess(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason)
    {
        var policy = ParticipantPolicy ?? throw new NotSupportedException($"protocol {Name} does not run as a participant across partitions");
        var state = State(ctx);
        data = default;
        access = ctx.FindAccess(table.Id, row);
        bool added = access < 0;
        if (added) access = AddAccess(ctx, state, table.Id, row);
        if (added || (write && state.Mode[access] != Exclusive))
        {
            var result = TryLockWord(ctx, state, table, access, write, out long holder);
            if (result != LockResult.Acquired)
            {
                reason = result != LockResult.Conflict || policy == OnConflict.Wait ? AbortReason.None
                       : policy == OnConflict.Abort ? AbortReason.LockBusy
                       : ctx.Timestamp >= holder ? AbortReason.Die : AbortReason.None;
                if (reason != AbortReason.None) return OpStep.Refused;
                if (added) ctx.AccessCount--; // nothing taken: the retry starts this access afresh
                return OpStep.Wait;
            }
            if (added) ctx.AccessVersion[access] = Volatile.Read(ref table.Version(row));
        }
        reason = AbortReason.None;
        data = GrantRow(ctx, state, table, row, write, access);
        return OpStep.Done;
    }

    static readonly Func<TxnContext, int, bool> Written = (ctx, i) => ((LockingState)ctx.ProtocolState!).Image[i] != LockingState.NotWritten;

    /// <summary>Every lock is held (strict 2PL's growing phase is over), so only the inserts can refuse.</summary>
    protected override Vote Prepare(TxnContext ctx) => InsertSet.Prepare(Db, ctx, versionInWord: false);

    private protected override Vote PrepareWithoutWaiting(TxnContext ctx) => InsertSet.Prepare(Db, ctx, versionInWord: false, waitForClaims: false);

    protected override void Commit(TxnContext ctx)
    {
        var state = State(ctx);
        // Logged while every lock is held, and before the inserts are revealed (proofs/Durability.md).
        if (ctx.Log is { } log) ctx.CommitEpoch = log.Commit(ctx, Db, new Commits(ctx, Db, state));
        var history = ctx.Recorder is null ? null : new List<Access>(ctx.AccessCount + ctx.InsertCount);
        InsertSet.Commit(Db, ctx, history);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (state.Image[i] != LockingState.NotWritten) Volatile.Write(ref Db[ctx.AccessTable[i]].Version(ctx.AccessRow[i]), ctx.TxnId);
        }
        if (history is not null)
        {
            RecordAccesses(ctx, history, Written);
            ctx.Recorder!.Commit(ctx, history);
        }
        ReleaseAll(ctx);
    }

    /// <summary>The attempt's rows as the log sees them: every access, written in place.</summary>
    readonly struct Commits(TxnContext ctx, Database db, LockingState state) : ICommitSet
    {
        public int Count => ctx.AccessCount;
        public Table Table(int i) => db[ctx.AccessTable[i]];
        public int Row(int i) => ctx.AccessRow[i];
        public bool Holds(int i) => true;
        public bool Written(int i) => state.Image[i] != LockingState.NotWritten;
        public ReadOnlySpan<byte> After(int i) => db[ctx.AccessTable[i]].Payload(ctx.AccessRow[i]);
    }

    protected override void Abort(TxnContext ctx)
    {
        InsertSet.Abort(Db, ctx);
        RestoreImages(ctx);
        ReleaseAll(ctx);
    }

    /// <summary>Whether the attempt has written access <paramref name="access"/>'s row (what a
    /// replication message must carry).</summary>
    internal bool Wrote(TxnContext ctx, int access) => State(ctx).Image[access] != LockingState.NotWritten;

    /// <summary>Gives one written row back its before-image, and marks it unwritten: what is left
    /// when one op's body fails after its transaction can no longer abort (Chiller's step 5).</summary>
    internal void UndoWrite(TxnContext ctx, int access)
    {
        var state = State(ctx);
        if (state.Image[access] < 0) return;
        var table = Db[ctx.AccessTable[access]];
        ctx.Buffer.AsSpan(state.Image[access], table.PayloadSize).CopyTo(table.Payload(ctx.AccessRow[access]));
        state.Image[access] = LockingState.NotWritten;
    }

    /// <summary>Releases one access's lock before the attempt ends: only a twin does (Chiller's
    /// <c>OuterReleasesEarly</c>); the release at the end then finds nothing held.</summary>
    internal void ReleaseForTwin(TxnContext ctx, int access) => Unlock(ctx, State(ctx), Db[ctx.AccessTable[access]], access);

    protected void RestoreImages(TxnContext ctx)
    {
        var state = State(ctx);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (state.Image[i] < 0) continue; // not written, or written without an image: nothing to restore
            var table = Db[ctx.AccessTable[i]];
            ctx.Buffer.AsSpan(state.Image[i], table.PayloadSize).CopyTo(table.Payload(ctx.AccessRow[i]));
        }
    }

    protected virtual void ReleaseAll(TxnContext ctx)
    {
        var state = State(ctx);
        for (int i = 0; i < ctx.AccessCount; i++) Unlock(ctx, state, Db[ctx.AccessTable[i]], i);
    }

    /// <summary>What a lock request does when the lock is held in a conflicting mode.</summary>
    protected enum OnConflict
    {
        /// <summary>NoWait: abort at once (LockBusy).</summary>
        Abort,
        /// <summary>WaitDie: a requester younger than the oldest holder dies, an older one waits.</summary>
        DieIfYounger,
        /// <summary>Wait whatever the ages (WaitDie's younger-waits twin: waits can form a cycle).</summary>
        Wait,
    }

    /// <summary>
    /// Takes or upgrades the lock, spinning over CASes lost to other shared holders (not a
    /// conflict); on a conflict, does what <paramref name="onConflict"/> says.
    /// </summary>
    private protected static bool LockOrDie(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, OnConflict onConflict, out AbortReason reason)
    {
        var wait = new SpinWait();
        while (true)
        {
            var result = TryLockWord(ctx, state, table, access, exclusive, out long holder);
            if (result == LockResult.Acquired)
            {
                reason = AbortReason.None;
                return true;
            }
            if (result == LockResult.Conflict && onConflict == OnConflict.Abort)
            {
                reason = AbortReason.LockBusy;
                return false;
            }
            if (result == LockResult.Conflict && onConflict == OnConflict.DieIfYounger && ctx.Timestamp >= holder)
            {
                reason = AbortReason.Die;
                return false;
            }
            if (result == LockResult.Conflict && ctx.GivingUp)
            {
                reason = AbortReason.Deadline;
                return false;
            }
            Spin.Once(ref wait);
        }
    }

    /// <summary>One attempt at the word for access <paramref name="access"/>: a fresh lock or an upgrade.</summary>
    private protected static LockResult TryLockWord(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out long holderTimestamp)
    {
        ref long word = ref table.Word(ctx.AccessRow[access]);
        var result = state.Mode[access] == Shared
            ? LockWord.TryUpgrade(ref word, ctx.Timestamp, out holderTimestamp)
            : LockWord.TryLock(ref word, exclusive, ctx.Timestamp, out holderTimestamp);
        if (result == LockResult.Acquired) state.Mode[access] = exclusive ? Exclusive : Shared;
        return result;
    }
}

/// <summary>2PL that aborts at the first lock it cannot take.</summary>
internal sealed class NoWait(ProtocolSetup setup) : LockingProtocol(setup)
{
    readonly MutantFlag _ignoreLock = new(setup.Mutants, TwoPhaseLockingMutants.NoWaitIgnoreLock);

    public override string Name => TwoPhaseLockingProtocols.NoWait.Name;

    private protected override OnConflict? ParticipantPolicy => OnConflict.Abort;

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason)
    {
        if (_ignoreLock)
        {
            // Mutant: acts as if it held the lock, and releases nothing.
            state.Mode[access] = None;
            reason = AbortReason.None;
            return true;
        }
        return LockOrDie(ctx, state, table, access, exclusive, OnConflict.Abort, out reason);
    }
}

/// <summary>2PL with wait-die: a requester older than every holder waits, a younger one aborts.
/// Waits only go from older to younger, so no cycle of waits can form.</summary>
internal sealed class WaitDie(ProtocolSetup setup) : LockingProtocol(setup)
{
    readonly MutantFlag _youngerWaits = new(setup.Mutants, TwoPhaseLockingMutants.WaitDieYoungerWaits);

    public override string Name => TwoPhaseLockingProtocols.WaitDie.Name;

    private protected override OnConflict? ParticipantPolicy => _youngerWaits ? OnConflict.Wait : OnConflict.DieIfYounger;

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason) =>
        LockOrDie(ctx, state, table, access, exclusive, _youngerWaits ? OnConflict.Wait : OnConflict.DieIfYounger, out reason);
}
