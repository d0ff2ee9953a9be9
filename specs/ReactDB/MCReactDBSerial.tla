-------------------------- MODULE MCReactDBSerial --------------------------
(***************************************************************************)
(* The workloads and mutants of MCReactDB, checked against the serial      *)
(* reference through ReactDBSerial's prophecy.                             *)
(***************************************************************************)
EXTENDS MCReactDB, ReactDBSerial
=============================================================================
