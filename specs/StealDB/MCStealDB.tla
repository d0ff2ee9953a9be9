----------------------------- MODULE MCStealDB -----------------------------
(***************************************************************************)
(* Workloads for StealDB.tla, and its mutants.  Each cfg picks a workload  *)
(* by substituting Rec and Prog, and a mutant by substituting one action.  *)
(* Records are tuples so that a transaction's private records permute      *)
(* with it under symmetry: <<t, k>> is t's k-th private record.            *)
(***************************************************************************)
EXTENDS StealDB, TLC
CONSTANTS t1, t2, t3   \* model values naming the transactions of the fixed workloads

Op(r, d, w, a) == [rec |-> r, deps |-> d, write |-> w, mayAbort |-> a]
TxnSymmetry == Permutations(Txn)

Hot == <<"hot", 0>>
A == <<"a", 0>>
B == <<"b", 0>>
C == <<"c", 0>>

\* Micro-benchmark shape (Section 4.2): every transaction increments the hot
\* record first, then two private records that depend only on it and are
\* the work waiters steal.  The last op may hit a user abort.
HotRec == {Hot} \cup (Txn \X {1, 2})
HotProg == [t \in Txn |-> << Op(Hot, {}, TRUE, FALSE),
                             Op(<<t, 1>>, {1}, TRUE, FALSE),
                             Op(<<t, 2>>, {1}, TRUE, TRUE) >>]

\* Larger, for manual runs: a third private record per transaction.
HotFourOpsRec == {Hot} \cup (Txn \X {1, 2, 3})
HotFourOpsProg == [t \in Txn |-> << Op(Hot, {}, TRUE, FALSE),
                                    Op(<<t, 1>>, {1}, TRUE, FALSE),
                                    Op(<<t, 2>>, {1}, TRUE, FALSE),
                                    Op(<<t, 3>>, {1}, TRUE, TRUE) >>]

\* Two transactions take two records in opposite orders: the textbook 2PL
\* deadlock, with a private op each to steal; T1's may hit a user abort.
OppositeRec == {A, B} \cup (Txn \X {1})
OppositeProg ==
    (t1 :> << Op(A, {}, TRUE, FALSE), Op(B, {1}, TRUE, FALSE), Op(<<t1, 1>>, {1}, TRUE, TRUE) >>) @@
    (t2 :> << Op(B, {}, TRUE, FALSE), Op(A, {1}, TRUE, FALSE), Op(<<t2, 1>>, {1}, TRUE, FALSE) >>)

\* Sorted lock order broken by stealing (Section 5): every transaction
\* locks in the order A < B < C.  T1 locks A, then B and C in parallel; its
\* own worker takes B first.  T2 waits on A and steals T1's C.  T3 locks B
\* then C.  Without stealing no cycle can form.
LockOrderRec == {A, B, C} \cup (Txn \X {1})
LockOrderProg ==
    (t1 :> << Op(A, {}, TRUE, FALSE), Op(B, {1}, TRUE, FALSE), Op(C, {1}, TRUE, FALSE) >>) @@
    (t2 :> << Op(A, {}, TRUE, FALSE), Op(<<t2, 1>>, {1}, TRUE, FALSE) >>) @@
    (t3 :> << Op(B, {}, TRUE, FALSE), Op(C, {1}, TRUE, FALSE) >>)

\* One transaction ahead of two waiters on two different records: both
\* waiters' predecessor is T1, so both read T1's one steal-context word.
TwoHotRec == {A, B} \cup (Txn \X {1, 2})
TwoHotProg ==
    (t1 :> << Op(A, {}, TRUE, FALSE), Op(B, {1}, TRUE, FALSE),
              Op(<<t1, 1>>, {1}, TRUE, FALSE), Op(<<t1, 2>>, {1}, TRUE, FALSE) >>) @@
    (t2 :> << Op(A, {}, TRUE, FALSE) >>) @@
    (t3 :> << Op(B, {}, TRUE, FALSE) >>)

\* The hot shape with the user abort on the middle op: the owner can find
\* op 2 aborted while a waiter still runs op 3, stolen (C4).
HotEarlyAbortProg == [t \in Txn |-> << Op(Hot, {}, TRUE, FALSE),
                                       Op(<<t, 1>>, {1}, TRUE, TRUE),
                                       Op(<<t, 2>>, {1}, TRUE, FALSE) >>]

\* Reader-writer locks (SharedReads): T1 writes the hot record, T2 and T3
\* only read it, so they hold it together; each then writes a private
\* record, the work waiters steal.  A writer can queue behind two readers
\* and follow the second.  HotReadLargeProg, for manual runs, has two
\* private records each, as the Coyote and P workloads do.
HotReadRec == {Hot} \cup (Txn \X {1})
HotReadProg == [t \in Txn |-> << Op(Hot, {}, t = t1, FALSE),
                                 Op(<<t, 1>>, {1}, TRUE, t = t1) >>]
HotReadLargeProg == [t \in Txn |-> << Op(Hot, {}, t = t1, FALSE),
                                      Op(<<t, 1>>, {1}, TRUE, FALSE),
                                      Op(<<t, 2>>, {1}, TRUE, t = t1) >>]
ReaderSymmetry == Permutations({t2, t3})   \* the two readers are alike

\* Each transaction reads one record and then writes the other: both
\* shares are granted and each write waits for the other's reader, the
\* deadlock that shared locks add.  T1 waits behind T2's share and steals
\* T2's private op.
SharedOppositeProg ==
    (t1 :> << Op(A, {}, FALSE, FALSE), Op(B, {1}, TRUE, FALSE), Op(<<t1, 1>>, {1}, TRUE, TRUE) >>) @@
    (t2 :> << Op(B, {}, FALSE, FALSE), Op(A, {1}, TRUE, FALSE), Op(<<t2, 1>>, {1}, TRUE, FALSE) >>)

-----------------------------------------------------------------------------
(* Retries, as the engine does: an aborted transaction runs again.  The    *)
(* engine gives each attempt a fresh id (proofs/StealDB.md, 7), so what    *)
(* still names the old attempt is stale: a steal context that names it     *)
(* offers nothing, and a claim of one of its ops fails.  The model reuses  *)
(* the name, so the retry clears those (each is the top frame of its       *)
(* worker: a frame about to claim, or about to run a context it took).     *)
(* It resets the ghosts too: this is a model for liveness only.            *)

Stale(f, w) == (f.pc = "check" /\ Owner(f.op) = w) \/ (f.hand # Bot /\ f.hand.tok[1] = w)
DropStale(v, w) ==
    IF stack[v] = <<>> \/ ~Stale(Top(v), w) THEN stack[v]
    ELSE IF Top(v).pc = "check" THEN SubSeq(stack[v], 1, Len(stack[v]) - 1)
    ELSE [stack[v] EXCEPT ![Len(stack[v])] = [@ EXCEPT !.pc = "wait", !.hand = Bot]]

OwnerRetry(w) ==
    /\ phase[w] = "aborted"
    /\ phase' = [phase EXCEPT ![w] = "run"]
    /\ stack' = [v \in Txn |-> DropStale(v, w)]
    /\ opTid' = [o \in OpId |-> IF Owner(o) = w THEN w ELSE opTid[o]]
    /\ opStatus' = [o \in OpId |-> IF Owner(o) = w THEN "none" ELSE opStatus[o]]
    /\ execCount' = [o \in OpId |-> IF Owner(o) = w THEN 0 ELSE execCount[o]]
    /\ rq' = [rq EXCEPT ![w] = Roots(w)]
    /\ cursor' = [cursor EXCEPT ![w] = 1]
    /\ stealCtx' = [t \in Txn |-> IF t = w \/ (stealCtx[t] # Bot /\ stealCtx[t][1] = w) THEN Bot ELSE stealCtx[t]]
    /\ gen' = [gen EXCEPT ![w] = 0]
    /\ reads' = [reads EXCEPT ![w] = [r \in Rec |-> NoVal]]
    /\ released' = [released EXCEPT ![w] = FALSE]
    /\ UNCHANGED <<lockQ, store>>

RetryStep(w) == WorkerStep(w) \/ OwnerRetry(w)
RetrySpec == Init /\ [][(\E w \in Txn : RetryStep(w)) \/ Done]_vars /\ \A w \in Txn : WF_vars(RetryStep(w))

\* Every transaction commits in the end, however often it is retried.
CommitProp == \A t \in Txn : <>(phase[t] = "committed")

-----------------------------------------------------------------------------
(* Mutants: a deliberately broken copy of one step each.                   *)

\* (a) The paper's STEALOP: read Tp.stealCtx, clear it in a later step.
MutantStealTakeNonAtomic(w) == PaperStealRead(w) \/ PaperStealClear(w)

\* (b) The check phase without CAS: test op.tid, then set it in a later step.
MutantClaimCheckThenSet(w) ==
    LET f == Top(w) IN LET o == f.op IN
    /\ Busy(w) /\ f.pc \in {"check", "claim"}
    /\ IF f.pc = "check"
         THEN IF opTid[o] = Owner(o) THEN Goto(w, "claim") ELSE PopTop(w)
         ELSE Goto(w, "lock")
    /\ opTid' = IF f.pc = "claim" THEN [opTid EXCEPT ![o] = Bot] ELSE opTid
    /\ UNCHANGED <<opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* (d) Release the op's lock as soon as it has executed, before commit.
MutantExecuteAndRelease(w) ==
    LET t == Owner(Top(w).op) IN LET r == RecOf(Top(w).op) IN
    /\ ExecuteOp(w)
    /\ lockQ' = [lockQ EXCEPT ![r] = SelectSeq(@, LAMBDA x : x # t)]
    /\ released' = [released EXCEPT ![t] = TRUE]

\* A timed-out waiter that takes its lock context out of the queue (an
\* abortable queue lock), instead of leaving it for the owner to release.
MutantTimeoutCancelsContext(w) ==
    LET o == Top(w).op IN
    /\ Busy(w) /\ Top(w).pc = "wait" /\ ~Acquired(o)
    /\ opStatus' = [opStatus EXCEPT ![o] = "aborted"]
    /\ PopTop(w)
    /\ lockQ' = [lockQ EXCEPT ![RecOf(o)] = SelectSeq(@, LAMBDA x : x # Owner(o))]
    /\ UNCHANGED <<opTid, rq, cursor, stealCtx, phase, store, reads, execCount, released, gen>>

\* TypeOK's twin: Alg. 3 line 10 without its guard "if i_op > 1", so the
\* last op taken hands down the context <<Ts, 0>>, which names no op.
MutantStealRunHandsDownZero(w) ==
    LET f == Top(w) IN LET ts == f.hand.tok[1] IN LET i == f.hand.tok[2] IN
    LET t == Owner(f.op) IN
    /\ Busy(w) /\ f.pc = "steal"
    /\ IF IsRunning(ts)
         THEN /\ SetTopAndPush(w, [f EXCEPT !.pc = "wait", !.hand = Bot], NewFrame(<<ts, rq[ts][i]>>))
              /\ WriteCtx(t, <<ts, i - 1>>)
         ELSE /\ SetTop(w, [f EXCEPT !.pc = "wait", !.hand = Bot])
              /\ UNCHANGED <<stealCtx, gen>>
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, lockQ, phase, store, reads, execCount, released>>

\* The paper's second exit kept with shared locks: a writer whose
\* predecessor (a reader) has ended proceeds while an earlier reader still
\* holds the record (MutualExclusionInv).
MutantProceedWhenPredEnds(w) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "wait"
    /\ Acquired(f.op) \/ PredEndedExit(f)
    /\ Goto(w, "exec")
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* (e) A waiter that stops waiting once it has nothing left to steal, lock or no lock.
MutantProceedWithoutLock(w) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "wait"
    /\ Goto(w, "exec")
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>
=============================================================================
