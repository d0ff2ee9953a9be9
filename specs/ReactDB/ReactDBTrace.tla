---------------------------- MODULE ReactDBTrace ----------------------------
(***************************************************************************)
(* Trace validation: is a run of the engine a behaviour of Spec?          *)
(*                                                                         *)
(* The engine (src/Engine/Protocols/ReactDB), with a trace set, records    *)
(* every step it takes as the action of ReactDB.tla it implements          *)
(* (ReactDbStep), naming the node that took it, and for ReadOp the row and *)
(* the version read.  Each recorded step runs inside one gate, and none    *)
(* waits inside it, so the events are in an order in which the steps took  *)
(* effect, and a step that writes several words (a container's locks, an   *)
(* install) is one step, as the spec's.  tests/Contend.Coyote (traces)     *)
(* writes each recorded run as a module that EXTENDS this one and defines  *)
(* the run's tree of nodes (one root per attempt), reactors, keys and      *)
(* events.  A node's Ops are the operations it was recorded taking, so the *)
(* trace checks the protocol's steps, not a program fixed in advance.      *)
(* TraceSpec follows the events one by one: each is the named action of    *)
(* ReactDB.tla with the recorded arguments, and a value read must be the   *)
(* one the spec's store holds.  The trace is a behaviour of Spec when some *)
(* behaviour of TraceSpec consumes every event: TraceMatchedReachable,     *)
(* violated.                                                               *)
(*                                                                         *)
(* Where the engine and the spec differ, and what is recorded:             *)
(*  - The engine's queue is its executor's, whose threads start what they  *)
(*    popped in any order, and a root's retry starts on its own thread at  *)
(*    once: the spec's Dequeue takes any queued node (D10).  A root's      *)
(*    Submit and Dequeue are recorded together.                            *)
(*  - A read of a row the context already has returns the context's copy   *)
(*    and is not recorded (the spec's ReadOp of a written key records      *)
(*    nothing either; a second read of a key only read would re-read the   *)
(*    store in the spec).  A write records WriteLoad and WriteStore        *)
(*    together: the context is one thread's (D2, D3).                     *)
(*  - A synchronous callee's Complete is recorded just before its caller   *)
(*    completes (or begins its commit): its own children are its caller's  *)
(*    to wait for, so it is complete by then, and nothing the spec reads   *)
(*    sees the difference (SyncReturn takes a waiting callee).             *)
(*  - A user abort and a throwing function are outside the spec (D7): the  *)
(*    recorded workloads have neither.                                     *)
(***************************************************************************)
EXTENDS ReactDB, TLC

CONSTANT
    TraceLog    \* the recorded events, each [kind, n, c, k, v, ok]: n the node that took the step
                \* (a step of the commit: its root), c the container a step of the commit is in,
                \* k the row (ReadOp, WriteLoad, WriteStore; 0 otherwise), v the value read
                \* (ReadOp: a root or InitVal), ok the step's outcome (Dequeue: the context taken;
                \* LockStep, ValidateStep: the container passed)

VARIABLE
    l           \* the index of the next event of TraceLog to match

traceVars == <<vars, l>>

TypeTraceOK == l \in 1..(Len(TraceLog) + 1)

Consume == l' = l + 1

TraceInit == Init /\ l = 1

TraceSubmit(e) ==
    /\ e.kind = "Submit"
    /\ Submit(e.n)

\* Alg. 1 lines 5-14: the recorded node, with the branch the engine took.
TraceDequeue(e) ==
    /\ e.kind = "Dequeue"
    /\ DequeueOne(Cont(e.n), e.n)
    /\ e.ok <=> holder'[RootOf[e.n]][Cont(e.n)] = e.n

\* The value read is the one the store holds.
TraceReadOp(e) ==
    /\ e.kind = "ReadOp"
    /\ Busy(e.n) /\ CurOp(e.n) = [op |-> "r", key |-> e.k]
    /\ store[e.k] = e.v
    /\ ReadOp(e.n)

TraceWriteLoad(e) ==
    /\ e.kind = "WriteLoad"
    /\ Busy(e.n) /\ CurOp(e.n) = [op |-> "w", key |-> e.k]
    /\ WriteLoad(e.n)

TraceWriteStore(e) ==
    /\ e.kind = "WriteStore"
    /\ WriteStore(e.n)

TraceCall(e) ==
    /\ e.kind = "Call"
    /\ Call(e.n)

TraceSyncReturn(e) ==
    /\ e.kind = "SyncReturn"
    /\ SyncReturn(e.n)

TraceFinishLogic(e) ==
    /\ e.kind = "FinishLogic"
    /\ FinishLogic(e.n)

TraceComplete(e) ==
    /\ e.kind = "Complete"
    /\ Complete(e.n)

\* Alg. 3, on root e.n's thread, in container e.c where it names one.
TraceBeginCommit(e) ==
    /\ e.kind = "BeginCommit"
    /\ BeginCommit(e.n)

TraceLockStep(e) ==
    /\ e.kind = "LockStep"
    /\ At(e.n) = e.c
    /\ LockStep(e.n)
    /\ e.ok <=> phase'[e.n] # "aborting"

TraceValidateStep(e) ==
    /\ e.kind = "ValidateStep"
    /\ At(e.n) = e.c
    /\ ValidateStep(e.n)
    /\ e.ok <=> phase'[e.n] # "aborting"

TraceWriteStep(e) ==
    /\ e.kind = "WriteStep"
    /\ At(e.n) = e.c
    /\ WriteStep(e.n)

TraceAbortAll(e) ==
    /\ e.kind = "AbortAll"
    /\ AbortAll(e.n)

\* The event at l names its action; every other Trace action fails on its kind.
TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         \/ TraceSubmit(e) \/ TraceDequeue(e) \/ TraceReadOp(e) \/ TraceWriteLoad(e)
         \/ TraceWriteStore(e) \/ TraceCall(e) \/ TraceSyncReturn(e) \/ TraceFinishLogic(e)
         \/ TraceComplete(e) \/ TraceBeginCommit(e) \/ TraceLockStep(e) \/ TraceValidateStep(e)
         \/ TraceWriteStep(e) \/ TraceAbortAll(e)
    /\ Consume

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* Each Trace action conjoins one action of Spec and adds only guards, so a
\* behaviour of TraceSpec is one of Spec; checked, not argued.
NextStepProp == [][Next]_vars

\* Violated exactly when some behaviour of Spec matches the whole trace.
TraceMatchedReachable == l <= Len(TraceLog)
=============================================================================
