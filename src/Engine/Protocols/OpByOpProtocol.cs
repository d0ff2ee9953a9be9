using System.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols;

/// <summary>
/// The op loop every per-transaction protocol shares: resolve each op's key in the DAG's
/// order, find its row, let the protocol grant access, run the body. Inserts are collected
/// and made by the protocol's prepare, under its locks.
/// </summary>
/// <remarks>
/// After the ops, the protocol is one participant, driven here by a coordinator of one:
/// <see cref="Prepare"/> does everything that can still refuse the attempt (Silo's locks and
/// validation, every protocol's inserts) and votes; <see cref="Commit"/> then cannot fail, and
/// <see cref="Abort"/> undoes whatever the attempt did, from any point of it. A coordinator
/// across partitions drives the same three steps on each partition's participant.
/// </remarks>
internal abstract class OpByOpProtocol(ProtocolSetup setup) : ITransactionProtocol
{
    protected readonly Database Db = setup.Database;
    readonly MutantFlag _prepareOutsideUndo = new(setup.Mutants, OpByOpMutants.PrepareOutsideUndo);

    public abstract string Name { get; }

    public virtual Outcome Run(TxnContext ctx, out AbortReason reason)
    {
        ctx.BeginAttempt();
        return RunOps(ctx, out reason);
    }

    /// <summary>Runs the ops, then prepares and commits, or aborts. A key function or a body
    /// (an insert's too) that throws is a bug in the program: the attempt is undone first (its
    /// locks released, its written rows given back their images, its claimed keys given back),
    /// so that the rows stay usable by every other transaction, and the exception goes on to
    /// the caller.</summary>
    protected Outcome RunOps(TxnContext ctx, out AbortReason reason)
    {
        try
        {
            reason = RunEachOp(ctx);
            if (reason == AbortReason.None && !_prepareOutsideUndo) reason = Prepare(ctx).Reason;
        }
        catch
        {
            Abort(ctx);
            throw;
        }
        // The twin (OpByOpMutants.PrepareOutsideUndo): an insert body that throws skips the abort.
        if (reason == AbortReason.None && _prepareOutsideUndo) reason = Prepare(ctx).Reason;
        if (reason != AbortReason.None)
        {
            Abort(ctx);
            return AbortReasons.OutcomeOf(reason);
        }
        Commit(ctx);
        return Outcome.Committed;
    }

    /// <summary>The op loop; returns why the attempt must abort, or None when every op ran.</summary>
    AbortReason RunEachOp(TxnContext ctx)
    {
        var program = ctx.Program;
        ReadOnlySpan<long> args = ctx.Args;
        foreach (int i in program.Order)
        {
            var op = program.Ops[i];
            long key = op.ResolveKey(args, ctx.Results);
            if (op.Mode == AccessMode.Insert)
            {
                ctx.InsertOp[ctx.InsertCount] = i;
                ctx.InsertKey[ctx.InsertCount++] = key;
                continue;
            }
            var table = Db[op.TableId];
            int row = ctx.RowsKnown && ctx.OpRow[i] >= 0 ? ctx.OpRow[i] : table.Find(key);
            if (row < 0) return AbortReason.KeyNotFound;
            bool write = op.Writes(args);
            if (!Access(ctx, table, row, write, out var data, out int access, out var reason))
            {
                Debug.Assert(reason != AbortReason.None && !reason.IsFinal(), $"program {program.Name}: a conflict abort reported as {reason}");
                return reason;
            }
            long result = program.RunBody(op, write, data, args, ctx.Results);
            if (result == TxnProgram.UserAbort) return AbortReason.User;
            ctx.Results[i] = result;
            AfterOp(ctx, table, access);
        }
        return AbortReason.None;
    }

    /// <summary>
    /// One op of a transaction coordinated elsewhere (<see cref="TwoPhaseCommit"/>), run on this
    /// participant's partition without ever holding the thread: where the single-node path would
    /// wait for a lock, this returns <see cref="OpStep.Wait"/> with nothing of the op done, and the
    /// caller tries again later. An insert is collected for prepare, as in the op loop.
    /// </summary>
    internal OpStep TryOp(TxnContext ctx, int opIndex, long key, out AbortReason reason)
    {
        var program = ctx.Program;
        var op = program.Ops[opIndex];
        if (op.Mode == AccessMode.Insert)
        {
            ctx.InsertOp[ctx.InsertCount] = opIndex;
            ctx.InsertKey[ctx.InsertCount++] = key;
            reason = AbortReason.None;
            return OpStep.Done;
        }
        var table = Db[op.TableId];
        int row = table.Find(key);
        if (row < 0)
        {
            reason = AbortReason.KeyNotFound;
            return OpStep.Refused;
        }
        bool write = op.Writes(ctx.Args);
        var step = TryAccess(ctx, table, row, write, out var data, out int access, out reason);
        if (step != OpStep.Done) return step;
        long result = program.RunBody(op, write, data, ctx.Args, ctx.Results);
        if (result == TxnProgram.UserAbort)
        {
            reason = AbortReason.User;
            return OpStep.Refused;
        }
        ctx.Results[opIndex] = result;
        AfterOp(ctx, table, access);
        return OpStep.Done;
    }

