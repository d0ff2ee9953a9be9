---------------------------- MODULE ReactDBSerial ----------------------------
(***************************************************************************)
(* ReactDB refines the serial reference, with a prophecy variable.         *)
(*                                                                         *)
(* Silo-style OCC serializes a transaction at its lock point: the moment   *)
(* it holds every write lock, before it validates its reads.  Validation   *)
(* then shows the reads were still current at that point, so they equal    *)
(* the serial store there.  But the lock point comes before the decision:  *)
(* another root can commit, at its own later decision, between them.  A    *)
(* refinement mapping that commits abstractly at the decision therefore    *)
(* fails on serializable runs (proofs/ReactDB.md, 2), and one that commits *)
(* at the lock point must know whether validation will succeed.            *)
(*                                                                         *)
(* The prophecy `willCommit` guesses, at the lock point, whether the root  *)
(* will commit; a validation whose outcome contradicts the guess cannot    *)
(* happen, so a wrong guess only leaves a behaviour stuck (these models    *)
(* run with the deadlock check off; ReactDB.cfg checks termination on      *)
(* ReactDB!Spec).  Either guess is always allowed, so every behaviour of   *)
(* ReactDB!Spec is the projection of a behaviour of SpecP with the right   *)
(* guesses (Lamport and Merz, "Prophecy made simple", the one-shot case).  *)
(*                                                                         *)
(* A root guessed to commit serializes at its lock point only if what it   *)
(* read equals the serial store there; otherwise it is left out of the     *)
(* order.  ProphecyKeptInv then says no root commits without having been   *)
(* serialized, so a protocol that commits stale reads fails that           *)
(* invariant instead of hiding in a stuck behaviour; InstalledStoreInv     *)
(* ties the mapped store to the real one.  The refinement check is these   *)
(* two invariants with SerializableRefinementProp.                         *)
(*                                                                         *)
(* Validation = "linear" validates and locks in one pass, so its lock      *)
(* point is its last validation, which is also its decision: no prophecy   *)
(* is needed there, and none is used.                                      *)
(***************************************************************************)
EXTENDS ReactDB

VARIABLES
    willCommit, \* prophecy: willCommit[r] guessed at r's lock point
    order       \* history: roots in lock-point order, those guessed to commit

pvars == <<willCommit, order>>

InitP == Init /\ willCommit = [r \in Root |-> FALSE] /\ order = << >>

Ordered == {order[i] : i \in 1..Len(order)}

\* The store the serial reference has reached: the serialized roots' writes.
SerialStore ==
    [k \in Key |->
        LET W == {i \in 1..Len(order) : k \in RootWrites(order[i])}
        IN IF W = {} THEN InitVal ELSE order[CHOOSE i \in W : \A j \in W : j <= i]]

\* Every value r read equals the serial store's.
ReadsSerial(r) == \A k \in RootReads(r) : rs[r][k] = SerialStore[k]

\* The lock point of "lockFirst": the last LockStep, when it succeeds.
LockStepP(r) ==
    /\ LockStep(r)
    /\ IF phase'[r] = "validating"
       THEN \E g \in BOOLEAN :
              /\ willCommit' = [willCommit EXCEPT ![r] = g]
              /\ order' = IF g /\ ReadsSerial(r) THEN Append(order, r) ELSE order
       ELSE UNCHANGED pvars

\* Validation agrees with the prophecy; for "linear", the last validation
\* is the lock point and the decision at once.
ValidateStepP(r) ==
    /\ ValidateStep(r)
    /\ IF Validation = "lockFirst"
       THEN /\ phase'[r] = "aborting" => ~willCommit[r]
            /\ phase'[r] = "writing" => willCommit[r]
            /\ UNCHANGED pvars
       ELSE /\ willCommit' = willCommit
            /\ order' = IF phase'[r] = "writing" /\ ReadsSerial(r) THEN Append(order, r) ELSE order

NextP ==
    \/ \E r \in Root : LockStepP(r) \/ ValidateStepP(r)
    \/ /\ \/ \E r \in Root : Submit(r) \/ BeginCommit(r) \/ WriteStep(r) \/ AbortAll(r)
          \/ \E c \in Container : Dequeue(c)
          \/ \E n \in SubTxn : ReadOp(n) \/ WriteLoad(n) \/ WriteStore(n) \/ Call(n)
                               \/ SyncReturn(n) \/ FinishLogic(n) \/ Complete(n)
       /\ UNCHANGED pvars

SpecP == InitP /\ [][NextP]_<<vars, pvars>>

\* No root reaches its write phase without having been serialized.
ProphecyKeptInv == \A r \in Root : phase[r] \in {"writing", "committed"} => r \in Ordered

\* The concrete store is the serial one wherever every serialized writer
\* of the key has committed: the mapping's store is not a fiction.
InstalledStoreInv ==
    \A k \in Key :
        (\A r \in Ordered : k \in RootWrites(r) => phase[r] = "committed") => store[k] = SerialStore[k]

\* The refinement mapping.  A root commits abstractly at its lock point,
\* reading what it read; the store is the serialized roots' writes in that
\* order.  It aborts abstractly when its coordinator starts aborting.
AbsStatus == [r \in Root |-> IF phase[r] \in {"aborting", "aborted"} THEN "aborted"
                             ELSE IF r \in Ordered THEN "committed"
                             ELSE "pending"]
AbsRead == [r \in Root |-> IF r \in Ordered
                           THEN [k \in Key |-> IF k \in RootReads(r) THEN rs[r][k] ELSE NoVal]
                           ELSE [k \in Key |-> NoVal]]

Ser == INSTANCE Serializable WITH Txn <- Root, ReadSet <- [r \in Root |-> RootReads(r)],
                                  WriteSet <- [r \in Root |-> RootWrites(r)],
                                  store <- SerialStore, status <- AbsStatus, readVal <- AbsRead
SerializableRefinementProp == Ser!Spec
=============================================================================
