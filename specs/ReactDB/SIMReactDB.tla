------------------------------ MODULE SIMReactDB ------------------------------
(***************************************************************************)
(* A larger ReactDB workload for TLC's simulation mode: five roots.        *)
(***************************************************************************)
EXTENDS MCReactDB
CONSTANTS wR, xR   \* model values: two more roots

\* The three roots of the larger manual model, plus W (on RA) updating x
\* and X (on RB) writing w blindly.
FiveRoots == ThreeRoots \cup {wR, xR}
FiveNodes == ThreeNodes \cup {wR, xR}
FiveRootOf == ThreeRootOf @@ (wR :> wR) @@ (xR :> xR)
FiveReactorOf == ThreeReactorOf @@ (wR :> RA) @@ (xR :> RB)
FiveOps == ThreeOps @@ (wR :> << R("x"), W("x") >>) @@ (xR :> << W("w") >>)
=============================================================================
