----------------------------- MODULE MCChiller -----------------------------
(***************************************************************************)
(* Workloads for Chiller.tla, and its mutants.  A cfg picks a workload by  *)
(* substituting the key and transaction constants, and a mutant by         *)
(* substituting one operator.                                              *)
(***************************************************************************)
EXTENDS Chiller, TLC
CONSTANTS t1, t2, t3, p1, p2, p3   \* model values

\* The flight-booking shape of Section 3 on three partitions: "h" is the
\* contended record (the flight) on p1, the inner host of both
\* transactions; "a" (a customer) is on p2 and "b" (a seat) on p3.  t1
\* updates h and a; t2 reads a, updates h and inserts b, and its constraint
\* check may fail.  Both contend on h (inner) and on a (outer).
TwoKeys == {"h", "a", "b"}
TwoPartOf == [k \in TwoKeys |-> CASE k = "h" -> p1 [] k = "a" -> p2 [] k = "b" -> p3]
TwoRead == (t1 :> {"h", "a"}) @@ (t2 :> {"h", "a"})
TwoWrite == (t1 :> {"h", "a"}) @@ (t2 :> {"h", "b"})
TwoInner == (t1 :> p1) @@ (t2 :> p1)

\* The same two transactions contending on h alone: t2 reads h and
\* writes h and b.  Without the outer lock on a serializing them, t2 can
\* reach the inner host while t1 is still being replicated or recovered.
HotOnlyRead == (t1 :> {"h", "a"}) @@ (t2 :> {"h"})

\* A chain across two inner hosts: t1 (inner host p1) updates h and a; t2
\* (inner host p3) reads a and writes b.  Once t1's replica notifies its
\* coordinator, a is committed and unlocked, and t2 can read t1's a and
\* commit on p3 before p1 commits t1.
ChainRead == (t1 :> {"h", "a"}) @@ (t2 :> {"a"})
ChainWrite == (t1 :> {"h", "a"}) @@ (t2 :> {"b"})
ChainInner == (t1 :> p1) @@ (t2 :> p3)

\* The paper's serialization point, "when their inner host commits".
PaperSerializeOnReceipt(t) == order

\* Two transactions on one inner host with disjoint inner keys, so that
\* both can be replicating at once and a replica can receive the second
\* without the first (D5): t1 updates h and a, t2 updates g.
GapKeys == {"h", "g", "a"}
GapPartOf == [k \in GapKeys |-> CASE k \in {"h", "g"} -> p1 [] k = "a" -> p2]
GapRead == (t1 :> {"h", "a"}) @@ (t2 :> {"g"})
GapWrite == (t1 :> {"h", "a"}) @@ (t2 :> {"g"})

\* One transaction, for two crashes among three copies: t1 updates h (inner,
\* p1) and a (outer, p2).
OneRead == t1 :> {"h", "a"}
OneWrite == t1 :> {"h", "a"}
OneInner == t1 :> p1

\* Two inner hosts, one key written in both regions: t1 (inner host p1)
\* updates h and, as outer, a; t2 (inner host p2) updates a.  When t2
\* commits first, p2's replica may not have applied it when t1's outer
\* write of a arrives (D3).
CrossRead == (t1 :> {"h", "a"}) @@ (t2 :> {"a"})
CrossWrite == CrossRead
CrossInner == (t1 :> p1) @@ (t2 :> p2)

\* Larger, for manual runs: a third transaction updates h and b.
ThreeRead == TwoRead @@ (t3 :> {"h"})
ThreeWrite == TwoWrite @@ (t3 :> {"h", "b"})
ThreeInner == TwoInner @@ (t3 :> p1)

\* Three transactions on one hot record and nothing else: one partition (two
\* copies), every transaction updating h with p1 its inner host.  The
\* smallest workload found in which recovery must keep the inner locks of a
\* transaction it commits (D4): with two transactions no third can take a
\* lock that a late release frees from under the second.
HotKey == {"h"}
HotPartOf == [k \in HotKey |-> p1]
HotThreeRead == (t1 :> {"h"}) @@ (t2 :> {"h"}) @@ (t3 :> {"h"})

\* The gap workload with a third transaction on h, for D5 at three transactions.
Gap3Read == GapRead @@ (t3 :> {"h"})
Gap3Write == GapWrite @@ (t3 :> {"h"})

\* Mutant: the inner host commits without waiting for its replicas' acks.
MutantReplicasAckedNotAwaited(t) == TRUE

\* Mutant: the inner host waits for acks from every replica, even one the
\* cluster manager has removed from the configuration.
MutantReplicasAckedByAll(t) ==
    \A r \in Copies(InnerOf[t]) \ {InnerHost(t)} : t \in inbox[r]

\* Mutant: recovery commits only what a survivor has already applied, so
\* it aborts a transaction a surviving replica received but not yet applied.
MutantRecoveryCommitsIfApplied(t, survivors) == \E s \in survivors : t \in installed[s]

\* Mutant: an outer participant that has granted t's locks aborts t on its
\* own (a lock timeout, say) and releases them.  Replacing OuterRelease, it
\* drops that action's coordinator guard, so it covers OuterRelease too.
MutantOuterRelease(t, p) ==
    /\ outer[t][p] = "locked" /\ Up(Primary(p))
    /\ Release(KeysOn(t, p))
    /\ outer' = [outer EXCEPT ![t][p] = "aborted"]
    /\ UNCHANGED <<crashed, cutOff, decided, primary, store, installed, inbox, msgs,
                   coord, coordAt, inner, innerAt, seq, reads, order>>

\* Mutant: recovery decides before every survivor holds what one of them
\* received (D9).
MutantGathered(p) == TRUE

\* Mutant: an outer write is installed on every live copy at once, ahead
\* of inner commits a copy received but has not applied (D3).
MutantLogApplied(p) == TRUE

\* Mutant: a replica applies whatever it holds, ignoring sequence order.
MutantInOrder(r, t) == TRUE

\* Mutant: a new primary serves before applying the messages it holds.
MutantCaughtUp(c) == TRUE

\* Mutant: coordinator takeover elects a copy whatever its log says, so a
\* copy that never heard of t waits for t forever (D7).
MutantCopyKnows(c, t) == TRUE

\* Mutant: recovery releases a crashed host's inner locks at once, even for
\* a transaction it commits, before the new primary has applied it (D4).
MutantRecoveryFrees(toAbort, toCommit) == toAbort \cup toCommit

\* Mutant: a replica skips a missing sequence number without waiting for
\* the host that sent it to be cut off (D5).
MutantInOrderNoCutOff(r, t) ==
    \A u \in Txn \ {t} :
        (InnerOf[u] = InnerOf[t] /\ seq[u] \in 1..(seq[t] - 1))
            => u \in installed[r] \/ u \notin inbox[r]

\* Mutant: cutting a coordinator off leaves its delegation in flight.
MutantSevered(n) == {m \in msgs : \/ "from" \in DOMAIN m /\ m.from = n
                                  \/ "to" \in DOMAIN m /\ m.to = n}

\* TypeOK's twin: notifications and aborts addressed to the coordinator's
\* partition rather than to its node (D2).
MutantNotice(type, t, from) == [type |-> type, t |-> t, from |-> from, to |-> InnerOf[t]]
=============================================================================
