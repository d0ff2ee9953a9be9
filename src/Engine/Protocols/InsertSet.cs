using System.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols;

/// <summary>
/// An attempt's inserts as participant steps, shared by every protocol: prepare makes the rows
/// and claims their keys without making them reachable, commit reveals them, abort gives the
/// keys back. Everything that can refuse an insert (a full table, a body's UserAbort, a key
/// already there) or throw (a body) happens in prepare, before anything is visible, so an
/// attempt that fails there leaves nothing behind.
/// </summary>
internal static class InsertSet
{
    /// <summary>
    /// Allocates (or, when the attempt reserved them, keys) the inserted rows, runs their
    /// bodies into them, stamps them with the attempt's id (and the record word too when
    /// <paramref name="versionInWord"/>: Silo's word is the row's version), then claims their
    /// keys in (table, key) order (<see cref="Table.Claim"/>). Call once the attempt waits for
    /// nothing else. Rows allocated stay unreachable whatever the vote, and an abort gives them back.
    /// Two inserts of one key in the attempt are a duplicate, the later op named, the earlier as
    /// <see cref="DuplicateKey.InsertedBy"/>. A claim waited for ends when the attempt gives up
    /// (<see cref="TxnContext.GivingUp"/>): a no vote of <see cref="AbortReason.Deadline"/>.
    /// </summary>
    /// <param name="waitForClaims">false for a participant across partitions: another attempt's
    /// claim on a key is then a no vote (LockBusy) instead of a wait (<see cref="Table.Claim"/>)</param>
    public static Vote Prepare(Database db, TxnContext ctx, bool versionInWord, bool waitForClaims = true)
    {
        int n = ctx.InsertCount;
        if (n == 0) return Vote.Yes;
        var program = ctx.Program;
        Debug.Assert(ctx.InsertsClaimed == 0, $"program {program.Name}: inserts prepared twice in one attempt");
        Debug.Assert(!ctx.InsertRowsReserved || ctx.InsertOp.AsSpan(0, n).SequenceEqual(program.InsertsInOrder),
                     $"program {program.Name}: the inserts made are not the ones rows were reserved for");
        // Each claim takes a random index slot by CAS, and a locked instruction waits for its
        // line: asking for every slot's line first, with the rows made and filled in between,
        // makes the misses overlap instead. So do the rows' own: every row is made (its key
        // stored in its header) before the first body runs.
        for (int i = 0; i < n; i++) db[program.Ops[ctx.InsertOp[i]].TableId].PrefetchIndex(ctx.InsertKey[i]);
        for (int i = 0; i < n; i++)
        {
            var table = db[program.Ops[ctx.InsertOp[i]].TableId];
            if (ctx.InsertRowsReserved) table.Assign(ctx.InsertRow[i], ctx.InsertKey[i]);
            else if ((ctx.InsertRow[i] = table.Allocate(ctx.InsertKey[i])) < 0) return new Vote(AbortReason.TableFull);
            else ctx.InsertRowsMade = i + 1;
        }
        SortByKey(ctx);
        // Two inserts of one key in one attempt: the second would wait for the first's claim,
        // which only this attempt's end gives up. Sorted, they are neighbours.
        for (int k = 1; k < n; k++)
        {
            int earlier = ctx.InsertOrder[k - 1], later = ctx.InsertOrder[k];
            var op = program.Ops[ctx.InsertOp[later]];
            if (ctx.InsertKey[earlier] != ctx.InsertKey[later] || program.Ops[ctx.InsertOp[earlier]].TableId != op.TableId) continue;
            var first = program.Ops[Math.Min(ctx.InsertOp[earlier], ctx.InsertOp[later])];
            var second = program.Ops[Math.Max(ctx.InsertOp[earlier], ctx.InsertOp[later])];
            ctx.Duplicate = new DuplicateKey(program.Name, second.Name, db[op.TableId].Name, ctx.InsertKey[later]) { InsertedBy = first.Name };
            return new Vote(AbortReason.DuplicateKey);
        }
        // Then one insert at a time: filled, then claimed. A claim's CAS waits for the stores
        // before it, so they drain one row at a time between claims (filling every row first and
        // claiming after ran TPC-C 5-7% slower on one worker; making each row just before its
        // fill, 15% slower under Strife). The bodies read only args and the results of the ops
        // that are not inserts, so their order does not matter.
        for (int k = 0; k < n; k++)
        {
            int i = ctx.InsertOrder[k];
            var op = program.Ops[ctx.InsertOp[i]];
            var table = db[op.TableId];
            int row = ctx.InsertRow[i];
            long result = program.RunBody(op, write: true, table.Payload(row), ctx.Args, ctx.Results);
            if (result == TxnProgram.UserAbort) return new Vote(AbortReason.User);
            ctx.Results[op.Index] = result;
            Volatile.Write(ref table.Version(row), ctx.TxnId);
            if (versionInWord) Volatile.Write(ref table.Word(row), ctx.TxnId);
            int slot = table.Claim(row, waitForClaims ? ctx : null);
            if (slot == Table.ClaimedByAnother) return new Vote(AbortReason.LockBusy);
            if (slot == Table.GaveUp) return new Vote(AbortReason.Deadline);
            if (slot < 0)
            {
                ctx.Duplicate = new DuplicateKey(program.Name, op.Name, table.Name, ctx.InsertKey[i]);
                return new Vote(AbortReason.DuplicateKey);
            }
            ctx.InsertSlot[i] = slot;
            ctx.InsertsClaimed = k + 1;
        }
        return Vote.Yes;
    }

