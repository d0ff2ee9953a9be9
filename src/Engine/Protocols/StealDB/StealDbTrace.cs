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

/// <summary>
/// Trace recording for trace validation (specs/StealDB/StealDBTrace.tla; tests only). With a
/// trace set, every step the engine records runs inside <see cref="Gate"/>, and no step waits
/// while inside it, so the order of <see cref="Events"/> is an order in which the steps took
/// effect and each step saw the state the previous ones left. Steps that write several words
/// (ExecuteOp's outcome, runnable queue and steal context) are then atomic, as the spec's actions
/// are; in production they are not, which the Coyote tests explore.
/// </summary>
internal sealed class StealDbTrace
{
    internal readonly object Gate = new();

    /// <summary>The steps in order; read once the workers have stopped.</summary>
    public List<StealDbEvent> Events { get; } = new();

    /// <summary>Called inside <see cref="Gate"/>.</summary>
    internal void Add(StealDbEvent e) => Events.Add(e);
}

/// <summary>One recorded step: holds the trace's gate from construction to Dispose; nothing
/// without a trace (one null test).</summary>
internal readonly ref struct TracedStep
{
    readonly StealDbTrace? _trace;

    public TracedStep(StealDbTrace? trace)
    {
        _trace = trace;
        if (trace is not null) Monitor.Enter(trace.Gate);
    }

    public void Dispose()
    {
        if (_trace is not null) Monitor.Exit(_trace.Gate);
    }
}
