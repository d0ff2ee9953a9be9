----------------------------- MODULE RWMCSLock -----------------------------
(***************************************************************************)
(* A reader-writer MCS queue lock (issue 37; the StealDB paper, seed 000, *)
(* leaves reader-writer locks to future work in Section 6).  One word     *)
(* holds the queue's tail and a count of the readers that hold the lock;  *)
(* each waiter spins on its own context, as in MCSLock.tla.               *)
(*                                                                         *)
(* Decision: a granted reader leaves the queue at once.  It is counted in *)
(* `readers`, wakes its successor if that is a reader (counting it first) *)
(* or makes a writer successor the head, and then holds the lock outside  *)
(* the queue; its release is one decrement.  A writer at the head waits   *)
(* for the count to reach zero.  Why: readers release in any order, and a *)
(* queue that kept them would need unlinking from the middle; the count   *)
(* makes a reader's release one atomic add and keeps the queue a plain    *)
(* MCS chain.  The cost is that a head writer spins on the lock word, not *)
(* on its own context, while readers drain; only the head does so.        *)
(*                                                                         *)
(* A reader that finds no queue (tail = Nil) is counted and holds at      *)
(* once: nobody waits, so FIFO order admits it.  A reader that finds a    *)
(* queue joins it, even when only readers hold: a writer may be queued,   *)
(* and FIFO order says the reader waits for it.                           *)
(*                                                                         *)
(* The word's two fields change together (the reader's fast path tests    *)
(* the tail and counts itself in one step), which an engine does with one *)
(* compare-and-swap on the 64-bit record word.                            *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets
CONSTANTS
    Proc,   \* processes, each with one lock context (named by the process)
    Nil     \* model value: the null pointer

ASSUME Nil \notin Proc

VARIABLES
    tail,    \* the word's tail: the last context in the queue, or Nil
    readers, \* the word's count: readers that hold the lock, or have been woken to
    next,    \* next[p]: the successor linked behind p's context
    spin,    \* spin[p]: TRUE while p must wait for its predecessor
    pred,    \* pred[p]: the tail p swapped out
    kind,    \* kind[p]: p's request, "R" (shared) or "W" (exclusive)
    pc,      \* pc[p]: where p is
    ghostQ   \* history: queued processes not yet granted, in swap order

vars == <<tail, readers, next, spin, pred, kind, pc, ghostQ>>

Modes == {"R", "W"}

Labels == {"idle", "init", "swap", "link", "spin",
           "head", "wcs", "unlock", "unlockCas", "unlockWait", "handover",
           "pass", "passCas", "passWait", "passOn", "rcs"}

\* A reader holds from its grant until its release; a writer from entering
\* its critical section until the release step that clears the tail or
\* hands the lock over.
ReaderHolding == {"pass", "passCas", "passWait", "passOn", "rcs"}
WriterHolding == {"wcs", "unlock", "unlockCas", "unlockWait", "handover"}

Holders == {p \in Proc : pc[p] \in ReaderHolding \cup WriterHolding}

TypeOK ==
    /\ tail \in Proc \cup {Nil}
    /\ readers \in 0..Cardinality(Proc)
    /\ next \in [Proc -> Proc \cup {Nil}]
    /\ spin \in [Proc -> BOOLEAN]
    /\ pred \in [Proc -> Proc \cup {Nil}]
    /\ kind \in [Proc -> Modes]
    /\ pc \in [Proc -> Labels]
    /\ ghostQ \in Seq(Proc)

Init ==
    /\ tail = Nil
    /\ readers = 0
    /\ next = [p \in Proc |-> Nil]
    /\ spin = [p \in Proc |-> FALSE]
    /\ pred = [p \in Proc |-> Nil]
    /\ kind = [p \in Proc |-> "R"]
    /\ pc = [p \in Proc |-> "idle"]
    /\ ghostQ = <<>>

Goto(p, l) == pc' = [pc EXCEPT ![p] = l]

\* Wakes p's successor s: a reader is counted before its flag clears, so a
\* head writer never sees zero while a woken reader has yet to move.
WakeSuccessor(p) ==
    LET s == next[p] IN
    /\ spin' = [spin EXCEPT ![s] = FALSE]
    /\ readers' = IF kind[s] = "R" THEN readers + 1 ELSE readers

Request(p) ==
    /\ pc[p] = "idle"
    /\ Goto(p, "init")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ>>

\* As MCSLock.tla: nobody can reach p's context before the swap publishes it.
InitContext(p) ==
    /\ pc[p] = "init"
    /\ next' = [next EXCEPT ![p] = Nil]
    /\ spin' = [spin EXCEPT ![p] = TRUE]
    /\ Goto(p, "swap")
    /\ UNCHANGED <<tail, readers, pred, kind, ghostQ>>

\* The request's mode is chosen here: nothing before the swap depends on it.
\* A reader that finds no queue is counted and holds; anyone else swaps
\* itself into the tail.
SwapTail(p, m) ==
    /\ pc[p] = "swap"
    /\ kind' = [kind EXCEPT ![p] = m]
    /\ IF m = "R" /\ tail = Nil
         THEN /\ readers' = readers + 1
              /\ Goto(p, "rcs")
              /\ UNCHANGED <<tail, pred, ghostQ>>
         ELSE /\ tail' = p
              /\ pred' = [pred EXCEPT ![p] = tail]
              /\ ghostQ' = Append(ghostQ, p)
              /\ Goto(p, IF tail = Nil THEN "head" ELSE "link")
              /\ UNCHANGED readers
    /\ UNCHANGED <<next, spin>>

LinkBehindPred(p) ==
    /\ pc[p] = "link"
    /\ next' = [next EXCEPT ![pred[p]] = p]
    /\ Goto(p, "spin")
    /\ UNCHANGED <<tail, readers, spin, pred, kind, ghostQ>>

\* The predecessor cleared p's flag: a reader now holds (it was counted),
\* a writer is the head of the queue.
WaiterWoken(p) ==
    /\ pc[p] = "spin"
    /\ ~spin[p]
    /\ IF kind[p] = "R"
         THEN /\ Goto(p, "pass")
              /\ ghostQ' = Tail(ghostQ)
         ELSE /\ Goto(p, "head")
              /\ UNCHANGED ghostQ
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind>>

\* The head writer enters once every reader has released.
WriterEnter(p) ==
    /\ pc[p] = "head"
    /\ readers = 0
    /\ Goto(p, "wcs")
    /\ ghostQ' = Tail(ghostQ)
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind>>

\* A granted reader leaves the queue: hand on to a linked successor, else
\* clear the tail, else wait for the successor that swapped it to link.
ReaderCheckNext(p) ==
    /\ pc[p] = "pass"
    /\ Goto(p, IF next[p] = Nil THEN "passCas" ELSE "passOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ>>

ReaderLeaveCas(p) ==
    /\ pc[p] = "passCas"
    /\ IF tail = p
         THEN /\ tail' = Nil
              /\ Goto(p, "rcs")
         ELSE /\ Goto(p, "passWait")
              /\ UNCHANGED tail
    /\ UNCHANGED <<readers, next, spin, pred, kind, ghostQ>>

ReaderAwaitLink(p) ==
    /\ pc[p] = "passWait"
    /\ next[p] # Nil
    /\ Goto(p, "passOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ>>

ReaderPassOn(p) ==
    /\ pc[p] = "passOn"
    /\ WakeSuccessor(p)
    /\ Goto(p, "rcs")
    /\ UNCHANGED <<tail, next, pred, kind, ghostQ>>

\* A reader's release: one decrement of the count.
ReaderRelease(p) ==
    /\ pc[p] = "rcs"
    /\ readers' = readers - 1
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, next, spin, pred, kind, ghostQ>>

\* A writer's release is MCSLock.tla's UNLOCK, waking a reader successor counted.
WriterLeave(p) ==
    /\ pc[p] = "wcs"
    /\ Goto(p, "unlock")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ>>

WriterCheckNext(p) ==
    /\ pc[p] = "unlock"
    /\ Goto(p, IF next[p] = Nil THEN "unlockCas" ELSE "handover")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ>>

WriterReleaseCas(p) ==
    /\ pc[p] = "unlockCas"
    /\ IF tail = p
         THEN /\ tail' = Nil
              /\ Goto(p, "idle")
         ELSE /\ Goto(p, "unlockWait")
              /\ UNCHANGED tail
    /\ UNCHANGED <<readers, next, spin, pred, kind, ghostQ>>

WriterAwaitLink(p) ==
    /\ pc[p] = "unlockWait"
    /\ next[p] # Nil
    /\ Goto(p, "handover")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ>>

WriterHandover(p) ==
    /\ pc[p] = "handover"
    /\ WakeSuccessor(p)
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, next, pred, kind, ghostQ>>

Step(p) ==
    \/ Request(p) \/ InitContext(p) \/ \E m \in Modes : SwapTail(p, m)
    \/ LinkBehindPred(p) \/ WaiterWoken(p) \/ WriterEnter(p)
    \/ ReaderCheckNext(p) \/ ReaderLeaveCas(p) \/ ReaderAwaitLink(p)
    \/ ReaderPassOn(p) \/ ReaderRelease(p)
    \/ WriterLeave(p) \/ WriterCheckNext(p) \/ WriterReleaseCas(p)
    \/ WriterAwaitLink(p) \/ WriterHandover(p)

Next == \E p \in Proc : Step(p)

\* As MCSLock.tla: a process need not ask, but once it has it keeps running,
\* and a holder eventually releases.
Fairness == \A p \in Proc : WF_vars(Step(p) /\ pc[p] # "idle")

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties *)

\* A writer holds alone.
MutualExclusionInv ==
    \A p \in Proc : pc[p] \in WriterHolding => Holders = {p}

\* The count is the readers that hold, and those woken that have yet to move.
ReaderCountInv ==
    readers = Cardinality({p \in Proc : \/ pc[p] \in ReaderHolding
                                        \/ pc[p] = "spin" /\ ~spin[p] /\ kind[p] = "R"})

\* Every requester eventually holds (starvation freedom: no lost wake-up,
\* and no writer waits for ever on readers).
StarvationFreedomProp == \A p \in Proc : (pc[p] = "init") ~> (p \in Holders)

\* The lock refines the reader-writer FIFO lock, the queue being the swap order.
RWFifo == INSTANCE RWFifoLock WITH queue <- ghostQ, holders <- Holders, mode <- kind
RWFifoRefinementProp == RWFifo!Spec

-----------------------------------------------------------------------------
(* Non-vacuity, as in MCSLock.tla: each must be violated by a passing model. *)

\* Two readers hold together.
ReadersTogetherReachable == ~\E p, q \in Proc : p # q /\ pc[p] \in ReaderHolding /\ pc[q] \in ReaderHolding

\* A granted reader wakes the reader queued behind it.
ReaderPassesToReaderReachable == ~\E p \in Proc : pc[p] = "passOn" /\ kind[next[p]] = "R"

\* A head writer waits for readers to release.
WriterWaitsForReadersReachable == ~\E p \in Proc : pc[p] = "head" /\ readers > 0
=============================================================================
