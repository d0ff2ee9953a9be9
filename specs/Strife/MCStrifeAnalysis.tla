-------------------------- MODULE MCStrifeAnalysis --------------------------
(***************************************************************************)
(* Batches for StrifeAnalysis.tla, and its mutants.                       *)
(***************************************************************************)
EXTENDS StrifeAnalysis, StrifeClustering, TLC
CONSTANTS t1, t2, t3, t4, t5, t6, t7, x1, x2, x3, x4, d   \* model values

\* Every batch: each transaction reads, writes or leaves each item.
AllBatches == [Txn -> [Item -> {"r", "w", "-"}]]

\* One batch of seven, where the paper's bound fails (proofs/Strife.md):
\* four single-item transactions seed four clusters; t5 writes x1, x2 and
\* d; t6 and t7 write x3, x4 and d.  Merge joins {1, 2} and {3, 4}; then
\* whichever side re-allocates first claims d, and the other side stays.
Writes(S) == [x \in Item |-> IF x \in S THEN "w" ELSE "-"]
BoundBatch == {(t1 :> Writes({x1})) @@ (t2 :> Writes({x2})) @@ (t3 :> Writes({x3})) @@
               (t4 :> Writes({x4})) @@ (t5 :> Writes({x1, x2, d})) @@
               (t6 :> Writes({x3, x4, d})) @@ (t7 :> Writes({x3, x4, d}))}

\* StrifeExec's batches (MCStrifeExec.tla), item X as x1 and Y as x2; an
\* op that writes ("w" or "rw") is "w" here.  Batch 1: t1 updates X, t2
\* updates Y, t3 reads X and updates Y.  Batch 2: t4 updates X and Y, t5
\* updates Y and reads X.
ExecBatch1 == {(t1 :> Writes({x1})) @@ (t2 :> Writes({x2})) @@ (t3 :> (x1 :> "r" @@ x2 :> "w"))}
ExecBatch2 == {(t4 :> Writes({x1, x2})) @@ (t5 :> (x1 :> "r" @@ x2 :> "w"))}

\* The finished analysis, read as StrifeExec's placement (0: residual), is
\* one that StrifeExec's Analyze accepts: the operator both specs use.
ExecPlacement == [t \in Txn |-> IF t \in residual THEN 0 ELSE txnCl[t]]
ExecAcceptsInv ==
    stage = "done" =>
        ConflictFreePlacement(Txn, ExecPlacement,
                              LAMBDA t : {x \in Item : access[t][x] # "-"},
                              LAMBDA t : {x \in Item : access[t][x] = "w"})

\* Initial states of the inductiveness check: every state that satisfies
\* TypeOK and the allocation invariants, enumerated so that TLC prunes as it goes.
InductiveInit ==
    /\ access \in Batches
    /\ itemCl \in [Item -> Cluster \cup {NoCluster}]
    /\ txnCl \in [Txn -> Cluster \cup {NoCluster}]
    /\ ItemClusterInv
    /\ nClusters \in 0..SpotRounds
    /\ residual \in SUBSET Txn
    /\ stage \in Stages
    /\ todo \in SUBSET Txn
    /\ AllocationInv
    /\ picks \in 0..SpotRounds
    /\ baseCl = [x \in Item |-> NoCluster]
    /\ rootOf = [c \in Cluster |-> NoCluster]

\* Mutant: allocate a transaction whose items lie in two clusters into one of them.
MutantAllocateAcross(t) ==
    /\ stage = "alloc1" /\ t \in todo
    /\ todo' = todo \ {t}
    /\ IF Clusters(t) = {} THEN UNCHANGED <<txnCl, itemCl, residual>>
                          ELSE \E c \in Clusters(t) : AllocateTo(t, c)
    /\ UNCHANGED <<access, stage, picks, nClusters, baseCl, rootOf>>

\* Mutant: pre-processing that counts only the items a transaction writes,
\* ignoring an item one transaction reads and another writes.
MutantAccWritesOnly(t) == {x \in Written : access[t][x] = "w"}

\* Mutant: a merge stage that merges nothing.
MutantMergeNothing ==
    /\ stage = "merge"
    /\ baseCl' = itemCl
    /\ rootOf' = [c \in Cluster |-> IF c <= nClusters THEN c ELSE NoCluster]
    /\ stage' = "realloc"
    /\ todo' = residual
    /\ UNCHANGED <<access, picks, nClusters, itemCl, txnCl, residual>>

\* Mutant: re-allocation that places a residual in a cluster but leaves it
\* among the residuals too.
MutantReallocateKeepsResidual(t) ==
    /\ stage = "realloc" /\ t \in todo
    /\ todo' = todo \ {t}
    /\ IF Cardinality(Clusters(t)) = 1 THEN Place(t, OnlyCluster(t)) ELSE UNCHANGED <<txnCl, itemCl>>
    /\ UNCHANGED <<access, stage, picks, nClusters, residual, baseCl, rootOf>>

\* TypeOK's twin: the spot stage without its bound, so it picks more than
\* k times (Algorithm 1's loop run past k).
MutantSpotPick(t) ==
    /\ stage = "spot"
    /\ picks' = picks + 1
    /\ IF Acc(t) # {} /\ Clusters(t) = {} /\ txnCl[t] = NoCluster
         THEN /\ nClusters' = nClusters + 1
              /\ txnCl' = [txnCl EXCEPT ![t] = nClusters + 1]
              /\ itemCl' = Claim(t, nClusters + 1)
         ELSE UNCHANGED <<nClusters, txnCl, itemCl>>
    /\ UNCHANGED <<access, stage, residual, todo, baseCl, rootOf>>
=============================================================================
