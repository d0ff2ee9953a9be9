using Contend.Engine.History;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// Strict two-phase locking over in-place rows: an op locks its row (shared to read,
/// exclusive to write) before its body runs, the first write of a row saves its
/// before-image, and every lock is released only after commit installs the versions (or
/// abort restores the images). The lock policy on a conflict is the subclass's.
/// </summary>
public abstract class LockingProtocol(ProtocolSetup setup) : OpByOpProtocol(setup)
{
    protected const byte None = 0, Shared = 1, Exclusive = 2;

    /// <summary>Takes or upgrades the lock of access <paramref name="access"/> and sets its mode; on
    /// false the mode says what the attempt still holds or must clean up.</summary>
    protected abstract bool Lock(TxnContext ctx, Table table, int access, bool exclusive, out AbortReason reason);

    /// <summary>Whether the attempt saves a row's before-image when it first writes it: always,
    /// unless the protocol has ruled out every abort of the attempt.</summary>
    protected virtual bool KeepsImages(TxnContext ctx) => true;

    /// <summary>Releases whatever access <paramref name="access"/> holds.</summary>
    protected virtual void Unlock(TxnContext ctx, Table table, int access)
    {
        ref long word = ref table.Word(ctx.AccRow[access]);
        if (ctx.AccMode[access] == Exclusive) LockWord.ReleaseExclusive(ref word);
        else if (ctx.AccMode[access] == Shared) LockWord.ReleaseShared(ref word);
        ctx.AccMode[access] = None;
    }

    protected override bool Access(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason)
    {
        access = ctx.FindAccess(table.Id, row);
        data = default;
        if (access < 0)
        {
            access = ctx.AddAccess(table.Id, row);
            if (!Lock(ctx, table, access, write, out reason)) return false;
            ctx.AccVersion[access] = Volatile.Read(ref table.Version(row));
        }
        else if (write && ctx.AccMode[access] != Exclusive)
        {
            if (!Lock(ctx, table, access, true, out reason)) return false;
        }
        reason = AbortReason.None;
        data = GrantRow(ctx, table, row, write, access);
        return true;
    }

    /// <summary>The row, its before-image saved first when the op is the attempt's first write of it.</summary>
    Span<byte> GrantRow(TxnContext ctx, Table table, int row, bool write, int access)
    {
        var data = table.Payload(row);
        if (write && ctx.AccBuffer[access] == TxnContext.NotWritten)
        {
            if (KeepsImages(ctx))
            {
                data.CopyTo(ctx.Reserve(data.Length, out int offset));
                ctx.AccBuffer[access] = offset;
            }
            else ctx.AccBuffer[access] = TxnContext.WrittenWithoutImage;
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
        data = default;
        access = ctx.FindAccess(table.Id, row);
        bool added = access < 0;
        if (added) access = ctx.AddAccess(table.Id, row);
        if (added || (write && ctx.AccMode[access] != Exclusive))
        {
            var result = TryLockWord(ctx, table, access, write, out long holder);
            if (result != LockResult.Acquired)
            {
                reason = result != LockResult.Conflict || policy == OnConflict.Wait ? AbortReason.None
                       : policy == OnConflict.Abort ? AbortReason.LockBusy
                       : ctx.Timestamp >= holder ? AbortReason.Die : AbortReason.None;
                if (reason != AbortReason.None) return OpStep.Refused;
                if (added) ctx.AccessCount--; // nothing taken: the retry starts this access afresh
                return OpStep.Wait;
            }
            if (added) ctx.AccVersion[access] = Volatile.Read(ref table.Version(row));
        }
        reason = AbortReason.None;
        data = GrantRow(ctx, table, row, write, access);
        return OpStep.Done;
    }

    static readonly Func<TxnContext, int, bool> Written = (ctx, i) => ctx.AccBuffer[i] != TxnContext.NotWritten;

    /// <summary>Every lock is held (strict 2PL's growing phase is over), so only the inserts can refuse.</summary>
    protected override Vote Prepare(TxnContext ctx) => InsertSet.Prepare(Db, ctx, versionInWord: false);

    private protected override Vote PrepareWithoutWaiting(TxnContext ctx) => InsertSet.Prepare(Db, ctx, versionInWord: false, waitForClaims: false);

    protected override void Commit(TxnContext ctx)
    {
        var history = ctx.Recorder is null ? null : new List<Access>(ctx.AccessCount + ctx.InsertCount);
        InsertSet.Commit(Db, ctx, history);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (ctx.AccBuffer[i] != TxnContext.NotWritten) Volatile.Write(ref Db[ctx.AccTable[i]].Version(ctx.AccRow[i]), ctx.TxnId);
        }
        if (history is not null)
        {
            RecordAccesses(ctx, history, Written);
            ctx.Recorder!.Commit(ctx, history);
        }
        ReleaseAll(ctx);
    }

