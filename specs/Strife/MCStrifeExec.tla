---------------------------- MODULE MCStrifeExec ----------------------------
(***************************************************************************)
(* Workloads for StrifeExec.tla, and its mutants.                         *)
(***************************************************************************)
EXTENDS StrifeExec, TLC
CONSTANTS t1, t2, t3, t4, t5   \* model values

X == 1
Y == 2
Op(x, m) == [item |-> x, mode |-> m]

\* Batch 1: t1 updates X, t2 updates Y (and may abort), t3 reads X and
\* updates Y, so it conflicts with both.  Batch 2: t4 and t5 update X and Y
\* in opposite orders.
TwoBatchOps == (t1 :> << Op(X, "rw") >>) @@ (t2 :> << Op(Y, "rw") >>) @@
               (t3 :> << Op(X, "r"), Op(Y, "rw") >>) @@
               (t4 :> << Op(X, "rw"), Op(Y, "rw") >>) @@ (t5 :> << Op(Y, "rw"), Op(X, "r") >>)
TwoBatchOf == (t1 :> 1) @@ (t2 :> 1) @@ (t3 :> 1) @@ (t4 :> 2) @@ (t5 :> 2)
Ages == (t1 :> 1) @@ (t2 :> 2) @@ (t3 :> 3) @@ (t4 :> 4) @@ (t5 :> 5)

\* Batch 2 alone, as one batch: the smallest workload where NO_WAIT livelocks.
OneBatchOf == (t4 :> 1) @@ (t5 :> 1)

\* Mutant: the residual phase starts while clusters still run.
MutantBarrierSkipped(b) ==
    /\ bphase[b] = "clusters"
    /\ SetPhase(b, "residuals")
    /\ UNCHANGED <<place, status, pc, holder, buf, reads, store, retries, commits>>

\* Mutant: a NO_WAIT conflict abort that keeps the locks it holds.
MutantAbortKeepsLocks(t) ==
    /\ pc' = [pc EXCEPT ![t] = 1]
    /\ buf' = [buf EXCEPT ![t] = {}]
    /\ reads' = [reads EXCEPT ![t] = [x \in Item |-> NoVal]]
    /\ retries' = [retries EXCEPT ![t] = IF @ < MaxRetries THEN @ + 1 ELSE @]
    /\ UNCHANGED holder

\* Mutant: with the overlap, batch b+1's clusters start as soon as it is
\* analysed, while batch b still runs (its clusters or its residuals).
MutantStartClustersEarly(b) ==
    /\ bphase[b] = "analysed"
    /\ SetPhase(b, "clusters")
    /\ UNCHANGED <<place, status, pc, holder, buf, reads, store, retries, commits>>

\* Mutant: a commit that the worker does not record, so it runs the
\* transaction again (a retry loop that cannot tell commit from abort).
MutantRetryAfterCommit(t) ==
    /\ status[t] = "running" /\ pc[t] > Len(Ops[t])
    /\ store' = [x \in Item |-> IF x \in buf[t] THEN t ELSE store[x]]
    /\ commits' = [commits EXCEPT ![t] = @ + 1]
    /\ AbortAttempt(t)
    /\ UNCHANGED <<bphase, place, status>>

\* TypeOK's twin: the conflict-abort counter is not capped at MaxRetries.
MutantAbortAttemptUncapped(t) ==
    /\ ReleaseAll(t)
    /\ pc' = [pc EXCEPT ![t] = 1]
    /\ buf' = [buf EXCEPT ![t] = {}]
    /\ reads' = [reads EXCEPT ![t] = [x \in Item |-> NoVal]]
    /\ retries' = [retries EXCEPT ![t] = @ + 1]
=============================================================================
