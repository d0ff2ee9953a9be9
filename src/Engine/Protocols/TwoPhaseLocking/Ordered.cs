using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// 2PL with every lock taken before the first op runs, in one global order (table, then
/// row), waiting for each: no cycle of waits can form, so nothing aborts but the program's
/// own logic. It needs the whole key set up front, so it refuses a program whose keys
/// depend on earlier ops' results (Strife's LockOrdered baseline has the same limit).
/// </summary>
public sealed class Ordered(ProtocolSetup setup) : LockingProtocol(setup)
{
    public override string Name => "Ordered";

    public override Outcome Run(TxnContext ctx, out AbortReason reason)
    {
        var program = ctx.Program;
        if (program.HasKeyDependencies)
            throw new InvalidOperationException($"protocol Ordered: program {program.Name} computes keys from earlier ops' results, so its locks cannot be taken up front");
        ctx.BeginAttempt();
        ReadOnlySpan<long> args = ctx.Args;
        foreach (var op in program.Ops)
        {
            if (op.Mode == AccessMode.Insert) continue;
            var table = Db[op.TableId];
            int row = table.Find(op.ResolveKey(args, ctx.Results));
            if (row < 0)
            {
                ctx.AccessCount = 0;
                reason = AbortReason.User;
                return Outcome.UserAborted;
            }
            int access = ctx.FindAccess(table.Id, row);
            if (access < 0) access = ctx.AddAccess(table.Id, row);
            if (op.Writes(args)) ctx.AccExtra[access] = 1; // wanted exclusive
        }
        SortAccessesByRow(ctx);
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            var table = Db[ctx.AccTable[i]];
            var wait = new SpinWait();
            while (TryLockWord(ctx, table, i, ctx.AccExtra[i] == 1, out _) != LockResult.Acquired) Spin.Once(ref wait);
            ctx.AccVersion[i] = Volatile.Read(ref table.Version(ctx.AccRow[i]));
        }
        return RunOps(ctx, out reason);
    }

    /// <summary>Insertion sort by (table, row): access sets are at most a few dozen rows.</summary>
    static void SortAccessesByRow(TxnContext ctx)
    {
        for (int i = 1; i < ctx.AccessCount; i++)
        {
            int t = ctx.AccTable[i], r = ctx.AccRow[i];
            int extra = ctx.AccExtra[i];
            int j = i - 1;
            while (j >= 0 && (ctx.AccTable[j] > t || (ctx.AccTable[j] == t && ctx.AccRow[j] > r)))
            {
                ctx.AccTable[j + 1] = ctx.AccTable[j];
                ctx.AccRow[j + 1] = ctx.AccRow[j];
                ctx.AccExtra[j + 1] = ctx.AccExtra[j];
                j--;
            }
            ctx.AccTable[j + 1] = t;
            ctx.AccRow[j + 1] = r;
            ctx.AccExtra[j + 1] = extra;
        }
    }

    protected override bool Lock(TxnContext ctx, Table table, int access, bool exclusive, out AbortReason reason) =>
        throw new InvalidOperationException($"protocol Ordered: program {ctx.Program.Name} reached a row it did not lock up front");
}
