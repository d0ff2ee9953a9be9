using Contend.Engine.Locks;
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
internal sealed class Ordered(ProtocolSetup setup) : LockingProtocol(setup)
{
    public override string Name => TwoPhaseLockingProtocols.Ordered.Name;

    /// <summary>2PL's state and, per access, whether a later op writes the row: the mode its
    /// up-front lock is taken in.</summary>
    sealed class OrderedState : LockingState
    {
        public readonly bool[] WantsExclusive = new bool[TxnContext.MaxOps];
    }

    readonly MutantFlag _inProgramOrder = new(setup.Mutants, TwoPhaseLockingMutants.OrderedInProgramOrder);

    private protected override LockingState NewState() => new OrderedState();

    public override Outcome Run(TxnContext ctx, out AbortReason reason)
    {
        var program = ctx.Program;
        if (program.HasKeyDependencies)
            throw new InvalidOperationException($"protocol Ordered: program {program.Name} computes keys from earlier ops' results, so its locks cannot be taken up front");
        ctx.BeginAttempt();
        var state = (OrderedState)State(ctx);
        ReadOnlySpan<long> args = ctx.Args;
        foreach (var op in program.Ops)
        {
            if (op.Mode == AccessMode.Insert) continue;
            var table = Db[op.TableId];
            int row = table.Find(op.ResolveKey(args, ctx.Results));
            if (row < 0)
            {
                ctx.AccessCount = 0;
                reason = AbortReason.KeyNotFound;
                return Outcome.UserAborted;
            }
            int access = ctx.FindAccess(table.Id, row);
            if (access < 0)
            {
                access = AddAccess(ctx, state, table.Id, row);
                state.WantsExclusive[access] = false;
            }
            if (op.Writes(args)) state.WantsExclusive[access] = true;
        }
        Span<int> order = ctx.Scratch.AsSpan(0, ctx.AccessCount);
        for (int i = 0; i < order.Length; i++) order[i] = i;
        if (!_inProgramOrder) SortByRow(ctx, order); // the twin locks in the program's order
        foreach (int i in order)
        {
            var table = Db[ctx.AccessTable[i]];
            var wait = new SpinWait();
            while (TryLockWord(ctx, state, table, i, state.WantsExclusive[i], out _) != LockResult.Acquired)
            {
                if (ctx.GivingUp)
                {
                    Abort(ctx); // releases the locks taken so far; nothing is written yet
                    reason = AbortReason.Deadline;
                    return Outcome.Aborted;
                }
                Spin.Once(ref wait);
            }
            ctx.AccessVersion[i] = Volatile.Read(ref table.Version(ctx.AccessRow[i]));
        }
        return RunOps(ctx, out reason);
    }

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason) =>
        throw new InvalidOperationException($"protocol Ordered: program {ctx.Program.Name} reached a row it did not lock up front");
}
