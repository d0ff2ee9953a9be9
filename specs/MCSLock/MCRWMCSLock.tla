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
    /\ UNCHANGED <<next, spin, gone, quit, cur>>

\* A head writer that does not wait for the readers to drain.
MutantWriterSkipsReaderWait(p) ==
    /\ pc[p] = "head"
    /\ Goto(p, "wcs")
    /\ ghostQ' = Tail(ghostQ)
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, quit, cur>>

\* A writer that wakes a reader successor without counting it.
MutantHandoverUncounted(p) ==
    /\ pc[p] = "handover"
    /\ spin' = [spin EXCEPT ![next[p]] = FALSE]
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, readers, next, pred, kind, ghostQ, gone, quit, cur>>

\* A reader that leaves the queue when its CAS fails, without waiting for
\* the successor's link: nobody wakes that successor.
MutantReaderLeavesUnlinked(p) ==
    /\ pc[p] = "passCas"
    /\ IF tail = p THEN tail' = Nil ELSE UNCHANGED tail
    /\ Goto(p, "rcs")
    /\ UNCHANGED <<readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

\* Giving up without the CAS: a waiter already woken gives up too.  A reader
\* woken is counted, and nobody uncounts it.
MutantGivesUpWoken(p) ==
    /\ pc[p] = "spin"
    /\ gone' = gone \cup {p}
    /\ ghostQ' = SelectSeq(ghostQ, LAMBDA q : q # p)
    /\ Goto(p, "gone")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, quit, cur>>

\* A wake that stores instead of its CAS: a gone context is woken as if
\* waiting, and nobody takes it out of the queue.
MutantWakeStores(p) ==
    /\ pc[p] = "handover"
    /\ spin' = [spin EXCEPT ![next[p]] = FALSE]
    /\ readers' = IF kind[next[p]] = "R" THEN readers + 1 ELSE readers
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, next, pred, kind, gone, quit, cur, ghostQ>>

\* The gone context let go before its successor is read: its owner may
\* queue it again in between, and the release reads the new queue's link.
MutantLetGoBeforeRead(p) ==
    /\ pc[p] = "skip"
    /\ gone' = gone \ {cur[p]}
    /\ Goto(p, IF next[cur[p]] = Nil THEN "skipCas" ELSE "skipOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, quit, cur, ghostQ>>

\* The writer's fast path guessing only the tail: it takes a word with no
\* queue while readers hold it.
MutantWriterEntersRead(p) ==
    /\ pc[p] = "init"
    /\ tail = Nil
    /\ tail' = p
    /\ next' = [next EXCEPT ![p] = Nil]
    /\ spin' = [spin EXCEPT ![p] = FALSE]
    /\ pred' = [pred EXCEPT ![p] = Nil]
    /\ kind' = [kind EXCEPT ![p] = "W"]
    /\ quit' = quit \ {p}
    /\ Goto(p, "wcs")
    /\ UNCHANGED <<readers, gone, cur, ghostQ>>
=============================================================================
