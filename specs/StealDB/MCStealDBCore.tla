--------------------------- MODULE MCStealDBCore ---------------------------
(***************************************************************************)
(* Small constants for the inductiveness checks of StealDBCore, and the   *)
(* mutants those checks must catch.  Two transactions take two records in *)
(* opposite orders, so queues, waits, timeouts and releases all occur.    *)
(***************************************************************************)
EXTENDS StealDBCore, TLC
CONSTANTS t1, t2, A, B   \* model values

OppositeProg == (t1 :> << [rec |-> A], [rec |-> B] >>) @@ (t2 :> << [rec |-> B], [rec |-> A] >>)
\* Every lock exclusive (the paper's); or both transactions read A, shared.
NoSharedCtx == {}
SharedA == {<<t1, A>>, <<t2, A>>}

\* A claim that does not test op.tid: a second thread claims an op that ran.
MutantClaimWithoutCas(o) ==
    /\ st[o] \in {"idle", "done"}
    /\ opTid' = [opTid EXCEPT ![o] = Bot]
    /\ SetSt(o, "claimed")
    /\ UNCHANGED <<execCount, lockQ, rel>>

\* A waiter that executes without being at the head of the queue.
MutantAcquireAnyway(o) ==
    /\ st[o] = "queued"
    /\ SetSt(o, "exec")
    /\ UNCHANGED <<opTid, execCount, lockQ, rel>>
=============================================================================