    /// <summary>
    /// The first half of <see cref="TryOp"/>: grants the op its row (locks it, saves a write's
    /// before-image) without running the body. Chiller's outer region takes its locks so in step 3
    /// and runs the bodies that read the inner region's results in step 5, by <see cref="TryOp"/>
    /// on the row the attempt already holds, which grants it again without waiting.
    /// </summary>
    internal OpStep TryLockOp(TxnContext ctx, int opIndex, long key, out AbortReason reason)
    {
        var op = ctx.Program.Ops[opIndex];
        Debug.Assert(op.Mode != AccessMode.Insert, $"program {ctx.Program.Name}, op {op.Name}: an insert has no row to lock before its prepare");
        var table = Db[op.TableId];
        int row = table.Find(key);
        if (row < 0)
        {
            reason = AbortReason.KeyNotFound;
            return OpStep.Refused;
        }
        return TryAccess(ctx, table, row, op.Writes(ctx.Args), out _, out _, out reason);
    }

    /// <summary>The participant's prepare for a coordinator elsewhere: as <see cref="Prepare"/>,
    /// but a lock it would wait for is a no vote.</summary>
    internal Vote PrepareParticipant(TxnContext ctx) => PrepareWithoutWaiting(ctx);

    internal void CommitParticipant(TxnContext ctx) => Commit(ctx);

    internal void AbortParticipant(TxnContext ctx) => Abort(ctx);

    /// <summary>True for a protocol that runs as a participant of a transaction across
    /// partitions (<see cref="TryAccess"/> and <see cref="PrepareWithoutWaiting"/> are its own).</summary>
    internal virtual bool RunsAcrossPartitions => false;

    /// <summary>As <see cref="Access"/>, but a grant that would wait returns <see cref="OpStep.Wait"/>
    /// and leaves the access set as it was.</summary>
    private protected virtual OpStep TryAccess(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason) =>
        throw new NotSupportedException($"protocol {Name} does not run as a participant across partitions");

    /// <summary>As <see cref="Prepare"/>, but what it would wait for (a lock, another attempt's
    /// claim on a key) is a no vote.</summary>
    private protected virtual Vote PrepareWithoutWaiting(TxnContext ctx) =>
        throw new NotSupportedException($"protocol {Name} does not run as a participant across partitions");

    /// <summary>Grants the op its row: the row itself (locking) or a private copy (optimistic).
    /// On false the protocol has recorded whatever <see cref="Abort"/> must undo.</summary>
    protected abstract bool Access(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason);

    protected virtual void AfterOp(TxnContext ctx, Table table, int access) { }

    /// <summary>The participant's prepare, once every op has run: everything that can still refuse
    /// the attempt, ending in a vote. A no vote leaves the undo to <see cref="Abort"/>.</summary>
    protected abstract Vote Prepare(TxnContext ctx);

    /// <summary>The participant's commit, after a yes vote: installs, records the history, and
    /// releases. Runs no program code, so it cannot fail.</summary>
    protected abstract void Commit(TxnContext ctx);

    /// <summary>The participant's abort, from any point of the attempt (an op refused, a no vote,
    /// a body that threw): undoes every write, gives back every claimed key, releases every lock.</summary>
    protected abstract void Abort(TxnContext ctx);

    /// <summary>Insertion sort of access indices by (table, row): the one global order in which
    /// the protocols that lock more than one row without waiting in a cycle take them (Silo's
    /// write set, Ordered's every lock). Access sets are at most a few dozen rows.</summary>
    protected static void SortByRow(TxnContext ctx, Span<int> accesses)
    {
        for (int i = 1; i < accesses.Length; i++)
        {
            int a = accesses[i];
            int j = i - 1;
            while (j >= 0 && (ctx.AccessTable[accesses[j]] > ctx.AccessTable[a] ||
                              (ctx.AccessTable[accesses[j]] == ctx.AccessTable[a] && ctx.AccessRow[accesses[j]] > ctx.AccessRow[a])))
            {
                accesses[j + 1] = accesses[j];
                j--;
            }
            accesses[j + 1] = a;
        }
    }

    /// <summary>The history entries of the access set: per row, the version first seen and whether it was overwritten.</summary>
    protected static void RecordAccesses(TxnContext ctx, List<Access> history, Func<TxnContext, int, bool> written)
    {
        for (int i = 0; i < ctx.AccessCount; i++)
            history.Add(new Access(HistoryRecorder.RowKey(ctx.AccessTable[i], ctx.AccessRow[i]), ctx.AccessVersion[i], written(ctx, i)));
    }
}

/// <summary>What a participant's op came to: done, refused (the transaction must abort, for the
/// reason given), or not yet (a lock is held and the protocol would wait for it).</summary>
internal enum OpStep : byte { Done, Refused, Wait }
