----------------------------- MODULE StrifeExec -----------------------------
(***************************************************************************)
(* Strife's execution (seed 002, Sections 2.2, 2.3 and 4.1): batch after   *)
(* batch, the analysis places each transaction in a conflict-free cluster  *)
(* or in the residual; clusters run in parallel with no concurrency        *)
(* control, one worker a cluster running its transactions one after        *)
(* another; a barrier; then the residuals run concurrently under 2PL       *)
(* with NO_WAIT, retrying after a conflict abort; then the next batch.     *)
(*                                                                         *)
(* The analysis is StrifeAnalysis.tla.  Here Analyze picks ANY placement   *)
(* with no conflict between two clusters (StrifeClustering.tla).  The      *)
(* analysis is checked to produce only such placements on these batches    *)
(* (MCStrifeAnalysis's ExecAcceptsInv), so whatever clustering it returns, *)
(* its execution is among the behaviours checked here.                     *)
(*                                                                         *)
(* Overlap (Section 4.1, described but not built by the paper): with       *)
(* Overlap = TRUE, batch b+1 is analysed while batch b runs.  The paper     *)
(* names only the residual phase; we also let the analysis start during    *)
(* b's conflict-free phase, where a worker with no cluster left to take    *)
(* would idle (with few workers and one cluster, all but one of them).     *)
(* The analysis reads only the batch's read and write sets, which nothing   *)
(* running writes, so either phase is as safe as the other.  Batch b+1's   *)
(* clusters still start only once batch b is done: they run without       *)
(* locks, and batch b's residuals hold locks that they would ignore.       *)
(*                                                                         *)
(* CC picks the residual protocol: "nowait" (the paper's), "waitdie" (an   *)
(* older requester waits, a younger one dies and retries with its          *)
(* timestamp), "lockordered" (every lock first, in item order, waiting),   *)
(* or "nowaitThenWaitDie": NO_WAIT for the first MaxRetries conflicts of   *)
(* a transaction, WaitDie after.  TLC shows NO_WAIT with retry can         *)
(* livelock (proofs/Strife.md); the last is the protocol the engine is     *)
(* to implement.                                                           *)
(* With Fallback = TRUE every transaction is residual: the baselines of    *)
(* Section 4 (WaitDie, LockOrdered).                                       *)
(*                                                                         *)
(* Each operation touches one item once: "r" reads it, "w" writes it       *)
(* blindly, "rw" reads then writes.  Writes are buffered and installed at  *)
(* commit; a write stores the writer's id (see Serializable.tla).          *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, StrifeClustering
CONSTANTS
    Txn,          \* every transaction of every batch
    Item,         \* items, numbered: lockordered takes locks in this order
    BatchOf,      \* BatchOf[t] \in 1..NumBatches
    NumBatches,   \* how many batches run, one after another
    Ops,          \* Ops[t]: t's operations, a sequence of [item, mode]
    MayAbort,     \* transactions that may hit a user abort at commit
    MaxClusters,  \* how many clusters the analysis may form in a batch
    CC,           \* the residual protocol: "nowait", "waitdie", "lockordered", "nowaitThenWaitDie"
    MaxRetries,   \* "nowaitThenWaitDie": conflict aborts under NO_WAIT before WaitDie
    Fallback,     \* TRUE: every transaction is residual (the baselines)
    Overlap,      \* TRUE: analyse batch b+1 while batch b's clusters or residuals run
    Age,          \* Age[t]: WaitDie's timestamp, kept across retries (smaller is older)
    None,         \* model value: no lock holder
    InitVal,      \* model value: every item's value before any commit
    NoVal         \* model value: not read

ASSUME /\ Item \subseteq Nat
       /\ \A t \in Txn : \A i, j \in 1..Len(Ops[t]) : i # j => Ops[t][i].item # Ops[t][j].item
       /\ CC \in {"nowait", "waitdie", "lockordered", "nowaitThenWaitDie"}
       /\ MaxRetries \in Nat
       /\ Fallback \in BOOLEAN /\ Overlap \in BOOLEAN

Batches == 1..NumBatches
InBatch(b) == {t \in Txn : BatchOf[t] = b}
ItemsOf(t) == {Ops[t][i].item : i \in 1..Len(Ops[t])}
ReadsOf(t) == {Ops[t][i].item : i \in {j \in 1..Len(Ops[t]) : Ops[t][j].mode \in {"r", "rw"}}}
WritesOf(t) == {Ops[t][i].item : i \in {j \in 1..Len(Ops[t]) : Ops[t][j].mode \in {"w", "rw"}}}
Residual == 0                                   \* place[t] of a residual
Decided == {"committed", "aborted"}

VARIABLES
    bphase,     \* bphase[b] \in {"waiting", "analysed", "clusters", "residuals", "done"}
    place,      \* place[t]: t's cluster 1..MaxClusters, or Residual; set by Analyze
    status,     \* status[t] \in {"queued", "running", "committed", "aborted"}
    pc,         \* pc[t]: the next operation of t's current attempt
    holder,     \* holder[x]: the transaction holding x's lock, or None
    buf,        \* buf[t]: items t's current attempt has written (buffered)
    reads,      \* reads[t][x]: what t's current attempt read of x
    store,      \* store[x]: x's committed value
    retries,    \* retries[t]: t's conflict aborts so far, counted up to MaxRetries
    commits     \* ghost: how many times t has committed

vars == <<bphase, place, status, pc, holder, buf, reads, store, retries, commits>>

TypeOK ==
    /\ bphase \in [Batches -> {"waiting", "analysed", "clusters", "residuals", "done"}]
    /\ place \in [Txn -> 0..MaxClusters]
    /\ status \in [Txn -> {"queued", "running"} \cup Decided]
    /\ pc \in [Txn -> Nat]
    /\ holder \in [Item -> Txn \cup {None}]
    /\ buf \in [Txn -> SUBSET Item]
    /\ reads \in [Txn -> [Item -> Txn \cup {InitVal, NoVal}]]
    /\ store \in [Item -> Txn \cup {InitVal}]
    /\ retries \in [Txn -> 0..MaxRetries]
    /\ commits \in [Txn -> Nat]

Init ==
    /\ bphase = [b \in Batches |-> "waiting"]
    /\ place = [t \in Txn |-> Residual]
    /\ status = [t \in Txn |-> "queued"]
    /\ pc = [t \in Txn |-> 1]
    /\ holder = [x \in Item |-> None]
    /\ buf = [t \in Txn |-> {}]
    /\ reads = [t \in Txn |-> [x \in Item |-> NoVal]]
    /\ store = [x \in Item |-> InitVal]
    /\ retries = [t \in Txn |-> 0]
    /\ commits = [t \in Txn |-> 0]

SetPhase(b, p) == bphase' = [bphase EXCEPT ![b] = p]
Clustered(t) == place[t] # Residual
Holds(t) == {x \in Item : holder[x] = t}
ReleaseAll(t) == holder' = [x \in Item |-> IF holder[x] = t THEN None ELSE holder[x]]

-----------------------------------------------------------------------------
(* Batches                                                                 *)

\* The analysis of batch b: any placement with no conflict between two
\* clusters.  Without Overlap it waits for batch b-1 to finish; with it,
\* only for batch b-1 to start running (its conflict-free phase).
Analyze(b) ==
    /\ bphase[b] = "waiting"
    /\ b > 1 => IF Overlap THEN bphase[b - 1] \in {"clusters", "residuals", "done"} ELSE bphase[b - 1] = "done"
    /\ \E p \in [InBatch(b) -> IF Fallback THEN {Residual} ELSE 0..MaxClusters] :
         /\ ConflictFreePlacement(InBatch(b), p, ItemsOf, WritesOf)
         /\ place' = [t \in Txn |-> IF t \in InBatch(b) THEN p[t] ELSE place[t]]
    /\ SetPhase(b, "analysed")
    /\ UNCHANGED <<status, pc, holder, buf, reads, store, retries, commits>>

\* The conflict-free phase of b starts once batch b-1 is done.
StartClusters(b) ==
    /\ bphase[b] = "analysed"
    /\ b > 1 => bphase[b - 1] = "done"
    /\ SetPhase(b, "clusters")
    /\ UNCHANGED <<place, status, pc, holder, buf, reads, store, retries, commits>>

\* The barrier: the residual phase starts when every cluster has finished.
Barrier(b) ==
    /\ bphase[b] = "clusters"
    /\ \A t \in InBatch(b) : Clustered(t) => status[t] \in Decided
    /\ SetPhase(b, "residuals")
    /\ UNCHANGED <<place, status, pc, holder, buf, reads, store, retries, commits>>

FinishBatch(b) ==
    /\ bphase[b] = "residuals"
    /\ \A t \in InBatch(b) : status[t] \in Decided
    /\ SetPhase(b, "done")
    /\ UNCHANGED <<place, status, pc, holder, buf, reads, store, retries, commits>>

-----------------------------------------------------------------------------
(* Transactions                                                            *)

\* A cluster's worker takes its next transaction when the previous one ended.
\* (After the barrier no clustered transaction is left queued; the phase
\* test admits "residuals" so that a mutant skipping the barrier lets the
\* clusters go on beside the residuals, as threads would.)
ClusterStart(t) ==
    /\ bphase[BatchOf[t]] \in {"clusters", "residuals"} /\ Clustered(t) /\ status[t] = "queued"
    /\ \A u \in InBatch(BatchOf[t]) : place[u] = place[t] => status[u] # "running"
    /\ status' = [status EXCEPT ![t] = "running"]
    /\ UNCHANGED <<bphase, place, pc, holder, buf, reads, store, retries, commits>>

\* Every residual runs at once, each on its own worker.
ResidualStart(t) ==
    /\ bphase[BatchOf[t]] = "residuals" /\ ~Clustered(t) /\ status[t] = "queued"
    /\ status' = [status EXCEPT ![t] = "running"]
    /\ UNCHANGED <<bphase, place, pc, holder, buf, reads, store, retries, commits>>

\* Perform t's next operation on its item.
DoOp(t) ==
    LET op == Ops[t][pc[t]] IN
    /\ reads' = IF op.mode \in {"r", "rw"} THEN [reads EXCEPT ![t][op.item] = store[op.item]] ELSE reads
    /\ buf' = IF op.mode \in {"w", "rw"} THEN [buf EXCEPT ![t] = @ \cup {op.item}] ELSE buf
    /\ pc' = [pc EXCEPT ![t] = @ + 1]

\* The conflict-free phase: no lock at all.
ClusterOp(t) ==
    /\ status[t] = "running" /\ Clustered(t) /\ pc[t] <= Len(Ops[t])
    /\ DoOp(t)
    /\ UNCHANGED <<bphase, place, status, holder, store, retries, commits>>

\* A conflict abort in the residual phase: release every lock, forget the
\* attempt and start again.
AbortAttempt(t) ==
    /\ ReleaseAll(t)
    /\ pc' = [pc EXCEPT ![t] = 1]
    /\ buf' = [buf EXCEPT ![t] = {}]
    /\ reads' = [reads EXCEPT ![t] = [x \in Item |-> NoVal]]
    /\ retries' = [retries EXCEPT ![t] = IF @ < MaxRetries THEN @ + 1 ELSE @]

\* On a conflict with holder h: die (abort and retry) or wait.
Dies(t, h) ==
    CASE CC = "nowait" -> TRUE
      [] CC = "waitdie" -> Age[t] > Age[h]
      [] CC = "nowaitThenWaitDie" -> retries[t] < MaxRetries \/ Age[t] > Age[h]
      [] OTHER -> FALSE

\* The residual phase, except LockOrdered: lock the op's item, or meet a
\* conflict.
ResidualOp(t) ==
    LET x == Ops[t][pc[t]].item IN
    /\ status[t] = "running" /\ ~Clustered(t) /\ pc[t] <= Len(Ops[t])
    /\ CC # "lockordered"
    /\ IF holder[x] \in {None, t}
         THEN /\ holder' = [holder EXCEPT ![x] = t]
              /\ DoOp(t)
              /\ UNCHANGED retries
         ELSE /\ Dies(t, holder[x])     \* otherwise t waits: no step
              /\ AbortAttempt(t)
    /\ UNCHANGED <<bphase, place, status, store, commits>>

\* LockOrdered: every lock first, in item order, waiting for each ...
LockOrderedAcquire(t) ==
    LET x == CHOOSE y \in ItemsOf(t) \ Holds(t) : \A z \in ItemsOf(t) \ Holds(t) : y <= z IN
    /\ status[t] = "running" /\ ~Clustered(t) /\ CC = "lockordered"
    /\ ItemsOf(t) \ Holds(t) # {}
    /\ holder[x] = None
    /\ holder' = [holder EXCEPT ![x] = t]
    /\ UNCHANGED <<bphase, place, status, pc, buf, reads, store, retries, commits>>

\* ... then the operations.
LockOrderedOp(t) ==
    /\ status[t] = "running" /\ ~Clustered(t) /\ CC = "lockordered"
    /\ ItemsOf(t) \subseteq Holds(t) /\ pc[t] <= Len(Ops[t])
    /\ DoOp(t)
    /\ UNCHANGED <<bphase, place, status, holder, store, retries, commits>>

\* Commit, installing the buffered writes, or a user abort; either releases
\* every lock (a clustered transaction holds none).
Finish(t) ==
    /\ status[t] = "running" /\ pc[t] > Len(Ops[t])
    /\ \E commit \in IF t \in MayAbort THEN BOOLEAN ELSE {TRUE} :
         IF commit
           THEN /\ status' = [status EXCEPT ![t] = "committed"]
                /\ store' = [x \in Item |-> IF x \in buf[t] THEN t ELSE store[x]]
                /\ commits' = [commits EXCEPT ![t] = @ + 1]
           ELSE /\ status' = [status EXCEPT ![t] = "aborted"]
                /\ UNCHANGED <<store, commits>>
    /\ ReleaseAll(t)
    /\ UNCHANGED <<bphase, place, pc, buf, reads, retries>>

AllDone == /\ \A b \in Batches : bphase[b] = "done"
           /\ UNCHANGED vars

BatchStep(b) == Analyze(b) \/ StartClusters(b) \/ Barrier(b) \/ FinishBatch(b)
TxnStep(t) == ClusterStart(t) \/ ResidualStart(t) \/ ClusterOp(t) \/ ResidualOp(t)
              \/ LockOrderedAcquire(t) \/ LockOrderedOp(t) \/ Finish(t)

Next == (\E b \in Batches : BatchStep(b)) \/ (\E t \in Txn : TxnStep(t)) \/ AllDone

\* Batches advance under weak fairness.  Transactions get strong fairness:
\* a lock that is free again and again is eventually granted to a waiter,
\* as a lock manager that queues its waiters does.  Without it a WaitDie
\* waiter could miss every instant its lock is free.
Spec == Init /\ [][Next]_vars /\ \A b \in Batches : WF_vars(BatchStep(b))
                              /\ \A t \in Txn : SF_vars(TxnStep(t))

-----------------------------------------------------------------------------
(* Properties                                                              *)

\* No transaction commits twice; once its batch is done, each has committed
\* or hit its user abort.
ExactlyOnceInv ==
    /\ \A t \in Txn : commits[t] <= 1
    /\ \A t \in Txn : bphase[BatchOf[t]] = "done" => status[t] \in Decided
    /\ \A t \in Txn : status[t] = "committed" => commits[t] = 1

\* No residual step before every cluster of its batch has finished.
NoResidualBeforeClustersInv ==
    \A t \in Txn : (~Clustered(t) /\ status[t] # "queued") =>
        \A u \in InBatch(BatchOf[t]) : Clustered(u) => status[u] \in Decided

\* No transaction of batch b+1 runs before batch b is done (what the
\* overlap must keep).
BatchOrderInv ==
    \A t \in Txn : (status[t] # "queued" /\ BatchOf[t] > 1) => bphase[BatchOf[t] - 1] = "done"

\* A lock is held only by a running transaction, on an item its current
\* attempt has touched (or, under LockOrdered, is about to).
LocksMatchAttemptInv ==
    \A x \in Item : holder[x] # None =>
        LET t == holder[x] IN
        /\ status[t] = "running"
        /\ IF CC = "lockordered" THEN x \in ItemsOf(t)
                                 ELSE x \in {Ops[t][i].item : i \in 1..(pc[t] - 1)}

\* Every transaction ends.
TerminationProp == \A t \in Txn : <>(status[t] \in Decided)

\* Each batch, and the whole run, is equivalent to the serial execution in
\* commit order, each transaction reading what that order gives it.
Ser == INSTANCE Serializable WITH
         Key <- Item,
         ReadSet <- [t \in Txn |-> ReadsOf(t)],
         WriteSet <- [t \in Txn |-> WritesOf(t)],
         status <- [t \in Txn |-> IF status[t] \in Decided THEN status[t] ELSE "pending"],
         readVal <- [t \in Txn |-> IF status[t] = "committed" THEN reads[t] ELSE [x \in Item |-> NoVal]]
SerializableRefinementProp == Ser!Spec
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety          *)
(* property, so each operator below says that a step never happens, and    *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* A transaction commits in a cluster; one commits in the residual phase.
ClusterCommitReachable == ~\E t \in Txn : Clustered(t) /\ status[t] = "committed"
ResidualCommitReachable == ~\E t \in Txn : ~Clustered(t) /\ status[t] = "committed"
\* A residual attempt aborts on a conflict and is retried.
RetryReachable == ~\E t \in Txn : retries[t] > 0
\* Section 4.1's overlap: one batch is analysed while another runs its residuals.
OverlapReachable == ~\E b, c \in DOMAIN bphase : b # c /\ bphase[b] = "residuals" /\ bphase[c] = "analysed"
\* The overlap we add: one batch is analysed while another runs its clusters.
OverlapClustersReachable == ~\E b, c \in DOMAIN bphase : b # c /\ bphase[b] = "clusters" /\ bphase[c] = "analysed"
=============================================================================
