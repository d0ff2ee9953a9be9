using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>The actions of specs/ReactDB/ReactDB.tla that the engine records, one per step it takes.</summary>
internal enum ReactDbStep
{
    Submit, Dequeue, ReadOp, WriteLoad, WriteStore, Call, SyncReturn, FinishLogic, Complete,
    BeginCommit, LockStep, ValidateStep, WriteStep, AbortAll,
}

/// <summary>One recorded step. A node is named by its root's attempt (<see cref="RootTransaction.TxnId"/>)
/// and its index in the attempt's tree (0 for the root, then in the order the calls were made).</summary>
/// <param name="Reactor">the acting node's reactor</param>
/// <param name="Container">the acting node's container; LockStep, ValidateStep, WriteStep: the container the step is in</param>
/// <param name="Callee">Call: the called node's index</param>
/// <param name="Key">ReadOp, WriteLoad, WriteStore: the row, as the history names it (table and row)</param>
/// <param name="Read">ReadOp: the version read, the attempt that wrote it (0: the row's initial value)</param>
/// <param name="Ok">Dequeue: the context was taken (false: the conservative abort, or a root already
/// failed); LockStep, ValidateStep: the container's step succeeded</param>
internal readonly record struct ReactDbEvent(
    ReactDbStep Step, long Root, int Node, int Reactor, int Container, int Callee = -1, long Key = -1, long Read = 0, bool Ok = true);

/// <summary>ReactDB's recorded steps (specs/ReactDB/ReactDBTrace.tla; tests only).</summary>
internal sealed class ReactDbTrace : StepTrace<ReactDbEvent>;
