----------------------------- MODULE RWMCSLock -----------------------------
(***************************************************************************)
(* A reader-writer MCS queue lock (the StealDB paper, seed 000,           *)
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
(*                                                                         *)
(* Giving up (Mcs's deadlock victim, or a wait past its threshold).  A    *)
(* waiter not yet woken may give its context up with one CAS on its flag  *)
(* (GiveUp); the wake is a CAS too, so exactly one of the two wins.  The  *)
(* context stays in the queue, `gone': whoever would have woken it takes  *)
(* it out instead (the Skip actions, a release's steps run on the gone    *)
(* context's behalf) and wakes the context behind it.  The owner waits    *)
(* for nothing; it may queue the context again only once it is taken out  *)
(* (Reclaim).  A process here is one context: Mcs gives each access two   *)
(* and queues the other while one is gone.  A head writer still waiting   *)
(* for readers gives up by leaving as a writer's release does, never      *)
(* having held (HeadGivesUp).  Why not unlink the context: a successor    *)
(* spins on its own flag and only its predecessor may clear it, so a      *)
(* context that left would strand it (StealDBMutantTimeoutCancels shows   *)
(* worse for StealDB, whose waiters also enter when the predecessor's     *)
(* transaction has ended; StealDB therefore keeps C2's wait).  Before     *)
(* this, a victim released its other locks and then waited for its queued *)
(* context to be woken, the wait this removes.                            *)
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
    gone,    \* contexts given up and still in the queue, for their wakers to take out
    quit,    \* head writers that gave up: they leave as a release does, never having held
    cur,     \* cur[p]: the gone context p is taking out of the queue, or Nil
    ghostQ   \* history: queued processes not yet granted nor given up, in swap order

vars == <<tail, readers, next, spin, pred, kind, pc, gone, quit, cur, ghostQ>>

Modes == {"R", "W"}

Labels == {"idle", "init", "swap", "link", "spin",
           "head", "wcs", "unlock", "unlockCas", "unlockWait", "handover",
           "pass", "passCas", "passWait", "passOn", "rcs",
           "gone", "skip", "skipCas", "skipWait", "skipOn", "skipWake"}

\* A reader holds from its grant until its release; a writer from entering
\* its critical section until the release step that clears the tail or
\* hands the lock over (or, if the context behind is gone, starts taking
\* it out).  A reader taking a gone context out still holds: it does so
\* while passing on, before its own release.
ReaderHolding == {"pass", "passCas", "passWait", "passOn", "rcs"}
WriterHolding == {"wcs", "unlock", "unlockCas", "unlockWait", "handover"}
Skipping == {"skip", "skipCas", "skipWait", "skipOn", "skipWake"}

ReaderHolds(p) == \/ pc[p] \in ReaderHolding
                  \/ pc[p] \in Skipping /\ kind[p] = "R"
WriterHolds(p) == pc[p] \in WriterHolding /\ p \notin quit

Holders == {p \in Proc : ReaderHolds(p) \/ WriterHolds(p)}

\* Where a process's release ends: a reader holds on, a writer is done.
After(p) == IF kind[p] = "R" THEN "rcs" ELSE "idle"

TypeOK ==
    /\ tail \in Proc \cup {Nil}
    /\ readers \in 0..Cardinality(Proc)
    /\ next \in [Proc -> Proc \cup {Nil}]
    /\ spin \in [Proc -> BOOLEAN]
    /\ pred \in [Proc -> Proc \cup {Nil}]
    /\ kind \in [Proc -> Modes]
    /\ pc \in [Proc -> Labels]
    /\ gone \subseteq Proc
    /\ quit \subseteq Proc
    /\ cur \in [Proc -> Proc \cup {Nil}]
    /\ ghostQ \in Seq(Proc)

Init ==
    /\ tail = Nil
    /\ readers = 0
    /\ next = [p \in Proc |-> Nil]
    /\ spin = [p \in Proc |-> FALSE]
    /\ pred = [p \in Proc |-> Nil]
    /\ kind = [p \in Proc |-> "R"]
    /\ pc = [p \in Proc |-> "idle"]
    /\ gone = {}
    /\ quit = {}
    /\ cur = [p \in Proc |-> Nil]
    /\ ghostQ = <<>>

Goto(p, l) == pc' = [pc EXCEPT ![p] = l]

\* p wakes s, the context behind the one p is releasing, with a CAS on s's
\* flag.  A reader is counted before its flag clears, so a head writer never
\* sees zero while a woken reader has yet to move.  If s is gone the CAS
\* fails and p takes s out of the queue instead.  (The engine counts a reader
\* before the CAS and uncounts it after a failed one: the count is one too
\* many in between, which nobody reads, since no writer is queued ahead of
\* s to be the head, and p uncounts before it wakes anyone behind s.)
Wake(p, s) ==
    IF s \in gone
      THEN /\ cur' = [cur EXCEPT ![p] = s]
           /\ Goto(p, "skip")
           /\ UNCHANGED <<spin, readers>>
      ELSE /\ spin' = [spin EXCEPT ![s] = FALSE]
           /\ readers' = IF kind[s] = "R" THEN readers + 1 ELSE readers
           /\ cur' = [cur EXCEPT ![p] = Nil]
           /\ Goto(p, After(p))

Request(p) ==
    /\ pc[p] = "idle"
    /\ Goto(p, "init")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

\* As MCSLock.tla: nobody can reach p's context before the swap publishes it.
InitContext(p) ==
    /\ pc[p] = "init"
    /\ next' = [next EXCEPT ![p] = Nil]
    /\ spin' = [spin EXCEPT ![p] = TRUE]
    /\ quit' = quit \ {p}
    /\ Goto(p, "swap")
    /\ UNCHANGED <<tail, readers, pred, kind, gone, cur, ghostQ>>

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
    /\ UNCHANGED <<next, spin, gone, quit, cur>>

\* A writer that finds the word free (no queue and no reader) takes it with
\* one CAS that guesses the free word, before its context is set up for
\* waiting: SwapTail and WriterEnter in one step (the engine's fast path,
\* McsLock.TryLockExclusive, where rows are rarely shared).  Its next is
\* cleared before the CAS, as a successor will link to it; its flag is left
\* clear, since no predecessor will wake it.  Anyone else, or a writer whose
\* guess failed, goes through InitContext and SwapTail.
WriterEnterFree(p) ==
    /\ pc[p] = "init"
    /\ tail = Nil /\ readers = 0
    /\ tail' = p
    /\ next' = [next EXCEPT ![p] = Nil]
    /\ spin' = [spin EXCEPT ![p] = FALSE]
    /\ pred' = [pred EXCEPT ![p] = Nil]
    /\ kind' = [kind EXCEPT ![p] = "W"]
    /\ quit' = quit \ {p}
    /\ Goto(p, "wcs")
    /\ UNCHANGED <<readers, gone, cur, ghostQ>>

LinkBehindPred(p) ==
    /\ pc[p] = "link"
    /\ next' = [next EXCEPT ![pred[p]] = p]
    /\ Goto(p, "spin")
    /\ UNCHANGED <<tail, readers, spin, pred, kind, ghostQ, gone, quit, cur>>

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
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, quit, cur>>

\* The head writer enters once every reader has released.
WriterEnter(p) ==
    /\ pc[p] = "head"
    /\ readers = 0
    /\ Goto(p, "wcs")
    /\ ghostQ' = Tail(ghostQ)
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, quit, cur>>

\* A granted reader leaves the queue: hand on to a linked successor, else
\* clear the tail, else wait for the successor that swapped it to link.
ReaderCheckNext(p) ==
    /\ pc[p] = "pass"
    /\ Goto(p, IF next[p] = Nil THEN "passCas" ELSE "passOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

ReaderLeaveCas(p) ==
    /\ pc[p] = "passCas"
    /\ IF tail = p
         THEN /\ tail' = Nil
              /\ Goto(p, "rcs")
         ELSE /\ Goto(p, "passWait")
              /\ UNCHANGED tail
    /\ UNCHANGED <<readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

ReaderAwaitLink(p) ==
    /\ pc[p] = "passWait"
    /\ next[p] # Nil
    /\ Goto(p, "passOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

ReaderPassOn(p) ==
    /\ pc[p] = "passOn"
    /\ Wake(p, next[p])
    /\ UNCHANGED <<tail, next, pred, kind, gone, quit, ghostQ>>

\* A reader's release: one decrement of the count.
ReaderRelease(p) ==
    /\ pc[p] = "rcs"
    /\ readers' = readers - 1
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, next, spin, pred, kind, ghostQ, gone, quit, cur>>

\* A writer's release is MCSLock.tla's UNLOCK, waking a reader successor counted.
WriterLeave(p) ==
    /\ pc[p] = "wcs"
    /\ Goto(p, "unlock")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

WriterCheckNext(p) ==
    /\ pc[p] = "unlock"
    /\ Goto(p, IF next[p] = Nil THEN "unlockCas" ELSE "handover")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

WriterReleaseCas(p) ==
    /\ pc[p] = "unlockCas"
    /\ IF tail = p
         THEN /\ tail' = Nil
              /\ Goto(p, "idle")
         ELSE /\ Goto(p, "unlockWait")
              /\ UNCHANGED tail
    /\ UNCHANGED <<readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

WriterAwaitLink(p) ==
    /\ pc[p] = "unlockWait"
    /\ next[p] # Nil
    /\ Goto(p, "handover")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, ghostQ, gone, quit, cur>>

WriterHandover(p) ==
    /\ pc[p] = "handover"
    /\ Wake(p, next[p])
    /\ UNCHANGED <<tail, next, pred, kind, gone, quit, ghostQ>>

-----------------------------------------------------------------------------
(* Giving up, and taking a gone context out of the queue (the header).     *)

\* A waiter not yet woken gives up: the CAS on its flag that Wake's races.
GiveUp(p) ==
    /\ pc[p] = "spin"
    /\ spin[p]
    /\ gone' = gone \cup {p}
    /\ ghostQ' = SelectSeq(ghostQ, LAMBDA q : q # p)
    /\ Goto(p, "gone")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, quit, cur>>

\* A head writer, woken but waiting for readers, gives up: it leaves the
\* queue as a writer's release does (WriterCheckNext on), never having held.
HeadGivesUp(p) ==
    /\ pc[p] = "head"
    /\ quit' = quit \cup {p}
    /\ ghostQ' = SelectSeq(ghostQ, LAMBDA q : q # p)
    /\ Goto(p, "unlock")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, cur>>

\* The owner of a gone context takes it back once its waker has let it go.
Reclaim(p) ==
    /\ pc[p] = "gone"
    /\ p \notin gone
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, quit, cur, ghostQ>>

\* p takes cur[p] out of the queue with a release's steps: hand on to a
\* linked successor, else clear the tail, else wait for the link.
SkipCheckNext(p) ==
    /\ pc[p] = "skip"
    /\ Goto(p, IF next[cur[p]] = Nil THEN "skipCas" ELSE "skipOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, quit, cur, ghostQ>>

\* The tail cleared, the context is let go in the same step (the engine
\* marks it released just after the CAS; nobody else reads it in between).
SkipCas(p) ==
    /\ pc[p] = "skipCas"
    /\ IF tail = cur[p]
         THEN /\ tail' = Nil
              /\ gone' = gone \ {cur[p]}
              /\ cur' = [cur EXCEPT ![p] = Nil]
              /\ Goto(p, After(p))
         ELSE /\ Goto(p, "skipWait")
              /\ UNCHANGED <<tail, gone, cur>>
    /\ UNCHANGED <<readers, next, spin, pred, kind, quit, ghostQ>>

SkipAwaitLink(p) ==
    /\ pc[p] = "skipWait"
    /\ next[cur[p]] # Nil
    /\ Goto(p, "skipOn")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, gone, quit, cur, ghostQ>>

\* The successor read, then the gone context let go: after this its owner
\* may queue it again, so nothing of it may be read later.
SkipOn(p) ==
    /\ pc[p] = "skipOn"
    /\ gone' = gone \ {cur[p]}
    /\ cur' = [cur EXCEPT ![p] = next[cur[p]]]
    /\ Goto(p, "skipWake")
    /\ UNCHANGED <<tail, readers, next, spin, pred, kind, quit, ghostQ>>

SkipWake(p) ==
    /\ pc[p] = "skipWake"
    /\ Wake(p, cur[p])
    /\ UNCHANGED <<tail, next, pred, kind, gone, quit, ghostQ>>

\* Every step but giving up: a waiter need not give up.
Step(p) ==
    \/ Request(p) \/ WriterEnterFree(p) \/ InitContext(p) \/ \E m \in Modes : SwapTail(p, m)
    \/ LinkBehindPred(p) \/ WaiterWoken(p) \/ WriterEnter(p)
    \/ ReaderCheckNext(p) \/ ReaderLeaveCas(p) \/ ReaderAwaitLink(p)
    \/ ReaderPassOn(p) \/ ReaderRelease(p)
    \/ WriterLeave(p) \/ WriterCheckNext(p) \/ WriterReleaseCas(p)
    \/ WriterAwaitLink(p) \/ WriterHandover(p)
    \/ Reclaim(p) \/ SkipCheckNext(p) \/ SkipCas(p) \/ SkipAwaitLink(p)
    \/ SkipOn(p) \/ SkipWake(p)

Next == \E p \in Proc : Step(p) \/ GiveUp(p) \/ HeadGivesUp(p)

\* As MCSLock.tla: a process need not ask, but once it has it keeps running,
\* and a holder eventually releases; giving up is never forced.
Fairness == \A p \in Proc : WF_vars(Step(p) /\ pc[p] # "idle")

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties *)

\* A writer holds alone.
MutualExclusionInv ==
    \A p \in Proc : WriterHolds(p) => Holders = {p}

\* The count is the readers that hold, and those woken that have yet to move.
ReaderCountInv ==
    readers = Cardinality({p \in Proc : \/ ReaderHolds(p)
                                        \/ pc[p] = "spin" /\ ~spin[p] /\ kind[p] = "R"})

\* A gone context is in the queue, out of its owner's hands, and never woken.
GoneInv == \A p \in gone : pc[p] = "gone" /\ spin[p]

\* Every requester eventually holds, unless it gives up (starvation freedom:
\* no lost wake-up, and no writer waits for ever on readers).
StarvationFreedomProp == \A p \in Proc : (pc[p] = "init") ~> (p \in Holders \/ pc[p] = "gone" \/ p \in quit)

\* A gone context is eventually taken out of the queue and back to its owner.
GoneReclaimedProp == \A p \in Proc : (pc[p] = "gone") ~> (pc[p] = "idle")

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

\* A release finds the context behind it gone, and one behind that.
SkipChainReachable == ~\E p \in Proc : pc[p] = "skipWake" /\ cur[p] \in gone

\* A reader takes a gone context out while it holds.
ReaderSkipsReachable == ~\E p \in Proc : pc[p] \in Skipping /\ kind[p] = "R"

\* A head writer gives up while readers hold.
HeadGivesUpReachable == ~\E p \in Proc : p \in quit /\ pc[p] = "unlock" /\ readers > 0
=============================================================================
