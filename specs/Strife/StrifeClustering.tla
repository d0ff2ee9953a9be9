--------------------------- MODULE StrifeClustering ---------------------------
(***************************************************************************)
(* What Strife's execution assumes of a clustering, stated once.           *)
(* StrifeExec runs any placement that satisfies it (Analyze);              *)
(* MCStrifeAnalysis checks that every placement StrifeAnalysis produces    *)
(* satisfies it, on StrifeExec's own batches (ExecAcceptsInv).             *)
(***************************************************************************)

\* p places each transaction of T: 0 is the residual, any other value a
\* cluster.  Two transactions of different clusters never conflict: neither
\* writes an item the other touches.  items(t) and writes(t) are the items
\* t touches and writes.
ConflictFreePlacement(T, p, items(_), writes(_)) ==
    \A t1, t2 \in T :
        (p[t1] # 0 /\ p[t2] # 0 /\ p[t1] # p[t2])
            => (writes(t1) \cap items(t2)) \cup (writes(t2) \cap items(t1)) = {}
=============================================================================
