---------------------------- MODULE SIMStrifeExec ----------------------------
(***************************************************************************)
(* A larger StrifeExec workload for TLC's simulation mode: eight           *)
(* transactions in two batches over three items.                          *)
(***************************************************************************)
EXTENDS MCStrifeExec
CONSTANTS t6, t7, t8   \* model values: three more transactions

Z == 3

\* Batch 1 (t1-t4) and batch 2 (t5-t8), each mixing transactions that fit
\* a cluster with ones that conflict across clusters; t2 and t6 may abort.
EightOps == (t1 :> << Op(X, "rw") >>) @@ (t2 :> << Op(Y, "rw") >>) @@
            (t3 :> << Op(X, "r"), Op(Z, "rw") >>) @@ (t4 :> << Op(Z, "rw"), Op(Y, "r") >>) @@
            (t5 :> << Op(X, "rw"), Op(Y, "rw") >>) @@ (t6 :> << Op(Y, "rw"), Op(X, "r") >>) @@
            (t7 :> << Op(Z, "rw") >>) @@ (t8 :> << Op(Z, "r"), Op(X, "rw") >>)
EightBatchOf == (t1 :> 1) @@ (t2 :> 1) @@ (t3 :> 1) @@ (t4 :> 1) @@
                (t5 :> 2) @@ (t6 :> 2) @@ (t7 :> 2) @@ (t8 :> 2)
EightAges == Ages @@ (t6 :> 6) @@ (t7 :> 7) @@ (t8 :> 8)
=============================================================================
