--------------------------- MODULE StealDBDeadlock ---------------------------
(***************************************************************************)
(* Deadlock detection for StealDB's queue locks (the paper's               *)
(* Section 6 leaves it as future work, and C2's wait threshold is all      *)
(* StealDB.tla has).  A detector aborts a waiting op only when it lies on  *)
(* a cycle of the waits-for graph below, and the graph sees the waits the  *)
(* paper's design hides:                                                   *)
(*  - a worker nested in a stolen op waits on behalf of that op's          *)
(*    transaction, and every frame below it on the same thread waits for   *)
(*    it to return (a thread runs one frame at a time);                    *)
(*  - a queued lock context of a waiter that gave up (C2) stays in the     *)
(*    queue, and those behind it wait for it to pass;                      *)
(*  - a transaction releases only once no op of it is in flight (C4), so   *)
(*    the head of a queue waits for every frame running its transaction's *)
(*    ops, on whatever thread.                                             *)
(*                                                                         *)
(* Decision: an explicit graph with three kinds of node rather than a      *)
(* transaction-level waits-for graph.  Transaction-level edges are wrong   *)
(* here both ways.  "The worker's transaction waits for the lock holder"   *)
(* misses a cycle through a stolen op (a worker whose nested frame waits   *)
(* behind its own transaction: MutantSucc below, which TLC shows never     *)
(* terminates without the threshold).  "The stolen op's transaction waits" *)
(* ties that transaction's other, unrelated waits into the cycle, and a    *)
(* detector then aborts a transaction that would have gone on.  Nodes:     *)
(*   <<"R", t>>       t reaching its release phase (Alg. 1 lines 5-14);    *)
(*   <<"F", w, k>>    frame k of worker w's RUNOP stack (innermost last);  *)
(*   <<"C", t, r>>    t's lock context in r's queue.                        *)
(* Every edge n -> m reads "n cannot move before m does", and a node with  *)
(* several edges waits for all of them (the AND model), so a cycle is a    *)
(* deadlock: CycleStableProp checks that nothing but an abort ever breaks  *)
(* one, which is what makes an abort on a cycle never needless.            *)
(*                                                                         *)
(* The victim: a top frame that waits for its lock and lies on a cycle;    *)
(* its op aborts exactly as a timed-out one does (WaiterTimeout), so C2's  *)
(* context handling and C4's release rule are reused unchanged.  Any such  *)
(* frame may be chosen here; an engine must pick one by a fixed rule.  A   *)
(* cycle whose frames are not on top yet (a frame above runs a stolen op   *)
(* that is not blocked) waits until that op returns.                       *)
(***************************************************************************)
EXTENDS StealDB, TLC

\* The graph is defined over the three variables it reads, given as
\* arguments, so that CycleStableProp can build the next state's graph from
\* stack', lockQ' and phase' (TLC does not finish when it primes the
\* recursive operators below).
FramesIn(st) == UNION {{<<w, k>> : k \in 1..Len(st[w])} : w \in Txn}
HeadIs(q, t) == q # <<>> /\ Head(q) = t
PosIn(t, q) == IF InQueue(t, q) THEN CHOOSE i \in 1..Len(q) : q[i] = t ELSE 0

\* What node n waits for, with stack st, lock queues lq and phases ph.
SuccIn(n, st, lq, ph) ==
    CASE n[1] = "R" ->
           \* Releasing waits for every op of n[2] in flight, on any thread.
           IF ph[n[2]] = "run"
           THEN {<<"F", x[1], x[2]>> : x \in {y \in FramesIn(st) : Owner(st[y[1]][y[2]].op) = n[2]}}
           ELSE {}
      [] n[1] = "F" ->
           LET w == n[2] IN LET k == n[3] IN LET f == st[w][k] IN
           \* A frame under another returns only after it.
           (IF k < Len(st[w]) THEN {<<"F", w, k + 1>>} ELSE {})
           \cup
           \* A frame in the wait loop (waiting, or stealing from it) needs its own context at the head.
           (IF f.pc \in {"wait", "stealClear", "steal"} /\ ~HeadIs(lq[RecOf(f.op)], Owner(f.op))
            THEN {<<"C", Owner(f.op), RecOf(f.op)>>} ELSE {})
      [] OTHER ->
           LET t == n[2] IN LET r == n[3] IN LET q == lq[r] IN LET i == PosIn(t, q) IN
           \* Behind every context ahead: with shared locks a writer waits for all
           \* the readers ahead, not only for the one it follows (with exclusive
           \* ones the edges past the predecessor add no cycle).
           IF ~GrantedIn(t, r, q) THEN {<<"C", q[j], r>> : j \in 1..(i - 1)}
           ELSE IF ph[t] = "run" THEN {<<"R", t>>}        \* a holder releases at its decision
           ELSE {}                                         \* released as soon as it is granted

\* The nodes present.
LiveIn(st, lq) ==
    ({"R"} \X Txn)
    \cup {<<"F", x[1], x[2]>> : x \in FramesIn(st)}
    \cup {<<"C", p[1], p[2]>> : p \in {q \in Txn \X Rec : InQueue(q[1], lq[q[2]])}}

\* The graph as a set of edges <<n, m>>.  TLCEval makes TLC build each set
\* once where it is bound, instead of again at each use (which made the
\* model a hundred times slower); it changes no value.
\* The edges the detector reads (a mutant's graph replaces this one).
EdgesOf(n, st, lq, ph) == SuccIn(n, st, lq, ph)
GraphIn(st, lq, ph) == TLCEval(UNION {{<<n, m>> : m \in EdgesOf(n, st, lq, ph)} : n \in LiveIn(st, lq)})
Graph == GraphIn(stack, lockQ, phase)
Targets(E, S) == {e[2] : e \in {x \in E : x[1] \in S}}
\* The edges among nodes on or leading to a cycle: drop, until none is left
\* to drop, every edge into a node with no edge out.  Empty in most states.
RECURSIVE Knot(_)
Knot(E) == LET From == TLCEval({e[1] : e \in E}) IN
           LET Kept == TLCEval({x \in E : x[2] \in From}) IN
           IF Kept = E THEN E ELSE Knot(Kept)
\* The nodes reachable from S in zero or more edges of E.
RECURSIVE Grow(_, _)
Grow(S, E) == LET T == TLCEval(S \cup Targets(E, S)) IN IF T = S THEN S ELSE Grow(T, E)
CyclesOf(E) == LET K == Knot(TLCEval(E)) IN {n \in {e[1] : e \in K} : n \in Grow(Targets(K, {n}), K)}
CycleNodes == TLCEval(CyclesOf(Graph))

\* The detector's abort: worker w's top frame waits for its lock on a cycle.
DetectorAbortWith(w, onCycle(_)) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "wait" /\ ~Acquired(f.op)
    /\ onCycle(w)
    /\ opStatus' = [opStatus EXCEPT ![f.op] = "aborted"]
    /\ PopTop(w)
    /\ UNCHANGED <<opTid, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

TopOnCycle(w) == <<"F", w, Len(stack[w])>> \in CycleNodes
DetectorAbort(w) == DetectorAbortWith(w, TopOnCycle)

\* The corrected protocol with the detector and no wait threshold: every
\* deadlock must be broken by the detector alone.  Checked as TLC's deadlock
\* check rather than TerminationProp: with no threshold and finitely many
\* ops to steal, a cycle the detector missed stays for ever, every other
\* transaction ends, and no step is left; and TLC cannot decide this
\* spec's fairness in reasonable time (ENABLED over the recursive graph
\* operators does not finish).
DetectStep(w) == CommonStep(w) \/ OwnerDecide(w) \/ RunOpTryLock(w)
                 \/ StealTake(w) \/ WaiterStealBack(w) \/ DetectorAbort(w)
                 \/ \E i \in Ops(w) : OwnerCloseOp(w, i)
DetectNext == (\E w \in Txn : DetectStep(w)) \/ Done
DetectSpec == Init /\ [][DetectNext]_vars

\* With the threshold kept as the last resort: a waiter may still time out
\* at any moment, leaving its context queued (C2) for the graph to see.
DetectTimeoutNext == (\E w \in Txn : DetectStep(w) \/ WaiterTimeout(w)) \/ Done
DetectTimeoutSpec == Init /\ [][DetectTimeoutNext]_vars

-----------------------------------------------------------------------------
(* Properties                                                              *)

\* An abort step: an op's status becomes "aborted" by a waiter that stops
\* waiting (the detector or a timeout), not by a user abort or a skip.
WaitAborted == \E w \in Txn : /\ Busy(w) /\ Top(w).pc = "wait"
                              /\ opStatus'[Top(w).op] = "aborted" /\ opStatus[Top(w).op] = "none"

\* Soundness: a cycle is a deadlock.  No step but a waiter's abort removes a
\* node from a cycle, so the detector never aborts an op that would have
\* gone on: every op it aborts lay on a cycle (its guard), and the cycle
\* could not have resolved itself.
CycleStableProp == [][LET C == CycleNodes IN
                       C = {} \/ WaitAborted \/ C \subseteq CyclesOf(GraphIn(stack', lockQ', phase'))]_vars

\* The victim is on a cycle: the guard, restated over the step, so that a
\* change to DetectorAbort that drops it is caught.
VictimOnCycleProp == [][\A w \in Txn : (Busy(w) /\ Top(w).pc = "wait" /\ opStatus'[Top(w).op] = "aborted"
                                        /\ opStatus[Top(w).op] = "none") => TopOnCycle(w)]_vars

-----------------------------------------------------------------------------
(* Non-vacuity.                                                            *)

\* A waiting op aborts, its context left queued: in DetectSpec, where there
\* is no threshold, only the detector does that.
DetectReachable == ~\E o \in OpId : opStatus[o] = "aborted" /\ execCount[o] = 0 /\ InQueue(Owner(o), lockQ[RecOf(o)])
\* A cycle runs through a stolen op: a frame on a cycle runs another
\* transaction's op than its worker's.
StolenCycleReachable == ~\E n \in CycleNodes : n[1] = "F" /\ Owner(stack[n[2]][n[3]].op) # n[2]
\* A cycle runs through a context left by a waiter that gave up.
OrphanContextCycleReachable ==
    ~\E n \in CycleNodes : /\ n[1] = "C"
                           /\ ~\E x \in Frames : Owner(FrameAt(x).op) = n[2] /\ RecOf(FrameAt(x).op) = n[3]

-----------------------------------------------------------------------------
(* The mutant the issue names: a detector that sees each worker's own      *)
(* transaction waiting for the lock's holder, as a waits-for graph over    *)
(* transactions built from what each worker publishes would, and so        *)
(* misses a cycle through a stolen op (the nested frame waits behind its   *)
(* worker's own transaction: a self-edge, which such a graph drops).       *)
Holder(r) == IF lockQ[r] = <<>> THEN {} ELSE {Head(lockQ[r])}
MutantSucc(t) ==
    IF Busy(t) /\ Top(t).pc = "wait" /\ ~Acquired(Top(t).op) THEN Holder(RecOf(Top(t).op)) \ {t} ELSE {}
MutantOnCycle(w) == w \in CyclesOf(UNION {{<<t, u>> : u \in MutantSucc(t)} : t \in Txn})
MutantDetectorAbort(w) == DetectorAbortWith(w, MutantOnCycle)
=============================================================================
