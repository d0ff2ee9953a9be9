using System.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols;

/// <summary>
/// The op loop every per-transaction protocol shares: resolve each op's key in the DAG's
/// order, find its row, let the protocol grant access, run the body. Inserts are collected
/// and applied by the protocol's commit, under its locks.
/// </summary>
public abstract class OpByOpProtocol(ProtocolSetup setup) : ITransactionProtocol
{
    protected readonly Database Db = setup.Database;

    public abstract string Name { get; }

    public virtual Outcome Run(TxnContext ctx, out AbortReason reason)
    {
        ctx.BeginAttempt();
        return RunOps(ctx, out reason);
    }

    /// <summary>Runs the ops, then commits. A key function or a body that throws is a bug in
    /// the program: the attempt is undone first (its locks released, its written rows given
    /// back their images), so that the rows stay usable by every other transaction, and the
    /// exception goes on to the caller.</summary>
    protected Outcome RunOps(TxnContext ctx, out AbortReason reason)
    {
        try
        {
            if (!RunEachOp(ctx, out reason)) return reason == AbortReason.User ? Outcome.UserAborted : Outcome.Aborted;
        }
        catch
        {
            Abort(ctx);
            throw;
        }
        if (!Commit(ctx, out reason)) return reason == AbortReason.TableFull ? Outcome.UserAborted : Outcome.Aborted;
        return Outcome.Committed;
    }

    /// <summary>The op loop; on false the attempt is aborted and undone, <paramref name="reason"/> says why.</summary>
    bool RunEachOp(TxnContext ctx, out AbortReason reason)
    {
        var program = ctx.Program;
        ReadOnlySpan<long> args = ctx.Args;
        foreach (int i in program.Order)
        {
            var op = program.Ops[i];
            long key = op.ResolveKey(args, ctx.Results);
            if (op.Mode == AccessMode.Insert)
            {
                ctx.InsOp[ctx.InsertCount] = i;
                ctx.InsKey[ctx.InsertCount++] = key;
                continue;
            }
            var table = Db[op.TableId];
            int row = ctx.RowsKnown && ctx.OpRow[i] >= 0 ? ctx.OpRow[i] : table.Find(key);
            if (row < 0)
            {
                Abort(ctx);
                reason = AbortReason.User;
                return false;
            }
            bool write = op.Writes(args);
            if (!Access(ctx, table, row, write, out var data, out int access, out reason))
            {
                Abort(ctx);
                Debug.Assert(reason != AbortReason.User, $"program {program.Name}: a conflict abort reported as the logic's");
                return false;
            }
            long result = program.RunBody(op, write, data, args, ctx.Results);
            if (result == TxnProgram.UserAbort)
            {
                Abort(ctx);
                reason = AbortReason.User;
                return false;
            }
            ctx.Results[i] = result;
            AfterOp(ctx, table, access);
        }
        reason = AbortReason.None;
        return true;
    }

    /// <summary>Grants the op its row: the row itself (locking) or a private copy (optimistic).
    /// On false the protocol has recorded whatever <see cref="Abort"/> must undo.</summary>
    protected abstract bool Access(TxnContext ctx, Table table, int row, bool write, out Span<byte> data, out int access, out AbortReason reason);

    protected virtual void AfterOp(TxnContext ctx, Table table, int access) { }

    /// <summary>Commits, or aborts and undoes everything and returns false.</summary>
    protected abstract bool Commit(TxnContext ctx, out AbortReason reason);

    protected abstract void Abort(TxnContext ctx);

    /// <summary>
    /// Allocates (or, when the attempt reserved them, keys) its inserted rows, fills and
    /// publishes them, each stamped with the attempt's id; called by a commit once nothing can
    /// abort it but a full table. Rows allocated before a full table is found stay unreachable
    /// (never published).
    /// </summary>
    internal static bool ApplyInserts(Database db, TxnContext ctx, List<Access>? history)
    {
        if (ctx.InsertCount == 0) return true;
        Span<int> rows = ctx.InsRow.AsSpan(0, ctx.InsertCount);
        Debug.Assert(!ctx.InsertRowsReserved || ctx.InsOp.AsSpan(0, ctx.InsertCount).SequenceEqual(ctx.Program.InsertsInOrder),
                     $"program {ctx.Program.Name}: the inserts made are not the ones rows were reserved for");
        // Each publish claims a random index slot by CAS, and a locked instruction waits for
        // its line: asking for every slot's line first makes the misses overlap instead.
        for (int i = 0; i < ctx.InsertCount; i++) db[ctx.Program.Ops[ctx.InsOp[i]].TableId].PrefetchIndex(ctx.InsKey[i]);
        for (int i = 0; i < ctx.InsertCount; i++)
        {
            var table = db[ctx.Program.Ops[ctx.InsOp[i]].TableId];
            if (ctx.InsertRowsReserved) table.Assign(rows[i], ctx.InsKey[i]);
            else if ((rows[i] = table.Allocate(ctx.InsKey[i])) < 0) return false;
        }
        for (int i = 0; i < ctx.InsertCount; i++)
        {
            var op = ctx.Program.Ops[ctx.InsOp[i]];
            var table = db[op.TableId];
            op.Body(table.Payload(rows[i]), ctx.Args, ctx.Results);
            Volatile.Write(ref table.Version(rows[i]), ctx.TxnId);
            if (!table.Publish(rows[i]))
                throw new InvalidOperationException($"program {ctx.Program.Name}, op {op.Name}: inserted key {ctx.InsKey[i]} already exists in table {table.Name}");
            history?.Add(new Access(HistoryRecorder.RowKey(table.Id, rows[i]), HistoryRecorder.NewRow, true));
        }
        return true;
    }

    /// <summary>The history entries of the access set: per row, the version first seen and whether it was overwritten.</summary>
    protected static void RecordAccesses(TxnContext ctx, List<Access> history, Func<TxnContext, int, bool> written)
    {
        for (int i = 0; i < ctx.AccessCount; i++)
            history.Add(new Access(HistoryRecorder.RowKey(ctx.AccTable[i], ctx.AccRow[i]), ctx.AccVersion[i], written(ctx, i)));
    }
}
