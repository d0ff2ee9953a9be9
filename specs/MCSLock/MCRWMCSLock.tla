---------------------------- MODULE MCRWMCSLock ----------------------------
(***************************************************************************)
(* Models of RWMCSLock.tla for TLC, and its mutants: broken copies of one *)
(* action each, swapped in by a cfg line such as                          *)
(*   CONSTANT WriterEnter <- MutantWriterSkipsReaderWait                  *)
(* Each mutant model in specs/models.json must be caught.                 *)
(***************************************************************************)
EXTENDS RWMCSLock, TLC

\* Processes are interchangeable: sound for the safety checks only.
ProcSymmetry == Permutations(Proc)

\* The issue's twin: a reader admitted while readers hold, although a
\* writer is queued (it joins the readers instead of the queue).
MutantReaderBargesPastWriter(p, m) ==
    /\ pc[p] = "swap"
    /\ kind' = [kind EXCEPT ![p] = m]
    /\ IF m = "R" /\ (tail = Nil \/ readers > 0)
         THEN /\ readers' = readers + 1
              /\ Goto(p, "rcs")
              /\ UNCHANGED <<tail, pred, ghostQ>>
         ELSE /\ tail' = p
              /\ pred' = [pred EXCEPT ![p] = tail]
              /\ ghostQ' = Append(ghostQ, p)
              /\ Goto(p, IF tail = Nil THEN "head" ELSE "link")
              /\ UNCHANGED readers
    /\ UNCHANGED <<next, spin>>

\* A head writer that does not wait for the readers to drain.
MutantWriterSkipsReaderWait(p) ==
    /\ pc[p] = "head"
    /\ Goto(p, "wcs")
    /\ ghostQ' = Tail(ghostQ)
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind>>

\* A writer that wakes a reader successor without counting it.
MutantHandoverUncounted(p) ==
    /\ pc[p] = "handover"
    /\ spin' = [spin EXCEPT ![next[p]] = FALSE]
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, readers, next, pred, kind, ghostQ>>

\* A reader that leaves the queue when its CAS fails, without waiting for
\* the successor's link: nobody wakes that successor.
MutantReaderLeavesUnlinked(p) ==
    /\ pc[p] = "passCas"
    /\ IF tail = p THEN tail' = Nil ELSE UNCHANGED tail
    /\ Goto(p, "rcs")
    /\ UNCHANGED <<readers, next, spin, pred, kind, ghostQ>>
=============================================================================