    protected override void Abort(TxnContext ctx)
    {
        InsertSet.Abort(Db, ctx);
        RestoreImages(ctx);
        ReleaseAll(ctx);
    }

    protected void RestoreImages(TxnContext ctx)
    {
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (ctx.AccBuffer[i] < 0) continue; // not written, or written without an image: nothing to restore
            var table = Db[ctx.AccTable[i]];
            ctx.Buffer.AsSpan(ctx.AccBuffer[i], table.PayloadSize).CopyTo(table.Payload(ctx.AccRow[i]));
        }
    }

    protected virtual void ReleaseAll(TxnContext ctx)
    {
        for (int i = 0; i < ctx.AccessCount; i++) Unlock(ctx, Db[ctx.AccTable[i]], i);
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
    protected static bool LockOrDie(TxnContext ctx, Table table, int access, bool exclusive, OnConflict onConflict, out AbortReason reason)
    {
        var wait = new SpinWait();
        while (true)
        {
            var result = TryLockWord(ctx, table, access, exclusive, out long holder);
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
            Spin.Once(ref wait);
        }
    }

    /// <summary>One attempt at the word for access <paramref name="access"/>: a fresh lock or an upgrade.</summary>
    protected static LockResult TryLockWord(TxnContext ctx, Table table, int access, bool exclusive, out long holderTimestamp)
    {
        ref long word = ref table.Word(ctx.AccRow[access]);
        var result = ctx.AccMode[access] == Shared
            ? LockWord.TryUpgrade(ref word, ctx.Timestamp, out holderTimestamp)
            : LockWord.TryLock(ref word, exclusive, ctx.Timestamp, out holderTimestamp);
        if (result == LockResult.Acquired) ctx.AccMode[access] = exclusive ? Exclusive : Shared;
        return result;
    }
}

/// <summary>2PL that aborts at the first lock it cannot take.</summary>
public sealed class NoWait(ProtocolSetup setup) : LockingProtocol(setup)
{
    readonly MutantFlag _ignoreLock = new(setup.Mutants, TwoPhaseLockingMutants.NoWaitIgnoreLock);

    public override string Name => TwoPhaseLockingProtocols.NoWait.Name;

    private protected override OnConflict? ParticipantPolicy => OnConflict.Abort;

    protected override bool Lock(TxnContext ctx, Table table, int access, bool exclusive, out AbortReason reason)
    {
        if (_ignoreLock)
        {
            // Mutant: acts as if it held the lock, and releases nothing.
            ctx.AccMode[access] = None;
            reason = AbortReason.None;
            return true;
        }
        return LockOrDie(ctx, table, access, exclusive, OnConflict.Abort, out reason);
    }
}

/// <summary>2PL with wait-die: a requester older than every holder waits, a younger one aborts.
/// Waits only go from older to younger, so no cycle of waits can form.</summary>
public sealed class WaitDie(ProtocolSetup setup) : LockingProtocol(setup)
{
    readonly MutantFlag _youngerWaits = new(setup.Mutants, TwoPhaseLockingMutants.WaitDieYoungerWaits);

    public override string Name => TwoPhaseLockingProtocols.WaitDie.Name;

    private protected override OnConflict? ParticipantPolicy => _youngerWaits ? OnConflict.Wait : OnConflict.DieIfYounger;

    protected override bool Lock(TxnContext ctx, Table table, int access, bool exclusive, out AbortReason reason) =>
        LockOrDie(ctx, table, access, exclusive, _youngerWaits ? OnConflict.Wait : OnConflict.DieIfYounger, out reason);
}
