------------------------- MODULE MCStealDBDeadlock -------------------------
(***************************************************************************)
(* StealDBDeadlock.tla on MCStealDB's workloads, and its mutants.          *)
(***************************************************************************)
EXTENDS StealDBDeadlock, MCStealDB

\* A detector that also aborts every waiter whose lock's holder is itself
\* waiting ("waits behind a waiter"), cycle or not: VictimOnCycleProp.
MutantEagerDetectorAbort(w) ==
    \/ DetectorAbortWith(w, TopOnCycle)
    \/ DetectorAbortWith(w, LAMBDA v : \E u \in Holder(RecOf(Top(v).op)) : u # v /\ Busy(u) /\ Top(u).pc = "wait")

\* A graph that still counts a waiter whose lock has just been granted (it
\* has not left the wait loop yet), as a detector reading a queue node's
\* "waiting" flag before its owner clears it would: a cycle that the
\* waiter's next step breaks (CycleStableProp).
MutantEdgesGrantedWaits(n, st, lq, ph) ==
    IF n[1] = "F" /\ st[n[2]][n[3]].pc = "wait"
    THEN SuccIn(n, st, lq, ph) \cup {<<"C", Owner(st[n[2]][n[3]].op), RecOf(st[n[2]][n[3]].op)>>}
    ELSE SuccIn(n, st, lq, ph)

\* A graph in which a waiting context with only granted readers ahead
\* waits for nobody, as a detector that follows queue nodes alone would:
\* the engine's granted readers leave the queue and are only counted in
\* the record word (the engine's twin: McsDetectorIgnoresReaders).  The
\* deadlock of SharedOppositeProg, two writers each behind the other's
\* reader, is then never found.
IgnoredWait(n, lq) ==
    LET q == lq[n[3]] IN
    /\ ~GrantedIn(n[2], n[3], q)
    /\ \A j \in 1..(PosIn(n[2], q) - 1) : GrantedIn(q[j], n[3], q)
MutantEdgesIgnoreReaders(n, st, lq, ph) ==
    IF n[1] = "C" /\ IgnoredWait(n, lq) THEN {} ELSE SuccIn(n, st, lq, ph)
=============================================================================
