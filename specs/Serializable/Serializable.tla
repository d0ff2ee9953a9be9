---------------------------- MODULE Serializable ----------------------------
(***************************************************************************)
(* What "serializable" means for Contend's key-value transactions.         *)
(*                                                                         *)
(* Every transaction t has a fixed program: it reads the keys ReadSet[t]   *)
(* and writes the keys WriteSet[t].  A write by t stores the value t       *)
(* itself, so every value in the store names the transaction that wrote    *)
(* it, and the value a read returns names the transaction it read from.    *)
(* Unique written values make reads-from visible: a protocol cannot pass   *)
(* the refinement check by returning a right-looking value from the wrong  *)
(* writer.                                                                 *)
(*                                                                         *)
(* A whole transaction takes one step.  Commit(t) reads every key of       *)
(* ReadSet[t] from the current store (a key t both reads and writes is     *)
(* read before it is written) and installs its writes; Abort(t) is a user  *)
(* abort (or a system abort that is never retried) and changes nothing.    *)
(*                                                                         *)
(* A protocol refines Spec by mapping its committed store, the state of    *)
(* each transaction and the values each committed transaction read onto    *)
(* store, status and readVal.  Then each of its executions equals the      *)
(* serial execution of its committed transactions in the order of the      *)
(* protocol's commit steps, and each committed transaction read exactly    *)
(* what that serial order gives it.                                        *)
(*                                                                         *)
(* Decision: only committed transactions' reads are constrained.  Aborted  *)
(* transactions map readVal to NoVal.  2PL would also give aborted         *)
(* transactions consistent reads, but OCC (ReactDB) does not, and          *)
(* serializability does not ask for it.                                    *)
(*                                                                         *)
(* A protocol that retries a transaction after a conflict abort (Strife's  *)
(* NO_WAIT residuals) maps the aborted attempt to stuttering steps: only   *)
(* the final commit or user abort is an abstract step.                     *)
(***************************************************************************)
CONSTANTS
    Txn,        \* transaction identifiers
    Key,        \* keys (records) of the store
    ReadSet,    \* ReadSet[t] \subseteq Key: the keys transaction t reads
    WriteSet,   \* WriteSet[t] \subseteq Key: the keys transaction t writes
    InitVal,    \* model value every key holds before any transaction commits
    NoVal       \* model value for "not read": a key t does not read, or t has not committed

ASSUME /\ ReadSet \in [Txn -> SUBSET Key]
       /\ WriteSet \in [Txn -> SUBSET Key]
       /\ InitVal \notin Txn
       /\ NoVal \notin Txn \cup {InitVal}

Val == Txn \cup {InitVal}

VARIABLES
    store,      \* store[k]: the value of key k, i.e. its last committed writer (or InitVal)
    status,     \* status[t] \in {"pending", "committed", "aborted"}
    readVal     \* readVal[t][k]: the value committed transaction t read for k (NoVal otherwise)

vars == <<store, status, readVal>>

TypeOK ==
    /\ store \in [Key -> Val]
    /\ status \in [Txn -> {"pending", "committed", "aborted"}]
    /\ readVal \in [Txn -> [Key -> Val \cup {NoVal}]]

Init ==
    /\ store = [k \in Key |-> InitVal]
    /\ status = [t \in Txn |-> "pending"]
    /\ readVal = [t \in Txn |-> [k \in Key |-> NoVal]]

\* The whole transaction, atomically: read ReadSet[t], then write WriteSet[t].
Commit(t) ==
    /\ status[t] = "pending"
    /\ status' = [status EXCEPT ![t] = "committed"]
    /\ readVal' = [readVal EXCEPT ![t] = [k \in Key |-> IF k \in ReadSet[t] THEN store[k] ELSE NoVal]]
    /\ store' = [k \in Key |-> IF k \in WriteSet[t] THEN t ELSE store[k]]

Abort(t) ==
    /\ status[t] = "pending"
    /\ status' = [status EXCEPT ![t] = "aborted"]
    /\ UNCHANGED <<store, readVal>>

Next == \E t \in Txn : Commit(t) \/ Abort(t)

Spec == Init /\ [][Next]_vars

=============================================================================
