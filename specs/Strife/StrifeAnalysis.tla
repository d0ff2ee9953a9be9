--------------------------- MODULE StrifeAnalysis ---------------------------
(***************************************************************************)
(* Strife's batch analysis (seed 002, Section 3): pre-processing, spot    *)
(* (Alg. 1), allocate in two rounds (Alg. 2), merge (Alg. 3) and the      *)
(* final re-allocation of residuals.  It must leave clusters with no      *)
(* conflict between them, so that they can run with no concurrency        *)
(* control, and a residual of bounded size.                                *)
(*                                                                         *)
(* The batch is a variable chosen in Init, so one model checks every      *)
(* batch up to a size.  Random choices (the spot stage's picks, the       *)
(* second allocate round's cluster) are nondeterministic, and so is the   *)
(* order in which transactions are allocated: the paper allocates in      *)
(* parallel, each transaction atomically by CAS on its items' cluster ids *)
(* (Section 4.1), which any sequential order covers.                      *)
(*                                                                         *)
(* Decisions (the extraction of Section 3.3 lost the merge criterion; see *)
(* proofs/Strife.md for the reconstruction and what TLC found about it):  *)
(*  - Merge criterion: clusters i and j merge when                        *)
(*        n(i, j) >= alpha * |T| / P                                       *)
(*    where n(i, j) counts the residuals touching items of both, and P is *)
(*    the number of pairs of clusters leaving allocate.  Merging is the   *)
(*    transitive closure of that relation.                                *)
(*  - Re-allocation moves a residual into the one cluster its items now   *)
(*    belong to, claiming its items that have no cluster yet, exactly as  *)
(*    allocate does; otherwise two re-allocated residuals could share     *)
(*    such an item from two clusters.                                      *)
(*  - A transaction that touches no written item forms no seed: it would  *)
(*    make a cluster of nothing.  Allocate's second round places it.     *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets
CONSTANTS
    Txn,          \* the batch's transactions
    Item,         \* data items
    Batches,      \* the batches to check: a set of [Txn -> [Item -> {"r", "w", "-"}]]
    SpotRounds,   \* k: how many random picks the spot stage makes (>= 1)
    AlphaNum,     \* alpha = AlphaNum / AlphaDen: the residual may be at most
    AlphaDen      \* a fraction alpha of the batch

ASSUME /\ SpotRounds \in Nat \ {0}
       /\ AlphaNum \in Nat \ {0} /\ AlphaDen \in Nat \ {0}
       /\ Batches \subseteq [Txn -> [Item -> {"r", "w", "-"}]]

Cluster == 1..SpotRounds     \* spot creates at most one cluster a pick
NoCluster == 0               \* d.Cluster = NULL

VARIABLES
    access,     \* access[t][d]: how t touches d, "r", "w" or "-"; fixed after Init
    stage,      \* "spot", "alloc1", "alloc2", "merge", "realloc" or "done"
    picks,      \* spot rounds made so far
    nClusters,  \* clusters made by spot, named 1..nClusters
    itemCl,     \* itemCl[d]: d.Cluster, a cluster or NoCluster
    txnCl,      \* txnCl[t]: t's cluster, or NoCluster
    residual,   \* the residual transactions
    todo,       \* transactions still to scan in this allocate or re-allocate round
    baseCl,     \* ghost: itemCl as it was when allocate ended (before merge)
    rootOf      \* ghost: rootOf[c], the cluster that allocate's cluster c merged into

vars == <<access, stage, picks, nClusters, itemCl, txnCl, residual, todo, baseCl, rootOf>>

\* Pre-processing: only items some transaction of the batch writes take part.
Written == {d \in Item : \E t \in Txn : access[t][d] = "w"}
Acc(t) == {d \in Written : access[t][d] # "-"}
Conflict(t1, t2) == \E d \in Item : \/ access[t1][d] = "w" /\ access[t2][d] # "-"
                                    \/ access[t2][d] = "w" /\ access[t1][d] # "-"
Clusters(t) == {itemCl[d] : d \in Acc(t)} \ {NoCluster}   \* clusters t's items are in
Claim(t, c) == [d \in Item |-> IF d \in Acc(t) /\ itemCl[d] = NoCluster THEN c ELSE itemCl[d]]
Stages == {"spot", "alloc1", "alloc2", "merge", "realloc", "done"}

TypeOK ==
    /\ access \in Batches
    /\ stage \in Stages
    /\ picks \in 0..SpotRounds
    /\ nClusters \in 0..SpotRounds
    /\ itemCl \in [Item -> Cluster \cup {NoCluster}]
    /\ txnCl \in [Txn -> Cluster \cup {NoCluster}]
    /\ residual \subseteq Txn
    /\ todo \subseteq Txn
    /\ baseCl \in [Item -> Cluster \cup {NoCluster}]
    /\ rootOf \in [Cluster -> Cluster \cup {NoCluster}]

Init ==
    /\ access \in Batches
    /\ stage = "spot"
    /\ picks = 0
    /\ nClusters = 0
    /\ itemCl = [d \in Item |-> NoCluster]
    /\ txnCl = [t \in Txn |-> NoCluster]
    /\ residual = {}
    /\ todo = {}
    /\ baseCl = [d \in Item |-> NoCluster]
    /\ rootOf = [c \in Cluster |-> NoCluster]

-----------------------------------------------------------------------------
(* Spot, Algorithm 1: k random picks; a pick none of whose items has a     *)
(* cluster seeds a new cluster with them (lines 5-12).                     *)

SpotPick(t) ==
    /\ stage = "spot" /\ picks < SpotRounds
    /\ picks' = picks + 1
    /\ IF Acc(t) # {} /\ Clusters(t) = {} /\ txnCl[t] = NoCluster
         THEN /\ nClusters' = nClusters + 1
              /\ txnCl' = [txnCl EXCEPT ![t] = nClusters + 1]
              /\ itemCl' = Claim(t, nClusters + 1)
         ELSE UNCHANGED <<nClusters, txnCl, itemCl>>
    /\ UNCHANGED <<access, stage, residual, todo, baseCl, rootOf>>

SpotEnd ==
    /\ stage = "spot" /\ picks = SpotRounds
    /\ stage' = "alloc1"
    /\ todo' = {t \in Txn : txnCl[t] = NoCluster}
    /\ UNCHANGED <<access, picks, nClusters, itemCl, txnCl, residual, baseCl, rootOf>>

-----------------------------------------------------------------------------
(* Allocate, Algorithm 2, one transaction at a time in any order.          *)

\* t joins cluster c and claims its items with none (lines 6-10).
Place(t, c) ==
    /\ txnCl' = [txnCl EXCEPT ![t] = c]
    /\ itemCl' = Claim(t, c)

AllocateTo(t, c) == Place(t, c) /\ UNCHANGED residual

\* The cluster of a transaction whose items are in exactly one.
OnlyCluster(t) == CHOOSE c \in Clusters(t) : TRUE

\* Its items are in two clusters or more: residual (lines 12-13).
MakeResidual(t) ==
    /\ residual' = residual \cup {t}
    /\ UNCHANGED <<txnCl, itemCl>>

\* First round (lines 2-13): a transaction none of whose items has a cluster waits.
Allocate1(t) ==
    /\ stage = "alloc1" /\ t \in todo
    /\ todo' = todo \ {t}
    /\ CASE Clusters(t) = {} -> UNCHANGED <<txnCl, itemCl, residual>>
         [] Cardinality(Clusters(t)) = 1 -> AllocateTo(t, OnlyCluster(t))
         [] OTHER -> MakeResidual(t)
    /\ UNCHANGED <<access, stage, picks, nClusters, baseCl, rootOf>>

Allocate1End ==
    /\ stage = "alloc1" /\ todo = {}
    /\ stage' = "alloc2"
    /\ todo' = {t \in Txn : txnCl[t] = NoCluster /\ t \notin residual}
    /\ UNCHANGED <<access, picks, nClusters, itemCl, txnCl, residual, baseCl, rootOf>>

\* Second round (lines 16-32): such a transaction goes to a random cluster.
Allocate2(t) ==
    /\ stage = "alloc2" /\ t \in todo
    /\ todo' = todo \ {t}
    /\ CASE Clusters(t) = {} /\ nClusters = 0 -> \* spot seeded nothing: start cluster 1
              /\ nClusters' = 1 /\ AllocateTo(t, 1)
         [] Clusters(t) = {} -> \E c \in 1..nClusters : AllocateTo(t, c) /\ UNCHANGED nClusters
         [] Cardinality(Clusters(t)) = 1 -> AllocateTo(t, OnlyCluster(t)) /\ UNCHANGED nClusters
         [] OTHER -> MakeResidual(t) /\ UNCHANGED nClusters
    /\ UNCHANGED <<access, stage, picks, baseCl, rootOf>>

Allocate2End ==
    /\ stage = "alloc2" /\ todo = {}
    /\ stage' = "merge"
    /\ UNCHANGED <<access, picks, nClusters, itemCl, txnCl, residual, todo, baseCl, rootOf>>

-----------------------------------------------------------------------------
(* Merge, Algorithm 3, and the re-allocation of residuals.                 *)

Pairs == {p \in SUBSET (1..nClusters) : Cardinality(p) = 2}
\* n(i, j): residuals touching items of both clusters.
PairCount(i, j) == Cardinality({r \in residual : {i, j} \subseteq Clusters(r)})
\* The reconstructed criterion: n(i, j) >= alpha * |T| / P.
MergeCriterion(i, j) ==
    PairCount(i, j) * Cardinality(Pairs) * AlphaDen >= AlphaNum * Cardinality(Txn)
\* Clusters joined by a chain of pairs meeting the criterion.
Joined(i, j) ==
    \E n \in 0..nClusters : \E path \in [0..n -> 1..nClusters] :
        /\ path[0] = i /\ path[n] = j
        /\ \A k \in 0..(n - 1) : path[k] # path[k + 1] => MergeCriterion(path[k], path[k + 1])
Root(c) == IF c = NoCluster THEN NoCluster
           ELSE CHOOSE r \in 1..c : Joined(c, r) /\ \A s \in 1..c : Joined(c, s) => r <= s

Merge ==
    /\ stage = "merge"
    /\ itemCl' = [d \in Item |-> Root(itemCl[d])]
    /\ txnCl' = [t \in Txn |-> Root(txnCl[t])]
    /\ baseCl' = itemCl
    /\ rootOf' = [c \in Cluster |-> IF c <= nClusters THEN Root(c) ELSE NoCluster]
    /\ stage' = "realloc"
    /\ todo' = residual
    /\ UNCHANGED <<access, picks, nClusters, residual>>

\* A residual whose items now lie in one cluster joins it.
Reallocate(t) ==
    /\ stage = "realloc" /\ t \in todo
    /\ todo' = todo \ {t}
    /\ IF Cardinality(Clusters(t)) = 1
         THEN Place(t, OnlyCluster(t)) /\ residual' = residual \ {t}
         ELSE UNCHANGED <<txnCl, itemCl, residual>>
    /\ UNCHANGED <<access, stage, picks, nClusters, baseCl, rootOf>>

ReallocateEnd ==
    /\ stage = "realloc" /\ todo = {}
    /\ stage' = "done"
    /\ UNCHANGED <<access, picks, nClusters, itemCl, txnCl, residual, todo, baseCl, rootOf>>

Done == stage = "done" /\ UNCHANGED vars

Next ==
    \/ \E t \in Txn : SpotPick(t) \/ Allocate1(t) \/ Allocate2(t) \/ Reallocate(t)
    \/ SpotEnd \/ Allocate1End \/ Allocate2End \/ Merge \/ ReallocateEnd \/ Done

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Properties *)

\* Each transaction ends in exactly one cluster or in the residual.
PartitionInv ==
    stage = "done" => \A t \in Txn : (txnCl[t] # NoCluster) # (t \in residual)

\* No item written by a transaction of one cluster is read or written by a
\* transaction of another: the clusters can run with no concurrency control.
ConflictFreeInv ==
    \A t1, t2 \in Txn :
        (txnCl[t1] # NoCluster /\ txnCl[t2] # NoCluster /\ txnCl[t1] # txnCl[t2])
            => ~Conflict(t1, t2)

\* Each item's cluster agrees with the transactions allocated to it.
ItemClusterInv ==
    \A t \in Txn : txnCl[t] # NoCluster => \A d \in Acc(t) : itemCl[d] = txnCl[t]

\* What allocate, merge and re-allocate preserve, checked as an inductive
\* invariant: cluster names are in range, a residual is in no cluster (and
\* there is none before allocate), a transaction still to scan is unplaced
\* (allocate) or residual (re-allocate),
\* and each item's cluster agrees with the transactions allocated to it.
\* ConflictFreeInv follows: two transactions of different clusters that
\* conflict share a written item, whose cluster would be both of theirs.
AllocationInv ==
    /\ \A t \in Txn : txnCl[t] <= nClusters /\ (t \in residual => txnCl[t] = NoCluster)
    /\ \A x \in Item : itemCl[x] <= nClusters
    /\ stage = "spot" => residual = {}
    /\ stage \in {"alloc1", "alloc2"} => \A t \in todo : txnCl[t] = NoCluster /\ t \notin residual
    /\ stage = "realloc" => todo \subseteq residual
    /\ ItemClusterInv

\* The bound the paper states: fewer than alpha * |T| residuals.
PaperResidualBoundInv ==
    stage = "done" => Cardinality(residual) * AlphaDen < AlphaNum * Cardinality(Txn)

\* The bound the algorithm guarantees.  A residual left at the end touches
\* two clusters the criterion did not join, or an item no cluster held
\* when allocate ended (an item claimed at re-allocation by a residual of
\* another cluster); and the residuals of the first kind are fewer than
\* alpha * |T|, because each counts in n(i, j) of an unjoined pair and each
\* such n(i, j) is below alpha * |T| / P.
SpansUnjoined(r) == \E i, j \in {baseCl[d] : d \in Acc(r)} \ {NoCluster} : rootOf[i] # rootOf[j]
TouchesFreeItem(r) == \E d \in Acc(r) : baseCl[d] = NoCluster
ResidualBoundInv ==
    stage = "done" =>
        /\ \A r \in residual : SpansUnjoined(r) \/ TouchesFreeItem(r)
        /\ Cardinality({r \in residual : SpansUnjoined(r)}) * AlphaDen < AlphaNum * Cardinality(Txn)
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety         *)
(* property, so each operator below says that a step never happens, and   *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* Merge joins two of allocate's clusters.
MergeReachable == ~\E c1, c2 \in Cluster : c1 # c2 /\ rootOf[c1] # NoCluster /\ rootOf[c1] = rootOf[c2]
\* The analysis ends with a transaction in a cluster; with one left residual.
ClusteredReachable == ~(stage = "done" /\ \E t \in Txn : txnCl[t] # NoCluster)
ResidualReachable == ~(stage = "done" /\ residual # {})
=============================================================================
