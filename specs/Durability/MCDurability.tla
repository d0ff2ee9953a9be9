---------------------------- MODULE MCDurability ----------------------------
(***************************************************************************)
(* Workloads for Durability.tla, and its mutants.                          *)
(***************************************************************************)
EXTENDS Durability
CONSTANTS w1, w2, l1, l2, t1, t2, t3, X, Y   \* model values

\* Two workers, each with a logger of its own.  t1 (on w1) writes X; t2 (on
\* w2) reads X and writes Y; t3 (on w1) writes X and Y.  So t2 may read from
\* t1, and t3 may overwrite both, through the other worker's file.
TwoLoggers == (w1 :> l1) @@ (w2 :> l2)
Three == (t1 :> [worker |-> w1, reads |-> {}, writes |-> {X}]) @@
         (t2 :> [worker |-> w2, reads |-> {X}, writes |-> {Y}]) @@
         (t3 :> [worker |-> w1, reads |-> {}, writes |-> {X, Y}])

\* The same transactions, the two workers sharing one logger and its file.
OneLogger == (w1 :> l1) @@ (w2 :> l1)

\* Mutant: the caller hears "committed" as soon as the transaction commits,
\* before its epoch is durable.
MutantAcknowledgeAtCommit(t) == TRUE

\* Mutant: the durable epoch is the most any logger has synced, not the least.
MutantDurableIsMax(byLogger) == Max({byLogger[l] : l \in Logger})

\* Mutant: recovery replays the files one after another, each record
\* overwriting its rows, instead of the newest commit id winning.
MutantApplyInFileOrder(rows, r) ==
    [k \in Key |-> IF k \in Ops[r.txn].writes THEN [val |-> r.txn, cid |-> r.cid] ELSE rows[k]]

\* Mutant: a checkpoint says it covers the durable epoch when it ends, so the
\* records of epochs that became durable while it ran leave the log without
\* being in it.
MutantCheckpointEpochAtEnd == durable

\* Mutant: recovery deletes the old log files as soon as it has read them,
\* before the checkpoint of what it read is written.
MutantDropLogsOnRead == [l \in Logger |-> << >>]

\* Mutant: a commit id that is only larger than what the transaction read
\* and overwrote and than its worker's last, without the epoch in it.
MutantCommitIdWithoutEpoch(t) ==
    Max({lastCid[Ops[t].worker] + 1} \cup {store[k].cid + 1 : k \in Ops[t].reads \cup Ops[t].writes})

\* TypeOK's twin: an acknowledged call stays pending, to be answered again.
MutantAnswerTwice(t) == pending
=============================================================================
