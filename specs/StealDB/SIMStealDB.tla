----------------------------- MODULE SIMStealDB -----------------------------
(***************************************************************************)
(* Larger StealDB workloads for TLC's simulation mode (random behaviours  *)
(* of bounded depth), beside the exhaustive models of MCStealDB.           *)
(***************************************************************************)
EXTENDS MCStealDB
CONSTANTS t4, t5   \* model values: two more transactions

\* Five transactions over three shared records in clashing orders, each
\* with private work to steal; T1's and T5's last ops may hit a user
\* abort.  Cycles of lock waits form (T1: A then B, T2: B then A, T4: C
\* then B, T5: B then C), and C2's timeouts must break them.
MixedRec == {A, B, C} \cup (Txn \X {1})
MixedProg ==
    (t1 :> << Op(A, {}, TRUE, FALSE), Op(B, {1}, TRUE, FALSE), Op(<<t1, 1>>, {1}, TRUE, TRUE) >>) @@
    (t2 :> << Op(B, {}, TRUE, FALSE), Op(A, {1}, TRUE, FALSE), Op(<<t2, 1>>, {1}, TRUE, FALSE) >>) @@
    (t3 :> << Op(A, {}, TRUE, FALSE), Op(C, {1}, TRUE, FALSE), Op(<<t3, 1>>, {1}, TRUE, FALSE) >>) @@
    (t4 :> << Op(C, {}, TRUE, FALSE), Op(B, {1}, TRUE, FALSE) >>) @@
    (t5 :> << Op(B, {}, TRUE, FALSE), Op(C, {1}, TRUE, FALSE), Op(<<t5, 1>>, {2}, TRUE, TRUE) >>)
=============================================================================
