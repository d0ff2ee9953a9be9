using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.StealDB;

/// <summary>The actions of specs/StealDB/StealDB.tla that the engine records, one per step it
/// takes, and StealDBDeadlock.tla's DetectorAbort.</summary>
internal enum StealDbAction
{
    OwnerRunNext, OwnerCloseOp, RunOpClaim, RunOpTryLock, RunOpSkip, WaiterProceed, WaiterTimeout,
    RunOpExecute, WaiterStealSwap, WaiterStealBack, WaiterStealRun, WaiterStealBasic,
    OwnerDecide, OwnerRelease, OwnerFinish, DetectorAbort,
}

/// <summary>One recorded step. Transactions are attempt ids (<see cref="Runtime.TxnContext.TxnId"/>),
/// 0 for none; ops are 0-based indices into their transaction's program.</summary>
/// <param name="Worker">the worker that took the step, named as the spec names it: by the transaction it runs</param>
/// <param name="Tid">the transaction of the op the step is about</param>
/// <param name="Ok">RunOpClaim: the CAS succeeded; RunOpExecute: no user abort; WaiterStealRun: the
/// context's transaction still ran; OwnerDecide: commit</param>
/// <param name="Predecessor">RunOpTryLock: the transaction TRYLOCK returned as the previous tail</param>
/// <param name="From">WaiterStealSwap: whose word the context was taken from</param>
/// <param name="Token">the context taken: its transaction and 1-based runnable-queue position</param>
/// <param name="Row">RunOpTryLock, OwnerRelease: the row's key in the history (table and row)</param>
/// <param name="Read">RunOpExecute: the version the op read (0: the row's initial value)</param>
internal readonly record struct StealDbEvent(
    StealDbAction Action, long Worker, long Tid = 0, int Op = -1, bool Ok = false, long Predecessor = 0,
    long From = 0, (long Tid, int Position) Token = default, long Row = -1, long Read = 0);

/// <summary>StealDB's recorded steps (specs/StealDB/StealDBTrace.tla; tests only).</summary>
internal sealed class StealDbTrace : StepTrace<StealDbEvent>;