    /// <summary>Makes every claimed row reachable, and records it in the history.</summary>
    public static void Commit(Database db, TxnContext ctx, List<Access>? history)
    {
        Debug.Assert(ctx.InsertsClaimed == ctx.InsertCount, $"program {ctx.Program.Name}: inserts committed without every key claimed");
        for (int k = 0; k < ctx.InsertsClaimed; k++)
        {
            int i = ctx.InsertOrder[k];
            var table = db[ctx.Program.Ops[ctx.InsertOp[i]].TableId];
            table.Reveal(ctx.InsertSlot[i]);
            history?.Add(new Access(HistoryRecorder.RowKey(table.Id, ctx.InsertRow[i]), HistoryRecorder.NewRow, true));
        }
        ctx.InsertsClaimed = 0;
        ctx.InsertRowsMade = 0;
    }

    /// <summary>Gives back every key the attempt claimed, then every row it made for an insert
    /// that claimed no key; nothing else of an insert was ever visible. A row whose key was
    /// claimed and is now retracted stays used: the tombstone its claim leaves takes an index
    /// slot for good, and a table has more slots than rows only while each such slot keeps its
    /// row (<see cref="Table.Retract"/>). So a refused insert (a key already there, a duplicate in
    /// the attempt, a full table, a body's abort before its claim, a deadline) gives its row back,
    /// and one whose attempt aborted after its claim does not. (Rows a batch reserved up front stay the batch's.)</summary>
    public static void Abort(Database db, TxnContext ctx)
    {
        int claimed = ctx.InsertsClaimed;
        for (int k = 0; k < claimed; k++)
        {
            int i = ctx.InsertOrder[k];
            db[ctx.Program.Ops[ctx.InsertOp[i]].TableId].Retract(ctx.InsertSlot[i]);
        }
        ctx.InsertsClaimed = 0;
        int made = ctx.InsertRowsMade;
        if (made == ctx.InsertCount)
        {
            // Every row was made, so the inserts were sorted: the unclaimed ones follow the claimed in InsertOrder.
            for (int k = claimed; k < made; k++)
            {
                int i = ctx.InsertOrder[k];
                db[ctx.Program.Ops[ctx.InsertOp[i]].TableId].Release(ctx.InsertRow[i]);
            }
        }
        else
        {
            for (int i = 0; i < made; i++) db[ctx.Program.Ops[ctx.InsertOp[i]].TableId].Release(ctx.InsertRow[i]); // the table filled: none claimed
        }
        ctx.InsertRowsMade = 0;
    }

    /// <summary>Insertion sort of the inserts by (table, key) into <see cref="TxnContext.InsertOrder"/>:
    /// the one order every attempt claims keys in. A program's inserts usually come in that order
    /// already (TPC-C's order lines by line number), so it costs a compare each.</summary>
    static void SortByKey(TxnContext ctx)
    {
        var ops = ctx.Program.Ops;
        int n = ctx.InsertCount;
        Span<int> tables = stackalloc int[n];
        for (int i = 0; i < n; i++) tables[i] = ops[ctx.InsertOp[i]].TableId;
        for (int i = 0; i < n; i++)
        {
            int table = tables[i];
            long key = ctx.InsertKey[i];
            int j = i - 1;
            while (j >= 0 && (tables[ctx.InsertOrder[j]] > table || tables[ctx.InsertOrder[j]] == table && ctx.InsertKey[ctx.InsertOrder[j]] > key))
            {
                ctx.InsertOrder[j + 1] = ctx.InsertOrder[j];
                j--;
            }
            ctx.InsertOrder[j + 1] = i;
        }
    }
}
