----------------------------- MODULE MCMCSLock -----------------------------
(***************************************************************************)
(* Models of MCSLock.tla for TLC, and its mutants: deliberately broken    *)
(* copies of one action each, swapped in by a cfg line such as            *)
(*   CONSTANT HolderReleaseCas <- MutantReleaseClearTail                  *)
(* Each mutant model in specs/models.json must be caught.                 *)
(***************************************************************************)
EXTENDS MCSLock, TLC

\* Processes are interchangeable: sound for the safety checks only.
ProcSymmetry == Permutations(Proc)

\* Mutant (c), the classic MCS unlock bug and the paper's own description of
\* UNLOCK: with no visible successor, clear the tail without a CAS, so a
\* successor that has swapped the tail but not yet linked is never woken.
MutantReleaseClearTail(p) ==
    /\ pc[p] = "unlockCas"
    /\ tail' = Nil
    /\ ghostQ' = Tail(ghostQ)
    /\ Goto(p, "idle")
    /\ UNCHANGED <<next, spin, pred>>

\* A waiter that stops checking its spin flag (CHECKACQUIRED always true).
MutantAcquireWithoutSpin(p) ==
    /\ pc[p] = "spin"
    /\ Goto(p, "cs")
    /\ UNCHANGED <<tail, next, spin, pred, ghostQ>>

\* TRYLOCK without line 1: a reused context keeps the next pointer of its
\* previous acquisition, and a later release hands the lock to that process.
MutantInitKeepsNext(p) ==
    /\ pc[p] = "init"
    /\ spin' = [spin EXCEPT ![p] = TRUE]
    /\ Goto(p, "swap")
    /\ UNCHANGED <<tail, next, pred, ghostQ>>

\* TRYLOCK that returns the lock's holder (the head of the queue) instead of
\* the tail it swapped out: the waiter then follows, and links behind, the
\* wrong process.
MutantSwapReturnsHead(p) ==
    /\ pc[p] = "swap"
    /\ tail' = p
    /\ pred' = [pred EXCEPT ![p] = IF ghostQ = <<>> THEN Nil ELSE Head(ghostQ)]
    /\ ghostQ' = Append(ghostQ, p)
    /\ Goto(p, IF tail = Nil THEN "enter" ELSE "link")
    /\ UNCHANGED <<next, spin>>

\* TypeOK's twin: UNLOCK's CAS writes 0, a null pointer spelt as a number,
\* where the tail takes Nil.
MutantReleaseCasWritesZero(p) ==
    /\ pc[p] = "unlockCas"
    /\ IF tail = p
         THEN /\ tail' = 0
              /\ ghostQ' = Tail(ghostQ)
              /\ Goto(p, "idle")
         ELSE /\ Goto(p, "unlockWait")
              /\ UNCHANGED <<tail, ghostQ>>
    /\ UNCHANGED <<next, spin, pred>>
=============================================================================
