---------------------------- MODULE StealDBTrace ----------------------------
(***************************************************************************)
(* Trace validation: is a run of the engine a behaviour of Spec?          *)
(*                                                                         *)
(* A test build of the engine (src/Engine/Protocols/StealDB/StealDbTrace) *)
(* records, for a small run, the spec actions it performed, in order, with *)
(* their arguments.  tests/Contend.Coyote writes each recorded run as a    *)
(* module that EXTENDS this one and defines the run's transactions,        *)
(* records, programs and events.  TraceSpec follows the events one by one: *)
(* each step is the named action of StealDB.tla with the recorded          *)
(* arguments, and must agree with what the engine saw (the claim's CAS     *)
(* result, TRYLOCK's predecessor, the context a steal took, the version an *)
(* op read).  The trace is a behaviour of Spec when some behaviour of      *)
(* TraceSpec consumes every event: TraceMatchedReachable, violated.        *)
(*                                                                         *)
(* The engine records each action inside one lock that every recorded     *)
(* action takes, so the order of the records is an order in which the     *)
(* actions took effect; the multi-word steps (ExecuteOp: status, runnable  *)
(* queue, steal context; a timeout with its doom) are atomic in that build *)
(* and are not in production.  Trace validation checks the engine's order  *)
(* of steps and the values each step saw; Coyote, on the production build, *)
(* checks what the finer interleavings do to safety.                      *)
(***************************************************************************)
EXTENDS StealDBDeadlock, TLC

CONSTANT
    TraceLog    \* the recorded events, each [kind, w, op, ok, pred, from, tok, rec, read]; w is the
                \* worker, named by the transaction it runs; a field a kind does not use is Bot

VARIABLE
    l           \* the index of the next event of TraceLog to match

traceVars == <<vars, l>>

TypeTraceOK == l \in 1..(Len(TraceLog) + 1)

Consume == l' = l + 1
OpOnTop(w, o) == Busy(w) /\ Top(w).op = o

TraceInit == Init /\ l = 1

\* Alg. 1 lines 1-2: the owner's next runnable op, at the recorded position.
TraceOwnerRunNext(e) ==
    /\ e.kind = "OwnerRunNext"
    /\ cursor[e.w] <= Len(rq[e.w]) /\ rq[e.w][cursor[e.w]] = e.op[2]
    /\ OwnerRunNext(e.w)

TraceOwnerCloseOp(e) ==
    /\ e.kind = "OwnerCloseOp"
    /\ OwnerCloseOp(e.w, e.op[2])

\* Alg. 2 line 1: the CAS, which succeeded (ok) or found the op claimed.
TraceRunOpClaim(e) ==
    /\ e.kind = "RunOpClaim"
    /\ OpOnTop(e.w, e.op)
    /\ (opTid[e.op] = Owner(e.op)) = e.ok
    /\ RunOpClaim(e.w)

\* Lines 3-6: TRYLOCK returned the recorded predecessor (Bot: no node queued).
\* This is the contract STEALOP follows: the predecessor is the previous tail.
\* The engine's granted readers leave the queue, so Bot may also find
\* readers that hold, which the spec keeps at the head of its queue.
TraceRunOpTryLock(e) ==
    /\ e.kind = "RunOpTryLock"
    /\ OpOnTop(e.w, e.op)
    /\ RecOf(e.op) = e.rec
    /\ ~Doomed(Owner(e.op))
    /\ LET q == lockQ[RecOf(e.op)] IN
       IF e.pred = Bot THEN \A j \in 1..Len(q) : Shared(q[j], e.rec)
       ELSE q # <<>> /\ q[Len(q)] = e.pred
    /\ RunOpTryLock(e.w)

\* RunOpTryLock's other branch: the transaction is doomed, the op is skipped.
TraceRunOpSkip(e) ==
    /\ e.kind = "RunOpSkip"
    /\ OpOnTop(e.w, e.op)
    /\ Doomed(Owner(e.op))
    /\ RunOpTryLock(e.w)

\* The engine's wait ends only by the lock being granted (its first exit).
TraceWaiterProceed(e) ==
    /\ e.kind = "WaiterProceed"
    /\ OpOnTop(e.w, e.op)
    /\ Acquired(e.op)
    /\ WaiterProceed(e.w)

TraceWaiterTimeout(e) ==
    /\ e.kind = "WaiterTimeout"
    /\ OpOnTop(e.w, e.op)
    /\ WaiterTimeout(e.w)

\* The engine's deadlock detector aborted the wait: StealDBDeadlock.tla's
\* DetectorAbort, whose guard is that the waiting top frame lies on a cycle
\* of the spec's waits-for graph in the state the trace has reached.  Its
\* step is WaiterTimeout's, so NextStepProp still holds.
TraceDetectorAbort(e) ==
    /\ e.kind = "DetectorAbort"
    /\ OpOnTop(e.w, e.op)
    /\ DetectorAbort(e.w)

\* Lines 10-14: the op read the version e.read (a transaction, or InitVal) and
\* ended ok or hit a user abort.
TraceRunOpExecute(e) ==
    /\ e.kind = "RunOpExecute"
    /\ OpOnTop(e.w, e.op)
    /\ store[RecOf(e.op)] = e.read
    /\ RunOpExecute(e.w)
    /\ opStatus'[e.op] = IF e.ok THEN "ok" ELSE "aborted"

\* Alg. 3 by C1: the exchange took the context e.tok from the predecessor e.from.
TraceWaiterStealSwap(e) ==
    /\ e.kind = "WaiterStealSwap"
    /\ Busy(e.w) /\ Top(e.w).pred = e.from
    /\ stealCtx[e.from] = e.tok
    /\ StealTake(e.w)

TraceWaiterStealBack(e) ==
    /\ e.kind = "WaiterStealBack"
    /\ Busy(e.w) /\ stealCtx[Owner(Top(e.w).op)] = e.tok
    /\ WaiterStealBack(e.w)

\* Lines 6-11: the context's transaction still ran (ok), and its op e.op is pushed.
TraceWaiterStealRun(e) ==
    /\ e.kind = "WaiterStealRun"
    /\ Busy(e.w) /\ Top(e.w).pc = "steal"
    /\ LET tok == Top(e.w).hand.tok IN
         /\ IsRunning(tok[1]) = e.ok
         /\ e.ok => <<tok[1], rq[tok[1]][tok[2]]>> = e.op
    /\ WaiterStealRun(e.w)

TraceWaiterStealBasic(e) ==
    /\ e.kind = "WaiterStealBasic"
    /\ Busy(e.w)
    /\ stealCtx[e.tok[1]] = e.tok
    /\ <<e.tok[1], rq[e.tok[1]][e.tok[2]]>> = e.op
    /\ WaiterStealBasic(e.w)

\* Lines 5-12: commit (ok) or abort.
TraceOwnerDecide(e) ==
    /\ e.kind = "OwnerDecide"
    /\ Doomed(e.w) = ~e.ok
    /\ OwnerDecide(e.w)

TraceOwnerRelease(e) ==
    /\ e.kind = "OwnerRelease"
    /\ Granted(e.w, e.rec)
    /\ OwnerRelease(e.w)
    /\ lockQ'[e.rec] # lockQ[e.rec]

TraceOwnerFinish(e) ==
    /\ e.kind = "OwnerFinish"
    /\ OwnerFinish(e.w)

\* The event at l names its action; every other Trace action fails on its kind.
TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         \/ TraceOwnerRunNext(e) \/ TraceOwnerCloseOp(e) \/ TraceRunOpClaim(e) \/ TraceRunOpTryLock(e)
         \/ TraceRunOpSkip(e) \/ TraceWaiterProceed(e) \/ TraceWaiterTimeout(e) \/ TraceDetectorAbort(e)
         \/ TraceRunOpExecute(e)
         \/ TraceWaiterStealSwap(e) \/ TraceWaiterStealBack(e) \/ TraceWaiterStealRun(e)
         \/ TraceWaiterStealBasic(e) \/ TraceOwnerDecide(e) \/ TraceOwnerRelease(e) \/ TraceOwnerFinish(e)
    /\ Consume

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* Each Trace action conjoins one action of Spec and adds only guards, so a
\* behaviour of TraceSpec is one of Spec; checked, not argued.
NextStepProp == [][Next]_vars

\* Violated exactly when some behaviour of Spec matches the whole trace.
TraceMatchedReachable == l <= Len(TraceLog)
=============================================================================
