------------------------------ MODULE SIMChiller ------------------------------
(***************************************************************************)
(* A larger Chiller workload for TLC's simulation mode: five transactions  *)
(* on three partitions of three copies, and up to two crashes.             *)
(***************************************************************************)
EXTENDS MCChiller
CONSTANTS t4, t5   \* model values: two more transactions

\* The three transactions of the larger manual model, plus t4 (inner host
\* p2) updating a, and t5 (inner host p1) reading b and updating h.
FiveRead == ThreeRead @@ (t4 :> {"a"}) @@ (t5 :> {"h", "b"})
FiveWrite == ThreeWrite @@ (t4 :> {"a"}) @@ (t5 :> {"h"})
FiveInner == ThreeInner @@ (t4 :> p2) @@ (t5 :> p1)
=============================================================================
