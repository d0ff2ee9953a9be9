------------------------------ MODULE MCSLock ------------------------------
(***************************************************************************)
(* The MCS queue lock as StealDB uses it (seed 000, Algorithm 4 TRYLOCK,  *)
(* CHECKACQUIRED and UNLOCK of Section 3.3), at the level of the shared   *)
(* words: the lock's tail pointer and each lock context's next and spin.  *)
(*                                                                         *)
(* Each process owns one lock context (its qnode) and reuses it for every *)
(* acquisition, so the reuse races of real MCS code are in the model.     *)
(*                                                                         *)
(* The paper gives TRYLOCK in pseudo-code but describes UNLOCK only as    *)
(* "clears the spin flag of the next waiter".  That is wrong when the     *)
(* next waiter has swapped the tail but not yet linked itself: the holder *)
(* sees next = null and must either CAS the tail back to null or, if the  *)
(* CAS fails, wait for the link.  We specify the standard MCS release;   *)
(* MCMCSLock.tla keeps the paper's shortcut as a mutant.                  *)
(*                                                                         *)
(* ghostQ is a history variable: the order in which processes swapped     *)
(* themselves into the tail.  It drives nothing; it exists so the FIFO    *)
(* refinement and the lost-wake-up invariant can name "the queue".        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets
CONSTANTS
    Proc,   \* processes, each with one lock context (named by the process)
    Nil     \* model value: the null pointer

ASSUME Nil \notin Proc

VARIABLES
    tail,   \* lock.tail: the last context in the queue, or Nil
    next,   \* next[p]: lockCtx.next of p's context (Alg. 4 line 1, 7)
    spin,   \* spin[p]: lockCtx.spin of p's context; TRUE while p must wait (line 2)
    pred,   \* pred[p]: ctx_p, TRYLOCK's local copy of the previous tail (line 3)
    pc,     \* pc[p]: where p is in TRYLOCK / CHECKACQUIRED / UNLOCK
    ghostQ  \* history: processes in tail-swap order, head = current or next owner

vars == <<tail, next, spin, pred, pc, ghostQ>>

Labels == {"idle", "init", "swap", "enter", "link", "spin", "cs",
           "unlock", "unlockCas", "unlockWait", "handover"}

\* The lock is held from entering the critical section until the release
\* step that hands it over or clears the tail.
Holding == {"cs", "unlock", "unlockCas", "unlockWait", "handover"}

TypeOK ==
    /\ tail \in Proc \cup {Nil}
    /\ next \in [Proc -> Proc \cup {Nil}]
    /\ spin \in [Proc -> BOOLEAN]
    /\ pred \in [Proc -> Proc \cup {Nil}]
    /\ pc \in [Proc -> Labels]
    /\ ghostQ \in Seq(Proc)

Init ==
    /\ tail = Nil
    /\ next = [p \in Proc |-> Nil]
    /\ spin = [p \in Proc |-> FALSE]
    /\ pred = [p \in Proc |-> Nil]
    /\ pc = [p \in Proc |-> "idle"]
    /\ ghostQ = <<>>

Goto(p, l) == pc' = [pc EXCEPT ![p] = l]

\* p decides to take the lock.
Request(p) ==
    /\ pc[p] = "idle"
    /\ Goto(p, "init")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* TRYLOCK lines 1-2.  One step: nobody can reach p's context before p
\* publishes it by the swap below.
InitContext(p) ==
    /\ pc[p] = "init"
    /\ next' = [next EXCEPT ![p] = Nil]
    /\ spin' = [spin EXCEPT ![p] = TRUE]
    /\ Goto(p, "swap")
    /\ UNCHANGED <<tail, pred, ghostQ>>

\* TRYLOCK line 3: ctx_p = XCHG(lock.tail, lockCtx).
SwapTail(p) ==
    /\ pc[p] = "swap"
    /\ tail' = p
    /\ pred' = [pred EXCEPT ![p] = tail]
    /\ ghostQ' = Append(ghostQ, p)
    /\ Goto(p, IF tail = Nil THEN "enter" ELSE "link")
    /\ UNCHANGED <<next, spin>>

\* TRYLOCK lines 4-5: the queue was empty, TRYLOCK returns 0.
EnterFree(p) ==
    /\ pc[p] = "enter"
    /\ Goto(p, "cs")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* TRYLOCK lines 6-7: ctx_p.next = lockCtx; TRYLOCK returns ctx_p.tid.
LinkBehindPred(p) ==
    /\ pc[p] = "link"
    /\ next' = [next EXCEPT ![pred[p]] = p]
    /\ Goto(p, "spin")
    /\ UNCHANGED <<tail, spin, pred, ghostQ>>

\* CHECKACQUIRED returns true once the predecessor cleared our spin flag.
\* Spinning on an unchanged flag is stuttering, so the step waits for it.
WaiterAcquire(p) ==
    /\ pc[p] = "spin"
    /\ ~spin[p]
    /\ Goto(p, "cs")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* The owner leaves its critical section and calls UNLOCK.
HolderLeave(p) ==
    /\ pc[p] = "cs"
    /\ Goto(p, "unlock")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* UNLOCK: a linked successor gets the lock directly.
HolderCheckNext(p) ==
    /\ pc[p] = "unlock"
    /\ Goto(p, IF next[p] = Nil THEN "unlockCas" ELSE "handover")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* UNLOCK with no visible successor: CAS(lock.tail, lockCtx, null).  If it
\* fails, a successor has swapped the tail and will link itself: wait.
HolderReleaseCas(p) ==
    /\ pc[p] = "unlockCas"
    /\ IF tail = p
         THEN /\ tail' = Nil
              /\ ghostQ' = Tail(ghostQ)
              /\ Goto(p, "idle")
         ELSE /\ Goto(p, "unlockWait")
              /\ UNCHANGED <<tail, ghostQ>>
    /\ UNCHANGED <<next, spin, pred>>

HolderAwaitLink(p) ==
    /\ pc[p] = "unlockWait"
    /\ next[p] # Nil
    /\ Goto(p, "handover")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* "clears the spin flag of next waiter" (Section 3.3).
HolderHandover(p) ==
    /\ pc[p] = "handover"
    /\ spin' = [spin EXCEPT ![next[p]] = FALSE]
    /\ ghostQ' = Tail(ghostQ)
    /\ Goto(p, "idle")
    /\ UNCHANGED <<tail, next, pred>>

Step(p) ==
    \/ Request(p) \/ InitContext(p) \/ SwapTail(p) \/ EnterFree(p)
    \/ LinkBehindPred(p) \/ WaiterAcquire(p) \/ HolderLeave(p)
    \/ HolderCheckNext(p) \/ HolderReleaseCas(p) \/ HolderAwaitLink(p)
    \/ HolderHandover(p)

Next == \E p \in Proc : Step(p)

\* Every step but Request is fair: a process need not ask for the lock, but
\* once it has, it keeps running, and an owner eventually releases.
Fairness == \A p \in Proc : WF_vars(Step(p) /\ pc[p] # "idle")

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties *)

MutualExclusionInv ==
    \A p, q \in Proc : p # q => ~(pc[p] \in Holding /\ pc[q] \in Holding)

\* FIFO handover: the holder hands the lock to the process that swapped
\* itself into the tail right after it, and to no other.
FifoHandoverInv ==
    \A p \in Proc :
        pc[p] = "handover" => /\ Len(ghostQ) >= 2
                              /\ ghostQ[1] = p
                              /\ next[p] = ghostQ[2]

\* No lost wake-up: a process still waiting for its spin flag to be cleared
\* is never at the head of the queue, because the flag is cleared in the
\* same step that removes its predecessor from the head.  A waiter at the
\* head with its flag set has nobody left to wake it.
NoLostWakeupInv ==
    \A p \in Proc :
        (pc[p] \in {"link", "spin"} /\ spin[p]) => (ghostQ # <<>> /\ Head(ghostQ) # p)

\* The contract StealDB's STEALOP relies on (StealDB.tla models TRYLOCK as
\* returning the previous tail, and steals from it): from its swap until it is
\* handed the lock, a waiter's ctx is the process directly ahead of it in the
\* queue, so the transaction it steals from is the one it waits for.
PredecessorInv ==
    \A p \in Proc :
        (pc[p] \in {"link", "spin"} /\ spin[p]) =>
            \E k \in 2..Len(ghostQ) : ghostQ[k] = p /\ ghostQ[k - 1] = pred[p]

\* Every requester eventually holds the lock (starvation freedom).
StarvationFreedomProp == \A p \in Proc : (pc[p] = "init") ~> (pc[p] = "cs")

\* FIFO handover: MCS implements the FIFO lock with the queue in swap order.
LockOwner == IF \E p \in Proc : pc[p] \in Holding
               THEN CHOOSE p \in Proc : pc[p] \in Holding
               ELSE Nil
Fifo == INSTANCE FifoLock WITH queue <- ghostQ, owner <- LockOwner, None <- Nil
FifoRefinementProp == Fifo!Spec
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety         *)
(* property, so each operator below says that a step never happens, and   *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* A waiter is handed the lock by its predecessor (HolderHandover).
HandoverReachable == ~\E p \in Proc : pc[p] = "spin" /\ ~spin[p]
=============================================================================
