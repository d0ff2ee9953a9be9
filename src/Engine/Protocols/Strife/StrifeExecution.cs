using System.Diagnostics;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Strife;

/// <summary>
/// The conflict-free phase (StrifeExec.tla ClusterOp): a clustered transaction touches rows
/// no other cluster touches, and its own cluster runs one transaction at a time, so it runs
/// with no concurrency control at all: no lock word is read or written.
/// </summary>
/// <remarks>
/// Nothing else can abort a clustered transaction, so it keeps before-images only for its own
/// logic's aborts: a body's UserAbort, a missing key, a full table at commit. When the program
/// declares that its bodies never abort, the other two are ruled out before the first write
/// (the analysis found every row, and the rows its inserts will fill are reserved up front),
/// and it writes in place with no image at all: at TPC-C's row sizes the images were about a
/// third of a clustered transaction's time (a profile of one warehouse, 2026-11-23). Decided
/// here, not in the paper, which does not say how its conflict-free phase undoes a logic abort.
/// </remarks>
internal sealed class Unlocked(ProtocolSetup setup) : LockingProtocol(setup)
{
    readonly MutantFlag _noReserve = new(setup.Mutants, StrifeMutants.ImagelessNoReserve);

    public override string Name => "Strife/cluster";

    public override Outcome Run(TxnContext ctx, out AbortReason reason)
    {
        ctx.BeginAttempt();
        Debug.Assert(ctx.RowsKnown && ctx.Program.Ops.All(o => o.Mode == AccessMode.Insert || ctx.OpRow[o.Index] >= 0),
                     $"program {ctx.Program.Name}: clustered with a row the analysis did not find");
        if (!ctx.Program.BodiesMayAbort && !_noReserve && !ReserveInserts(ctx))
        {
            reason = AbortReason.TableFull;
            return Outcome.UserAborted;
        }
        return RunOps(ctx, out reason);
    }

    /// <summary>Reserves a row for each insert the transaction will make; false, with nothing
    /// written, when a table is full (rows reserved before it stay unreachable, as a commit's do).</summary>
    bool ReserveInserts(TxnContext ctx)
    {
        var inserts = ctx.Program.InsertsInOrder;
        for (int i = 0; i < inserts.Length; i++)
        {
            ctx.InsertRow[i] = Db[ctx.Program.Ops[inserts[i]].TableId].Reserve();
            if (ctx.InsertRow[i] < 0) return false;
        }
        ctx.InsertRowsReserved = true;
        return true;
    }

    protected override bool KeepsImages(TxnContext ctx) => !(ctx.InsertRowsReserved || _noReserve && !ctx.Program.BodiesMayAbort);

    /// <summary>
    /// An attempt that wrote in place without images cannot be undone, so a key its insert finds
    /// taken is not an abort here but the program's bug, raised as a throwing body's is (the
    /// claims given back, the writes left). Decided here: the inserted keys of NewOrder and
    /// Payment are computed from rows the transaction writes first, so they cannot be claimed
    /// before the first write, and keeping images for every clustered program with inserts would
    /// give back the third of TPC-C's clustered time that going without them saved. A program
    /// whose inserts may collide is built without <see cref="ProgramBuilder.BodiesNeverAbort"/>:
    /// then its clustered attempts keep images, and a duplicate ends it as every protocol does.
    /// </summary>
    protected override Vote Prepare(TxnContext ctx)
    {
        var vote = base.Prepare(ctx);
        if (vote.Reason == AbortReason.DuplicateKey && !KeepsImages(ctx))
            throw new DuplicateKeyException(ctx.Duplicate!, "its clustered attempt wrote in place without before-images (the program was built with BodiesNeverAbort), so its writes stay");
        return vote;
    }

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason)
    {
        reason = AbortReason.None;
        return true; // the mode stays None, so the release of LockingProtocol touches nothing
    }
}

/// <summary>
/// The residual phase (StrifeExec.tla ResidualOp with CC = "nowaitThenWaitDie"): 2PL that
/// aborts at the first held lock for a transaction's first <c>maxNoWait</c> conflict aborts
/// (the paper's NO_WAIT), and waits-or-dies by age after. NO_WAIT with retry alone can
/// livelock (StrifeExecTermination); WaitDie after a bounded number of NO_WAIT aborts cannot
/// (StrifeExecRetryThenWaitDie): waits only go from older to younger, and the NO_WAIT aborts
/// of each transaction are bounded.
/// </summary>
internal sealed class NoWaitThenWaitDie(ProtocolSetup setup, int maxNoWait) : LockingProtocol(setup)
{
    readonly MutantFlag _abortKeepsLocks = new(setup.Mutants, StrifeMutants.AbortKeepsLocks);

    public override string Name => "Strife/residual";

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason) =>
        LockOrDie(ctx, state, table, access, exclusive, ctx.ConflictRetries < maxNoWait ? OnConflict.Abort : OnConflict.DieIfYounger, out reason);

    protected override void Abort(TxnContext ctx)
    {
        if (_abortKeepsLocks) RestoreImages(ctx); // the twin: the locks stay, held by no attempt
        else base.Abort(ctx);
    }
}
