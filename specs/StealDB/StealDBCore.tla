---------------------------- MODULE StealDBCore ----------------------------
(***************************************************************************)
(* The part of StealDB that makes it correct, with stealing abstracted    *)
(* away: how an op is claimed, locked, executed and released.  Who runs   *)
(* an op, and how it came to try, do not matter here: any thread may try  *)
(* the claim of any op at any time, which covers every way stealing can   *)
(* hand an op to a thread.                                                 *)
(*                                                                         *)
(* StealDB.tla is checked to refine this module (CoreRefinementProp in    *)
(* the StealDB models), and the two invariants below are checked to be    *)
(* inductive on small constants (the StealDBCoreInductive* models).  So   *)
(* they hold in StealDB, and they are the reason exactly-once execution   *)
(* and mutual exclusion hold there.  proofs/StealDB.md tells the story.   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets
CONSTANTS
    Txn,    \* transaction ids
    Rec,    \* records
    Prog,   \* Prog[t][i].rec: the record op i of t touches (StealDB's Prog)
    SharedCtx, \* the pairs <<t, r>> whose lock context on r is shared (t only reads r); {} when every lock is exclusive
    Bot     \* model value: a claimed op's tid

Ops(t) == 1..Len(Prog[t])
OpId == UNION {{<<t, i>> : i \in Ops(t)} : t \in Txn}
Owner(o) == o[1]
RecOf(o) == Prog[o[1]][o[2]].rec

\* Where an op is.  idle: not yet claimed.  claimed: its CAS succeeded.
\* queued: its lock context waits.  exec: executing under the lock.
\* done: executed; the lock is held until release.  aborted: user abort,
\* timeout, or skipped because its transaction is doomed.
States == {"idle", "claimed", "queued", "exec", "done", "aborted"}

VARIABLES
    opTid,      \* opTid[o]: op.tid, Owner(o) until the claiming CAS sets Bot
    st,         \* st[o] \in States
    execCount,  \* ghost: how many times o has executed
    lockQ,      \* lockQ[r]: FIFO queue of transactions on r's lock; the head holds it, and so does each shared context with only shared ones ahead
    rel         \* rel[t]: t has released a lock

vars == <<opTid, st, execCount, lockQ, rel>>

Doomed(t) == \E i \in Ops(t) : st[<<t, i>>] = "aborted"
InQueue(t, q) == \E k \in 1..Len(q) : q[k] = t
\* Granted: the head, or a shared context with only shared contexts ahead
\* (readers at the head are admitted together, RWFifoLock.tla).
GrantedIn(t, r, q) == \E k \in 1..Len(q) :
                         /\ q[k] = t
                         /\ k = 1 \/ \A j \in 1..k : <<q[j], r>> \in SharedCtx
HoldsLock(t, r) == GrantedIn(t, r, lockQ[r])
NoDup(q) == \A j, k \in 1..Len(q) : j # k => q[j] # q[k]
DupFreeSeqs(S) == {q \in UNION {[1..n -> S] : n \in 0..Cardinality(S)} : NoDup(q)}

TypeOK ==
    /\ opTid \in [OpId -> Txn \cup {Bot}]
    /\ st \in [OpId -> States]
    /\ execCount \in [OpId -> 0..2]
    /\ lockQ \in [Rec -> DupFreeSeqs(Txn)]
    /\ rel \in [Txn -> BOOLEAN]

Init ==
    /\ opTid = [o \in OpId |-> Owner(o)]
    /\ st = [o \in OpId |-> "idle"]
    /\ execCount = [o \in OpId |-> 0]
    /\ lockQ = [r \in Rec |-> <<>>]
    /\ rel = [t \in Txn |-> FALSE]

SetSt(o, s) == st' = [st EXCEPT ![o] = s]

\* Alg. 2 lines 1-2: CAS(&op.tid, tid, Bot).  A failed CAS changes nothing.
Claim(o) ==
    /\ opTid[o] = Owner(o)
    /\ opTid' = [opTid EXCEPT ![o] = Bot]
    /\ SetSt(o, "claimed")
    /\ UNCHANGED <<execCount, lockQ, rel>>

\* Lines 3-6: queue the lock context, or skip the op of a doomed transaction.
TryLock(o) ==
    LET t == Owner(o) IN LET r == RecOf(o) IN
    /\ st[o] = "claimed"
    /\ IF Doomed(t)
         THEN /\ SetSt(o, "aborted") /\ UNCHANGED lockQ
         ELSE /\ lockQ' = [lockQ EXCEPT ![r] = Append(@, t)]
              /\ SetSt(o, IF GrantedIn(t, r, Append(lockQ[r], t)) THEN "exec" ELSE "queued")
    /\ UNCHANGED <<opTid, execCount, rel>>

\* Lines 8-9: the wait ends when the lock is ours.
Acquire(o) ==
    /\ st[o] = "queued"
    /\ HoldsLock(Owner(o), RecOf(o))
    /\ SetSt(o, "exec")
    /\ UNCHANGED <<opTid, execCount, lockQ, rel>>

\* The wait times out; the lock context stays queued until released.
Timeout(o) ==
    /\ st[o] = "queued"
    /\ ~HoldsLock(Owner(o), RecOf(o))
    /\ SetSt(o, "aborted")
    /\ UNCHANGED <<opTid, execCount, lockQ, rel>>

\* Lines 10-14.
Execute(o) ==
    /\ st[o] = "exec"
    /\ \E s \in {"done", "aborted"} : SetSt(o, s)
    /\ execCount' = [execCount EXCEPT ![o] = @ + 1]
    /\ UNCHANGED <<opTid, lockQ, rel>>

\* Alg. 1 lines 9 and 13, once t has decided: every op done (commit), or
\* doomed with no op queued or executing (abort).
Release(t, r) ==
    /\ IF Doomed(t) THEN \A i \in Ops(t) : st[<<t, i>>] \notin {"queued", "exec"}
                    ELSE \A i \in Ops(t) : st[<<t, i>>] = "done"
    /\ HoldsLock(t, r)
    /\ lockQ' = [lockQ EXCEPT ![r] = SelectSeq(@, LAMBDA x : x # t)]
    /\ rel' = [rel EXCEPT ![t] = TRUE]
    /\ UNCHANGED <<opTid, st, execCount>>

Next ==
    \/ \E o \in OpId : Claim(o) \/ TryLock(o) \/ Acquire(o) \/ Timeout(o) \/ Execute(o)
    \/ \E t \in Txn, r \in Rec : Release(t, r)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The two invariants, each clause a fact the proof uses. *)

\* Exactly once: an op is claimed exactly when its tid is gone, and it runs
\* only from "exec", which only its one claimant reaches.
ExactlyOnceCoreInv ==
    \A o \in OpId :
        /\ (opTid[o] = Owner(o)) = (st[o] = "idle")
        /\ opTid[o] \in {Owner(o), Bot}
        /\ st[o] \in {"idle", "claimed", "queued", "exec"} => execCount[o] = 0
        /\ st[o] = "done" => execCount[o] = 1
        /\ execCount[o] <= 1

\* Locks: a queued or executing op's context is in its record's queue; an
\* op executes, and a done op's transaction keeps the record, only at the
\* head; a transaction that has released requests and runs nothing more.
LockCoreInv ==
    /\ \A r \in Rec : NoDup(lockQ[r])
    /\ \A o \in OpId :
         LET t == Owner(o) IN LET q == lockQ[RecOf(o)] IN
         /\ st[o] \in {"queued", "exec"} => InQueue(t, q)
         /\ st[o] \in {"idle", "claimed"} => ~InQueue(t, q)
         /\ st[o] = "exec" => HoldsLock(t, RecOf(o))
         /\ (st[o] = "done" /\ InQueue(t, q)) => HoldsLock(t, RecOf(o))
         /\ st[o] = "done" => (InQueue(t, q) \/ rel[t])
    /\ \A t \in Txn : \A r \in Rec :
         InQueue(t, lockQ[r]) => \E i \in Ops(t) : Prog[t][i].rec = r /\ st[<<t, i>>] \in {"queued", "exec", "done", "aborted"}
    /\ \A t \in Txn : rel[t] =>
         /\ \A i \in Ops(t) : st[<<t, i>>] \notin {"queued", "exec"}
         /\ Doomed(t) \/ \A i \in Ops(t) : st[<<t, i>>] = "done"

\* Mutual exclusion follows: two transactions use a record at once only
\* if both hold it shared.
Uses(t, r) == \E i \in Ops(t) : Prog[t][i].rec = r /\
                 (st[<<t, i>>] = "exec" \/ (st[<<t, i>>] = "done" /\ InQueue(t, lockQ[r])))
MutualExclusionCoreInv ==
    \A r \in Rec : \A t1, t2 \in Txn :
        (t1 # t2 /\ Uses(t1, r) /\ Uses(t2, r)) => {<<t1, r>>, <<t2, r>>} \subseteq SharedCtx

\* Initial states for the inductiveness checks: every state satisfying TypeOK
\* and the invariants.  Written as TypeOK and the invariant interleaved, so TLC
\* prunes as it enumerates instead of building the whole TypeOK product.
InductiveInitExactlyOnce ==
    /\ opTid \in [OpId -> Txn \cup {Bot}]
    /\ st \in [OpId -> States]
    /\ \A o \in OpId : opTid[o] \in {Owner(o), Bot} /\ (opTid[o] = Owner(o)) = (st[o] = "idle")
    /\ execCount \in [OpId -> 0..2]
    /\ ExactlyOnceCoreInv
    /\ lockQ \in [Rec -> DupFreeSeqs(Txn)]
    /\ rel \in [Txn -> BOOLEAN]

InductiveInitLocks ==
    /\ InductiveInitExactlyOnce
    /\ LockCoreInv
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety         *)
(* property, so each operator below says that a step never happens, and   *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* An op executes; every op of every transaction executes (so a queued
\* lock context reaches the head).
OpDoneReachable == ~\E o \in OpId : st[o] = "done"
AllOpsDoneReachable == ~\A o \in OpId : st[o] = "done"
=============================================================================
