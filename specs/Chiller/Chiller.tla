------------------------------ MODULE Chiller ------------------------------
(***************************************************************************)
(* Chiller's two-region execution with inner-region replication and        *)
(* failure recovery (seed 003, Sections 2.2, 3.3 and 5).                   *)
(*                                                                         *)
(* Roles.  Each transaction t has a coordinator node <<t, 0>>.  Each       *)
(* partition p has R copies <<p, 1>> .. <<p, R>>; primary[p] names the     *)
(* one that serves.  InnerOf[t] is t's inner host partition; its other     *)
(* keys are t's outer region.  The cluster manager is the recovery         *)
(* actions: CloseChannels through ElectPrimary, and the Recover steps.     *)
(*                                                                         *)
(* The five steps of Section 3.3 (steps 1-2, choosing the regions, are     *)
(* the constants InnerOf and the key sets):                                *)
(*   3) CoordLockOuter / CoordLockDenied: lock and read the outer region,  *)
(*      partition by partition, NO_WAIT: a denial aborts t.                *)
(*   4) CoordDelegate, then on the inner host InnerExecute / InnerReject   *)
(*      (locks and the constraint check), ReplicaReceive / ReplicaApply    *)
(*      (Section 5.1, in sequence order, notifying the coordinator), and   *)
(*      InnerCommit (after the NIC acks, releasing the inner locks).       *)
(*   5) CoordLearnCommit, then OuterCommit on each outer partition;        *)
(*      or CoordLearnAbort, then OuterRelease.                             *)
(* Failures (Section 5.2): Crash stops any node.  The cluster manager     *)
(* recovers a crashed primary in the paper's phases, each its own step:    *)
(* CloseChannels (cut it off: drop the messages it sent or was sent),      *)
(* GatherPending (one survivor at a time receives the crashed host's       *)
(* pending transactions from the survivors' logs), DecidePending (every    *)
(* pending transaction, by the paper's rule), ElectPrimary (a survivor     *)
(* serves and forwards the aborts).  A crashed coordinator is cut off,     *)
(* then RecoverCoordinator elects the node that takes over.  Messages and  *)
(* a second crash may come between any two phases.  A crashed replica is   *)
(* removed in one step (RecoverReplica).                                   *)
(*                                                                         *)
(* Transactions serialize when their inner region becomes irrevocable:     *)
(* when every replica in the configuration has received its replication    *)
(* message (ReplicaReceive, or RecoverReplica when the configuration       *)
(* shrinks), when recovery decides to commit it, or at InnerCommit if the  *)
(* host has no replica left.  The paper says "at the inner host commit";   *)
(* TLC shows that point is too late, because the coordinator resumes on    *)
(* the replicas' notifications and may release the outer locks before the  *)
(* host commits (D8, proofs/Chiller.md).  The ghost `order` records the    *)
(* sequence; it only feeds the refinement mapping and the invariants.      *)
(*                                                                         *)
(* Decisions where the paper is silent or vague (proofs/Chiller.md, 3):    *)
(* D1 Messages are a set: the network may reorder and a message stays      *)
(*    until its receiver acts on it (receivers guard on their own state,   *)
(*    so a message is acted on once).  RDMA queue pairs are FIFO; a set    *)
(*    allows every order, so safety here holds for FIFO channels too.  The *)
(*    one ordering the protocol needs is carried by sequence numbers.      *)
(* D2 A message is addressed to a node, not to a partition, and a closed   *)
(*    channel delivers nothing: when the cluster manager cuts a node off   *)
(*    it drops every message from or to it, and nothing sent to it later   *)
(*    is delivered (Send).  Notifications and aborts go to the original    *)
(*    coordinator, whose id the delegation carries.  A delegation          *)
(*    addressed to a crashed inner host must not reach its successor:      *)
(*    recovery may already have aborted the transaction; and while a       *)
(*    partition's primary is cut off, a coordinator does not delegate to   *)
(*    it, but waits for the successor (the channel is closed).             *)
(* D3 An outer participant's lock grant is replicated like its writes      *)
(*    (synchronous log shipping, Section 5.1 "as normal"), so the replica  *)
(*    that takes over holds the same locks.  Outer replication is one      *)
(*    step over the live copies; the inner region's is modelled in full.   *)
(*    The outer write travels in the partition's one log, behind the inner *)
(*    replication messages the copies already received, so it is installed *)
(*    once every live copy has applied those (LogApplied).  Without that,  *)
(*    a replica installs an outer write before the inner commit the writer *)
(*    read (ChillerMutantOuterBeforeLog: ReplicaAgreementInv fails).       *)
(* D4 Inner locks are volatile, but recovery keeps a crashed host's inner  *)
(*    locks until it has decided each transaction: it releases them when   *)
(*    it aborts one, and RecoveryCommit when the new primary has applied   *)
(*    one it commits.  The new primary serves nothing until it has         *)
(*    applied every replication message it holds (CaughtUp).  CaughtUp     *)
(*    alone is not enough: a release of a committed transaction's locks    *)
(*    at the decision can come after the new primary has granted them to   *)
(*    another (ChillerHotThreeWithoutLockKeep, three transactions; with    *)
(*    two, ChillerWithoutLockKeep passes: proofs/Chiller.md, item 8).      *)
(* D5 Sequence gaps: a replica applies in sequence order; a missing        *)
(*    number is skipped only once its sender is cut off.  The paper's      *)
(*    reason would be that recovery hands every message a survivor         *)
(*    received to all survivors, so a number still missing belongs to an   *)
(*    aborted transaction; but with recovery in phases a replica may skip  *)
(*    between the cut-off and that hand-over.  What keeps it safe is       *)
(*    simpler (ChillerGapSkipEarly skips at once, and every property       *)
(*    holds): a gap was never acked here, and a later transaction of the   *)
(*    same host shares no key with it, since the inner lock is held until  *)
(*    the host commits, after every ack.                                   *)
(* D6 The coordinator resumes when every copy of the inner partition in    *)
(*    the configuration, other than the host it delegated to, has          *)
(*    notified (a replica promoted to primary still counts), and at least  *)
(*    one copy has.  An inner host with no replica left in the             *)
(*    configuration notifies the coordinator itself.                       *)
(* D7 Coordinator takeover decides from the log of the node that takes     *)
(*    over, and only the node the paper names takes over (Section 5.2):    *)
(*    the inner host, if it is up and has run t; or, once the host is cut  *)
(*    off, a copy of the inner partition that received t's replication     *)
(*    message.  If none, t aborts.  A crashed host is cut off, and its     *)
(*    partition has a new primary, before a coordinator of its             *)
(*    transactions is recovered, so "the host failed" is known.  The new   *)
(*    coordinator learns the inner decision from its                       *)
(*    own log: it has installed t (commit), or as host it rejected t.  If  *)
(*    it crashes in turn, the role is recovered again.                     *)
(* D8 The serialization point is the irrevocable receipt (above).          *)
(* D9 Recovery decides a crashed host's transactions only once every       *)
(*    survivor holds every pending transaction some survivor holds         *)
(*    (Gathered), and from the copies up at that moment.  The paper        *)
(*    aggregates a list of pending transactions at a designated node and   *)
(*    decides from it; a decision to commit taken while only one survivor  *)
(*    holds the transaction is lost if that survivor crashes next          *)
(*    (ChillerMutantDecideBeforeGather: DurabilityInv fails).  The         *)
(*    cluster manager's decision is durable (it is Zookeeper's, Section    *)
(*    5.2), so decide is one step and only copies crash around it.         *)
(* D10 The inner host commits once every replica in the configuration has  *)
(*    received its message (ReplicasAcked), the NIC's ack of the paper's   *)
(*    RDMA write; over a transport without RDMA, the replica acknowledges  *)
(*    on receipt, before it applies.  Committing on "sent" fails           *)
(*    (ChillerMutantCommitBeforeAcks: DurabilityInv).                      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Txn,        \* transaction identifiers
    Part,       \* partitions
    Key,        \* keys of the store
    PartOf,     \* PartOf[k]: the partition that holds key k
    ReadSet,    \* ReadSet[t] \subseteq Key: keys t reads
    WriteSet,   \* WriteSet[t] \subseteq Key: keys t writes
    InnerOf,    \* InnerOf[t]: t's inner host partition (its contended keys)
    MayAbort,   \* transactions whose constraint check may fail on the inner host
    R,          \* copies per partition: a primary and R - 1 replicas
    MaxCrashes, \* how many nodes may crash in a behaviour
    None,       \* model value: no lock holder
    InitVal,    \* model value: every key's value before any commit
    NoVal       \* model value: not read

ASSUME /\ PartOf \in [Key -> Part]
       /\ ReadSet \in [Txn -> SUBSET Key] /\ WriteSet \in [Txn -> SUBSET Key]
       /\ InnerOf \in [Txn -> Part] /\ MayAbort \subseteq Txn
       /\ R \in Nat \ {0} /\ MaxCrashes \in 0..(R - 1)

Keys(t) == ReadSet[t] \cup WriteSet[t]
KeysOn(t, p) == {k \in Keys(t) : PartOf[k] = p}
InnerKeys(t) == KeysOn(t, InnerOf[t])
OuterParts(t) == {PartOf[k] : k \in Keys(t) \ InnerKeys(t)}
Writes(t, p) == {k \in WriteSet[t] : PartOf[k] = p}

Index == 1..R
CoordNode(t) == <<t, 0>>
Copies(p) == {p} \X Index
AllCopies == Part \X Index
Node == (Txn \X {0}) \cup AllCopies
Val == Txn \cup {InitVal}

Msg ==
    [type : {"delegate"}, t : Txn, to : AllCopies] \cup          \* coordinator -> inner host
    [type : {"replicate"}, t : Txn, from : AllCopies, to : AllCopies] \cup
    [type : {"notify", "innerAbort"}, t : Txn, from : AllCopies, to : Txn \X {0}]  \* -> t's original coordinator

OuterPhase == {"none", "locked", "failed", "committed", "aborted"}   \* "failed": see DecidePending
CoordPhase == {"locking", "delegated", "committing", "aborting", "committed", "aborted"}

VARIABLES
    crashed,    \* nodes that have stopped
    cutOff,     \* crashed nodes the cluster manager has cut off
    decided,    \* cut-off primaries whose pending transactions recovery has decided
    primary,    \* primary[p] \in Index: the copy of p that serves
    lock,       \* lock[k]: the transaction holding k's lock, or None
    store,      \* store[c][k]: copy c's value of key k (keys of c's partition)
    installed,  \* installed[c]: transactions whose writes copy c has installed
    inbox,      \* inbox[c]: transactions whose replication message copy c received (its NIC acked)
    msgs,       \* messages sent and not yet dropped
    coord,      \* coord[t] \in CoordPhase: where t's coordinator is
    coordAt,    \* coordAt[t]: the node playing t's coordinator (CoordNode(t) until a takeover)
    outer,      \* outer[t][p] \in OuterPhase: t at outer partition p
    inner,      \* inner[t] \in {"none", "replicating", "committed", "aborted"}: t at its inner partition
    innerAt,    \* innerAt[t] \in 0..R: the copy of InnerOf[t] t was delegated to (0: not yet)
    seq,        \* seq[t]: the sequence number of t's replication message (0: none)
    reads,      \* reads[t][k]: the value t read of k
    order       \* ghost: transactions in the order their inner regions committed

vars == <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs,
          coord, coordAt, outer, inner, innerAt, seq, reads, order>>

TypeOK ==
    /\ crashed \subseteq Node /\ cutOff \subseteq crashed /\ decided \subseteq cutOff \cap AllCopies
    /\ primary \in [Part -> Index]
    /\ lock \in [Key -> Txn \cup {None}]
    /\ store \in [AllCopies -> [Key -> Val]]
    /\ installed \in [AllCopies -> SUBSET Txn]
    /\ inbox \in [AllCopies -> SUBSET Txn]
    /\ msgs \subseteq Msg
    /\ coord \in [Txn -> CoordPhase]
    /\ coordAt \in [Txn -> Node]
    /\ outer \in [Txn -> [Part -> OuterPhase]]
    /\ inner \in [Txn -> {"none", "replicating", "committed", "aborted"}]
    /\ innerAt \in [Txn -> 0..R]
    /\ seq \in [Txn -> Nat]
    /\ reads \in [Txn -> [Key -> Val \cup {NoVal}]]
    /\ order \in Seq(Txn)

Init ==
    /\ crashed = {} /\ cutOff = {} /\ decided = {}
    /\ primary = [p \in Part |-> 1]
    /\ lock = [k \in Key |-> None]
    /\ store = [c \in AllCopies |-> [k \in Key |-> InitVal]]
    /\ installed = [c \in AllCopies |-> {}]
    /\ inbox = [c \in AllCopies |-> {}]
    /\ msgs = {}
    /\ coord = [t \in Txn |-> "locking"]
    /\ coordAt = [t \in Txn |-> CoordNode(t)]
    /\ outer = [t \in Txn |-> [p \in Part |-> "none"]]
    /\ inner = [t \in Txn |-> "none"]
    /\ innerAt = [t \in Txn |-> 0]
    /\ seq = [t \in Txn |-> 0]
    /\ reads = [t \in Txn |-> [k \in Key |-> NoVal]]
    /\ order = << >>

-----------------------------------------------------------------------------
(* Helpers                                                                 *)

Primary(p) == <<p, primary[p]>>
Up(n) == n \notin crashed
\* Copies of p still in the configuration: not yet cut off (a crashed copy
\* stays in until the cluster manager removes it).
Config(p) == Copies(p) \ cutOff
ConfigReplicas(p) == Config(p) \ {Primary(p)}
InnerHost(t) == <<InnerOf[t], innerAt[t]>>
Ordered == {order[i] : i \in 1..Len(order)}
Pos(t) == CHOOSE i \in 1..Len(order) : order[i] = t

\* The value of k after the writers of k in S, taken in serial order.
LastWriter(k, S) ==
    LET W == {t \in S \cap Ordered : k \in WriteSet[t]}
    IN IF W = {} THEN InitVal ELSE CHOOSE t \in W : \A u \in W : Pos(u) <= Pos(t)

\* t's serialization point: append it to the serial order, once.
Serialize(t) == IF t \in Ordered THEN order ELSE Append(order, t)

\* Where the model serializes t once every replica has received it (D8).
\* A cfg may replace it with `order` to try the paper's "at the inner host
\* commit".
SerializeOnReceipt(t) == Serialize(t)

\* Appends the transactions of S in sequence-number order.  Only recovery
\* serializes more than one transaction in a step; no workload here makes
\* it do so (the refinement check would flag it, not pass it).
RECURSIVE SerializeAll(_, _)
SerializeAll(o, S) ==
    IF S = {} THEN o
    ELSE LET t == CHOOSE u \in S : \A v \in S : seq[u] <= seq[v]
         IN SerializeAll(IF t \in {o[i] : i \in 1..Len(o)} THEN o ELSE Append(o, t), S \ {t})

Install(cs, t) ==
    /\ store' = [c \in AllCopies |->
                   IF c \in cs THEN [k \in Key |-> IF k \in Writes(t, c[1]) THEN t ELSE store[c][k]]
                   ELSE store[c]]
    /\ installed' = [c \in AllCopies |-> IF c \in cs THEN installed[c] \cup {t} ELSE installed[c]]

Release(ks) == lock' = [k \in Key |-> IF k \in ks THEN None ELSE lock[k]]

\* Every replication message c holds is applied: c may serve reads (D4).
CaughtUp(c) == inbox[c] \subseteq installed[c]

\* The node playing t's coordinator is up.
CoordUp(t) == Up(coordAt[t])
AtOrigin(t) == coordAt[t] = CoordNode(t)

\* A closed channel delivers nothing: messages to a node already cut off
\* are never sent (D2).
Delivered(S) == {m \in S : m.to \notin cutOff}
Send(S) == msgs \cup Delivered(S)
Notice(type, t, from) == [type |-> type, t |-> t, from |-> from, to |-> CoordNode(t)]

NextSeq(p) ==
    LET used == {seq[t] : t \in {u \in Txn : InnerOf[u] = p}}
    IN 1 + (CHOOSE m \in used : \A n \in used : n <= m)

-----------------------------------------------------------------------------
(* Coordinator, steps 3-5                                                  *)

\* Step 3: lock and read t's keys on outer partition p (NO_WAIT).
CoordLockOuter(t, p) ==
    /\ coord[t] = "locking" /\ CoordUp(t)
    /\ p \in OuterParts(t) /\ outer[t][p] = "none"
    /\ Up(Primary(p)) /\ CaughtUp(Primary(p))
    /\ \A k \in KeysOn(t, p) : lock[k] = None
    /\ lock' = [k \in Key |-> IF k \in KeysOn(t, p) THEN t ELSE lock[k]]
    /\ reads' = [reads EXCEPT ![t] = [k \in Key |-> IF k \in ReadSet[t] /\ PartOf[k] = p
                                                     THEN store[Primary(p)][k] ELSE reads[t][k]]]
    /\ outer' = [outer EXCEPT ![t][p] = "locked"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, store, installed, inbox, msgs,
                   coord, coordAt, inner, innerAt, seq, order>>

\* Step 3: a lock is held by another transaction, or the participant does
\* not answer: t aborts.
CoordLockDenied(t, p) ==
    /\ coord[t] = "locking" /\ CoordUp(t)
    /\ p \in OuterParts(t) /\ outer[t][p] = "none"
    /\ \/ \E k \in KeysOn(t, p) : lock[k] \notin {None, t}
       \/ ~Up(Primary(p))
    /\ coord' = [coord EXCEPT ![t] = "aborting"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs,
                   coordAt, outer, inner, innerAt, seq, reads, order>>

\* Section 5.2: a participant t had locked failed before t was delegated,
\* so t aborts (its locks, kept by the new primary, are then released).
CoordLearnParticipantFailed(t) ==
    /\ coord[t] = "locking" /\ CoordUp(t)
    /\ \E p \in Part : outer[t][p] = "failed"
    /\ coord' = [coord EXCEPT ![t] = "aborting"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs,
                   coordAt, outer, inner, innerAt, seq, reads, order>>

\* Step 4: every outer lock is held; hand the inner region, with the
\* values read, to the inner partition's current primary.  From here on
\* neither the coordinator nor an outer participant may abort t.  While
\* the partition's primary is cut off and no successor is elected, the
\* channel is closed and the coordinator waits (D2): recovery's pending
\* list may already be decided, so a delegation sent then would be lost.
CoordDelegate(t) ==
    /\ coord[t] = "locking" /\ CoordUp(t) /\ Primary(InnerOf[t]) \notin cutOff
    /\ \A p \in OuterParts(t) : outer[t][p] = "locked"
    /\ coord' = [coord EXCEPT ![t] = "delegated"]
    /\ innerAt' = [innerAt EXCEPT ![t] = primary[InnerOf[t]]]
    /\ msgs' = Send({[type |-> "delegate", t |-> t, to |-> Primary(InnerOf[t])]})
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox,
                   coordAt, outer, inner, seq, reads, order>>

Notifiers(t) == {m.from : m \in {n \in msgs : n.type = "notify" /\ n.t = t /\ n.to = CoordNode(t)}}

\* Section 5.1: the coordinator resumes once the inner host's replicas
\* have applied t (D6).  A coordinator taken over reads its own log (D7).
CommitKnown(t) ==
    IF AtOrigin(t)
    THEN /\ Notifiers(t) # {}
         /\ Config(InnerOf[t]) \ {InnerHost(t)} \subseteq Notifiers(t)
    ELSE t \in installed[coordAt[t]]

AbortKnown(t) ==
    IF AtOrigin(t)
    THEN \E m \in msgs : m.type = "innerAbort" /\ m.t = t /\ m.to = CoordNode(t)
    ELSE coordAt[t] = InnerHost(t) /\ inner[t] = "aborted"

CoordLearnCommit(t) ==
    /\ coord[t] = "delegated" /\ CoordUp(t) /\ CommitKnown(t)
    /\ coord' = [coord EXCEPT ![t] = "committing"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs,
                   coordAt, outer, inner, innerAt, seq, reads, order>>

CoordLearnAbort(t) ==
    /\ coord[t] = "delegated" /\ CoordUp(t) /\ AbortKnown(t)
    /\ coord' = [coord EXCEPT ![t] = "aborting"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs,
                   coordAt, outer, inner, innerAt, seq, reads, order>>

\* Every live copy of p has applied what it received: an outer write
\* shipped now lands behind p's earlier inner commits on every copy (D3).
LogApplied(p) == \A c \in Copies(p) : Up(c) => CaughtUp(c)

\* Step 5: outer partition p installs t's writes on its live copies
\* (synchronous log shipping, D3) and releases t's locks.
OuterCommit(t, p) ==
    /\ coord[t] = "committing" /\ CoordUp(t)
    /\ outer[t][p] = "locked" /\ Up(Primary(p)) /\ LogApplied(p)
    /\ Install({c \in Copies(p) : Up(c)}, t)
    /\ Release(KeysOn(t, p))
    /\ outer' = [outer EXCEPT ![t][p] = "committed"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, inbox, msgs, coord, coordAt,
                   inner, innerAt, seq, reads, order>>

OuterRelease(t, p) ==
    /\ coord[t] = "aborting" /\ CoordUp(t)
    /\ outer[t][p] \in {"locked", "failed"} /\ Up(Primary(p))
    /\ Release(KeysOn(t, p))
    /\ outer' = [outer EXCEPT ![t][p] = "aborted"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, store, installed, inbox, msgs,
                   coord, coordAt, inner, innerAt, seq, reads, order>>

CoordFinish(t) ==
    /\ coord[t] \in {"committing", "aborting"} /\ CoordUp(t)
    /\ \A p \in Part : outer[t][p] \notin {"locked", "failed"}
    /\ coord' = [coord EXCEPT ![t] = IF @ = "committing" THEN "committed" ELSE "aborted"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs,
                   coordAt, outer, inner, innerAt, seq, reads, order>>

-----------------------------------------------------------------------------
(* Inner host, step 4 and Section 5.1                                      *)

Delegated(t, c) == [type |-> "delegate", t |-> t, to |-> c] \in msgs

\* Locks granted and the constraint holds: read, write (still invisible),
\* and send the replication message, with the next sequence number, to
\* every replica in the configuration.
InnerExecute(t) ==
    LET c == InnerHost(t) IN
    /\ inner[t] = "none" /\ innerAt[t] # 0 /\ Delegated(t, c)
    /\ Up(c) /\ CaughtUp(c)
    /\ \A k \in InnerKeys(t) : lock[k] = None
    /\ lock' = [k \in Key |-> IF k \in InnerKeys(t) THEN t ELSE lock[k]]
    /\ reads' = [reads EXCEPT ![t] = [k \in Key |-> IF k \in ReadSet[t] \cap InnerKeys(t)
                                                     THEN store[c][k] ELSE reads[t][k]]]
    /\ seq' = [seq EXCEPT ![t] = NextSeq(InnerOf[t])]
    /\ msgs' = Send({[type |-> "replicate", t |-> t, from |-> c, to |-> r] :
                       r \in ConfigReplicas(InnerOf[t])})
    /\ inner' = [inner EXCEPT ![t] = "replicating"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, store, installed, inbox,
                   coord, coordAt, outer, innerAt, order>>

\* A lock is held, or the constraint fails: abort, and tell the coordinator
\* directly.  No replication is needed.
InnerReject(t) ==
    LET c == InnerHost(t) IN
    /\ inner[t] = "none" /\ innerAt[t] # 0 /\ Delegated(t, c) /\ Up(c)
    /\ \/ t \in MayAbort
       \/ \E k \in InnerKeys(t) : lock[k] \notin {None, t}
    /\ inner' = [inner EXCEPT ![t] = "aborted"]
    /\ msgs' = Send({Notice("innerAbort", t, c)})
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox,
                   coord, coordAt, outer, innerAt, seq, reads, order>>

\* The inner host's NIC has acknowledged the message at every replica in
\* the configuration.
ReplicasAcked(t) == \A r \in ConfigReplicas(InnerOf[t]) : t \in inbox[r]

\* The commit point: install, release the inner locks early.
InnerCommit(t) ==
    LET c == InnerHost(t) IN
    /\ inner[t] = "replicating" /\ Up(c)
    /\ ReplicasAcked(t)
    /\ Install({c}, t)
    /\ Release(InnerKeys(t))
    /\ inner' = [inner EXCEPT ![t] = "committed"]
    /\ order' = Serialize(t)
    /\ msgs' = IF ConfigReplicas(InnerOf[t]) = {} THEN Send({Notice("notify", t, c)}) ELSE msgs
    /\ UNCHANGED <<crashed, cutOff, decided, primary, inbox, coord, coordAt, outer,
                   innerAt, seq, reads>>

\* The replica's NIC receives the message (and acknowledges it).  The
\* receipt that completes the set is t's serialization point (D8): from
\* here on recovery commits t whatever fails, within the crash bound.
ReplicaReceive(r, t) ==
    /\ [type |-> "replicate", t |-> t, from |-> InnerHost(t), to |-> r] \in msgs
    /\ Up(r) /\ t \notin inbox[r]
    /\ inbox' = [inbox EXCEPT ![r] = @ \cup {t}]
    /\ order' = IF \A r2 \in ConfigReplicas(InnerOf[t]) \ {r} : t \in inbox[r2]
               THEN SerializeOnReceipt(t) ELSE order
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, msgs,
                   coord, coordAt, outer, inner, innerAt, seq, reads>>

\* Every earlier sequence number of the partition is applied here, or can
\* never arrive (D5).
InOrder(r, t) ==
    \A u \in Txn \ {t} :
        (InnerOf[u] = InnerOf[t] /\ seq[u] \in 1..(seq[t] - 1))
            => \/ u \in installed[r]
               \/ u \notin inbox[r] /\ InnerHost(u) \in cutOff

\* Apply in sequence order, then notify the original coordinator.
ReplicaApply(r, t) ==
    /\ Up(r) /\ t \in inbox[r] \ installed[r]
    /\ InOrder(r, t)
    /\ Install({r}, t)
    /\ msgs' = Send({Notice("notify", t, r)})
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, inbox, coord, coordAt,
                   outer, inner, innerAt, seq, reads, order>>

-----------------------------------------------------------------------------
(* Failures and the cluster manager, Section 5.2                           *)

Crash(n) ==
    /\ Up(n) /\ Cardinality(crashed) < MaxCrashes
    /\ crashed' = crashed \cup {n}
    /\ UNCHANGED <<cutOff, decided, primary, lock, store, installed, inbox, msgs,
                   coord, coordAt, outer, inner, innerAt, seq, reads, order>>

\* Close every channel to n (D2): the messages n sent, those sent to it,
\* and, for a coordinator, its delegations still in flight.
Severed(n) == {m \in msgs : \/ "from" \in DOMAIN m /\ m.from = n
                            \/ "to" \in DOMAIN m /\ m.to = n
                            \/ m.type = "delegate" /\ CoordNode(m.t) = n}

\* Section 5.2's first phase, for a crashed primary or coordinator node:
\* every other node closes its channels to it (cut-off), and nothing else
\* happens in this step.  The rest of a primary's recovery (GatherPending,
\* DecidePending, ElectPrimary) and a coordinator's (RecoverCoordinator)
\* are later steps, so messages and a second crash can come in between.
\* A crashed replica's recovery is one step (RecoverReplica): it decides
\* nothing.
CloseChannels(n) ==
    /\ n \in crashed /\ n \notin cutOff
    /\ \/ n \in Txn \X {0}
       \/ \E p \in Part : n = Primary(p)
    /\ cutOff' = cutOff \cup {n}
    /\ msgs' = msgs \ Severed(n)
    /\ UNCHANGED <<crashed, decided, primary, lock, store, installed, inbox, coord, coordAt,
                   outer, inner, innerAt, seq, reads, order>>

\* The copies of p that recovery works with: up, and not cut off.
Survivors(p) == {c \in Copies(p) : Up(c) /\ c \notin cutOff}
\* The transactions delegated to p's crashed primary: its pending list.
Pending(p) == {t \in Txn : InnerOf[t] = p /\ innerAt[t] = primary[p]}
\* p's primary is cut off and recovery has not yet decided its pending list.
Recovering(p) == Primary(p) \in cutOff \ decided

\* Some copy in S received t's replication message.
Received(t, S) == \E s \in S : t \in inbox[s]

\* Inner-host failure rule: commit iff some surviving replica received the
\* replication message.
RecoveryCommits(t, survivors) == Received(t, survivors)

\* Whose inner locks recovery releases at once: those it aborts.  Those it
\* commits keep theirs until RecoveryCommit (D4).
RecoveryFrees(toAbort, toCommit) == toAbort

\* Gathering is complete: every survivor holds every pending transaction
\* some survivor holds (D9).
Gathered(p) ==
    \A t \in Pending(p) : Received(t, Survivors(p)) =>
        \A s \in Survivors(p) : t \in inbox[s]

\* Section 5.2, gather: each partition probes its log for pending
\* transactions and the lists are aggregated at a designated node.  Here,
\* one step a survivor and a transaction: survivor c receives the
\* replication message of t, pending on p's crashed primary, that another
\* survivor holds; c's NIC acks it like any other, and c applies it in
\* sequence order (ReplicaApply).
GatherPending(p, c, t) ==
    /\ Recovering(p)
    /\ c \in Survivors(p) /\ t \in Pending(p) /\ t \notin inbox[c]
    /\ Received(t, Survivors(p))
    /\ inbox' = [inbox EXCEPT ![c] = @ \cup {t}]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, msgs,
                   coord, coordAt, outer, inner, innerAt, seq, reads, order>>

\* Section 5.2, decide: once gathering is complete, the cluster manager
\* decides every transaction pending on p's crashed primary, from the
\* survivors alone (the crashed host's own state is gone): commit iff a
\* survivor received it.  Those to commit serialize (D8) and keep their
\* inner locks until RecoveryCommit; the others abort and free theirs (D4).
\* As outer participant: a transaction holding p's locks (kept by the
\* replicas, D3) and not yet delegated is marked "failed" there, and its
\* coordinator aborts it (CoordLearnParticipantFailed).
DecidePending(p) ==
    LET toCommit == {t \in Pending(p) : RecoveryCommits(t, Survivors(p))}
        toAbort == Pending(p) \ toCommit
    IN
    /\ Recovering(p) /\ Gathered(p)
    /\ decided' = decided \cup {Primary(p)}
    /\ inner' = [t \in Txn |-> IF t \in toAbort THEN "aborted" ELSE inner[t]]
    /\ order' = SerializeAll(order, toCommit)
    /\ lock' = [k \in Key |-> IF lock[k] \in RecoveryFrees(toAbort, toCommit) /\ k \in InnerKeys(lock[k])
                             THEN None ELSE lock[k]]
    /\ outer' = [t \in Txn |-> IF coord[t] = "locking" /\ outer[t][p] = "locked"
                               THEN [outer[t] EXCEPT ![p] = "failed"] ELSE outer[t]]
    /\ UNCHANGED <<crashed, cutOff, primary, store, installed, inbox, msgs,
                   coord, coordAt, innerAt, seq, reads>>

\* Section 5.2, elect: a survivor j becomes p's primary.  An abort the
\* partition sent may have been dropped with the crashed copy's channels,
\* so the new primary repeats the abort of every transaction of p whose
\* coordinator is still waiting.  It serves only once caught up (CaughtUp).
ElectPrimary(p) ==
    /\ Primary(p) \in decided
    /\ \E j \in Index :
         /\ <<p, j>> \in Survivors(p)
         /\ primary' = [primary EXCEPT ![p] = j]
         /\ msgs' = Send({Notice("innerAbort", t, <<p, j>>) :
                            t \in {u \in Txn : /\ InnerOf[u] = p /\ coord[u] = "delegated" /\ AtOrigin(u)
                                               /\ inner[u] = "aborted"}})
    /\ UNCHANGED <<crashed, cutOff, decided, lock, store, installed, inbox, coord, coordAt,
                   outer, inner, innerAt, seq, reads, order>>

\* Recovery commits, on the new primary, a transaction whose inner host
\* crashed after replicating it and before committing (Section 5.2, "that
\* transaction can commit"), once the new primary has applied it; only
\* then are the crashed host's inner locks released (D4).
RecoveryCommit(t) ==
    /\ inner[t] = "replicating" /\ InnerHost(t) \in cutOff
    /\ Up(Primary(InnerOf[t])) /\ t \in installed[Primary(InnerOf[t])]
    /\ inner' = [inner EXCEPT ![t] = "committed"]
    /\ Release(InnerKeys(t))
    /\ order' = Serialize(t)    \* already serialized on receipt, unless SerializeOnReceipt is replaced
    /\ UNCHANGED <<crashed, cutOff, decided, primary, store, installed, inbox, msgs,
                   coord, coordAt, outer, innerAt, seq, reads>>

\* A replica of p crashed: the configuration shrinks, so the inner host no
\* longer waits for its acknowledgement, and a transaction every remaining
\* replica has received serializes (D8).  An inner host left without
\* replicas notifies the coordinators of what it has committed (D6).
RecoverReplica(c) ==
    LET p == c[1]
        lastReplica == ConfigReplicas(p) = {c}
        committedHere == {t \in Txn : InnerOf[t] = p /\ t \in installed[Primary(p)]}
        nowAcked == {t \in Txn : /\ InnerOf[t] = p /\ inner[t] = "replicating"
                                 /\ \A r \in ConfigReplicas(p) \ {c} : t \in inbox[r]}
    IN
    /\ c \in crashed /\ c \notin cutOff /\ c # Primary(p)
    /\ cutOff' = cutOff \cup {c}
    /\ msgs' = (msgs \ Severed(c))
               \cup (IF lastReplica
                     THEN Delivered({Notice("notify", t, Primary(p)) : t \in committedHere})
                     ELSE {})
    /\ order' = IF lastReplica THEN order ELSE SerializeAll(order, nowAcked)
    /\ UNCHANGED <<crashed, decided, primary, lock, store, installed, inbox, coord, coordAt,
                   outer, inner, innerAt, seq, reads>>

\* What copy c of t's inner partition knows of t from its own log: as the
\* host it ran t (executed or rejected it), or it received t's replication
\* message.
CopyKnows(c, t) ==
    \/ c = InnerHost(t) /\ inner[t] # "none"
    \/ t \in inbox[c] \cup installed[c]

\* Section 5.2, "Failure of coordinator": the node playing t's coordinator
\* crashed (its origin node, or a copy that took over and was cut off by
\* its partition's recovery).  The inner host takes over if it is up and
\* knows t; once the host is cut off, a copy that knows t does (D7).  If no
\* such node knows t, its changes never reached the inner host, and t
\* aborts; the inner partition's primary finishes the abort.  The inner
\* partition's own failure is recovered first (a new primary elected), so
\* that "the host failed" is known and a primary is there to finish.
RecoverCoordinator(t) ==
    LET n == coordAt[t]
        p == InnerOf[t]
        named == IF innerAt[t] = 0 THEN {}      \* never delegated: nobody knows t
                 ELSE IF Up(InnerHost(t)) THEN {InnerHost(t)} ELSE Config(p)
        electable == {c \in named : Up(c) /\ c \notin cutOff /\ CopyKnows(c, t)}
    IN
    /\ n \in cutOff /\ coord[t] \notin {"committed", "aborted"}
    /\ Primary(p) \notin cutOff
    /\ innerAt[t] # 0 => (Up(InnerHost(t)) \/ InnerHost(t) \in cutOff)
    /\ IF electable # {}
       THEN /\ \E c \in electable : coordAt' = [coordAt EXCEPT ![t] = c]
            /\ UNCHANGED coord
       ELSE /\ coordAt' = [coordAt EXCEPT ![t] = Primary(p)]
            /\ coord' = [coord EXCEPT ![t] = IF @ \in {"locking", "delegated"} THEN "aborting" ELSE @]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, lock, store, installed, inbox, msgs, outer, inner,
                   innerAt, seq, reads, order>>

-----------------------------------------------------------------------------
(* The specification                                                       *)

Settled ==
    /\ \A t \in Txn : coord[t] \in {"committed", "aborted"}
    /\ crashed = cutOff
    /\ \A p \in Part : Primary(p) \notin cutOff
    /\ \A t \in Ordered : \A p \in Part : \A c \in Config(p) :
         Writes(t, p) # {} => t \in installed[c]

\* Every transaction settled: stutter, so that TLC's deadlock check flags
\* any other state with no step.
Done == Settled /\ UNCHANGED vars

Protocol ==
    \/ \E t \in Txn :
         \/ \E p \in Part : CoordLockOuter(t, p) \/ CoordLockDenied(t, p)
                            \/ OuterCommit(t, p) \/ OuterRelease(t, p)
         \/ CoordLearnParticipantFailed(t) \/ CoordDelegate(t) \/ CoordLearnCommit(t) \/ CoordLearnAbort(t) \/ CoordFinish(t)
         \/ InnerExecute(t) \/ InnerReject(t) \/ InnerCommit(t)
         \/ \E r \in AllCopies : ReplicaReceive(r, t) \/ ReplicaApply(r, t)
         \/ RecoverCoordinator(t) \/ RecoveryCommit(t)
    \/ \E p \in Part : DecidePending(p) \/ ElectPrimary(p)
                       \/ \E c \in Copies(p), t \in Txn : GatherPending(p, c, t)
    \/ \E n \in Node : CloseChannels(n)
    \/ \E c \in AllCopies : RecoverReplica(c)

Next == Protocol \/ (\E n \in Node : Crash(n)) \/ Done

\* Crashes are not forced; every protocol and recovery step is.  The state
\* graph without Crash has no cycle, so weak fairness on Protocol as a
\* whole drives every behaviour to a state where no step is enabled.
Spec == Init /\ [][Next]_vars /\ WF_vars(Protocol)

-----------------------------------------------------------------------------
(* Properties                                                              *)

CommittedSomewhere(t) ==
    \/ t \in Ordered
    \/ inner[t] = "committed"
    \/ coord[t] \in {"committing", "committed"}
    \/ \E p \in Part : outer[t][p] = "committed"
    \/ \E c \in AllCopies : Up(c) /\ t \in installed[c]

AbortedSomewhere(t) ==
    \/ inner[t] = "aborted"
    \/ coord[t] \in {"aborting", "aborted"}
    \/ \E p \in Part : outer[t][p] = "aborted"

\* No node commits a transaction that another node aborts.  A crashed
\* replica's applied state is void (crash-stop: it never serves again); a
\* crashed host's commit is not, and DurabilityInv guards it.
AtomicityInv == \A t \in Txn : ~(CommittedSomewhere(t) /\ AbortedSomewhere(t))

\* Copy c holds t: installed it, received it, or is the host replicating it.
Holds(c, t) == \/ t \in inbox[c] \cup installed[c]
               \/ c = InnerHost(t) /\ inner[t] = "replicating"

\* Once a transaction has serialized, some live copy of its inner partition
\* holds it (given at most R - 1 crashes per replica group).
DurabilityInv == \A t \in Ordered : \E c \in Copies(InnerOf[t]) : Up(c) /\ Holds(c, t)

\* Where t stands in the serial order.  With several replicas, one may
\* apply t before the others have received it: t is then replicating,
\* holds its inner locks, and goes after everything serialized, by
\* sequence number.
SerialPos(t) == IF t \in Ordered THEN Pos(t) ELSE Len(order) + seq[t]

\* Every live copy is a serial prefix, key by key: its value of k is the
\* last writer of k, in serial order, among what it installed, and it
\* installed every earlier serialized writer of k.  Nothing is installed
\* that is neither serialized nor being replicated.
ReplicaAgreementInv ==
    \A c \in AllCopies : Up(c) =>
        /\ \A t \in installed[c] : t \in Ordered \/ inner[t] = "replicating"
        /\ \A k \in Key : PartOf[k] = c[1] =>
             LET W == {t \in installed[c] : k \in WriteSet[t]}
             IN /\ store[c][k] = IF W = {} THEN InitVal
                                 ELSE CHOOSE t \in W : \A u \in W : SerialPos(u) <= SerialPos(t)
                /\ \A t \in W, u \in Ordered :
                     (k \in WriteSet[u] /\ SerialPos(u) < SerialPos(t)) => u \in installed[c]

\* Every transaction is decided at its coordinator, and every live copy of
\* a partition a committed transaction wrote has installed it.
TerminationProp == <>[]Settled

\* Refinement of the serial reference: transactions serialize in `order`.
SerialStore == [k \in Key |-> LastWriter(k, Ordered)]
\* A transaction aborts, abstractly, when its coordinator decides so: one
\* transaction a step (recovery may abort several inner regions at once).
AbsStatus == [t \in Txn |-> IF t \in Ordered THEN "committed"
                            ELSE IF coord[t] \in {"aborting", "aborted"} THEN "aborted"
                            ELSE "pending"]
AbsRead == [t \in Txn |-> IF t \in Ordered THEN reads[t] ELSE [k \in Key |-> NoVal]]

Ser == INSTANCE Serializable WITH store <- SerialStore, status <- AbsStatus, readVal <- AbsRead
SerializableRefinementProp == Ser!Spec
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety          *)
(* property, so each operator below says that a step never happens, and    *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* A transaction commits; one commits in a behaviour where a node crashed.
CommitReachable == ~\E t \in Txn : coord[t] = "committed"
CommitAfterCrashReachable == ~(crashed # {} /\ \E t \in Txn : coord[t] = "committed")
\* Recovery keeps a cut-off host's inner locks for a transaction it will
\* commit, until the new primary has applied it (D4).
CrashedHostLocksReachable ==
    ~\E t \in Txn : /\ InnerHost(t) \in cutOff /\ inner[t] = "replicating"
                   /\ \E k \in InnerKeys(t) : lock[k] = t
\* A live copy applies a transaction past a sequence number it will never
\* receive, because the host that sent it is cut off (D5).
SeqGapSkipReachable ==
    ~\E c \in AllCopies, t, u \in Txn :
        /\ Up(c) /\ t \in installed[c] /\ u \notin installed[c]
        /\ InnerOf[u] = InnerOf[t] /\ seq[u] \in 1..(seq[t] - 1)
\* The node playing a coordinator after a takeover crashes; a promoted
\* primary crashes.
TakeoverCrashReachable == ~\E t \in Txn : ~AtOrigin(t) /\ coordAt[t] \in crashed
NewPrimaryCrashReachable == ~\E p \in Part : primary[p] # 1 /\ Primary(p) \in crashed
\* A node crashes while a primary's recovery is half done: its channels
\* are closed, no new primary is elected yet.
CrashDuringRecoveryReachable ==
    ~\E p \in Part : Primary(p) \in cutOff /\ \E n \in crashed : n # Primary(p) /\ n \notin cutOff
\* Recovery has a pending transaction to gather: one survivor received it
\* and another did not (D9).
GatherNeededReachable ==
    ~\E p \in Part : Recovering(p) /\ \E t \in Pending(p) :
        Received(t, Survivors(p)) /\ ~\A s \in Survivors(p) : t \in inbox[s]
\* A copy crashes after recovery decided and before it elected a primary.
CrashBeforeElectReachable ==
    ~\E p \in Part : Primary(p) \in decided /\ \E c \in Copies(p) : c \in crashed /\ c \notin cutOff
\* An outer write waits for a copy to apply an earlier inner commit (D3).
OuterBehindLogReachable ==
    ~\E t \in Txn, p \in Part : /\ coord[t] = "committing" /\ outer[t][p] = "locked"
                               /\ Up(Primary(p)) /\ ~LogApplied(p)
\* A transaction commits under a coordinator that took over (D7).
TakeoverCommitReachable == ~\E t \in Txn : ~AtOrigin(t) /\ coord[t] = "committed"
=============================================================================
