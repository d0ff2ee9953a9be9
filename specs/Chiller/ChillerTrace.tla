---------------------------- MODULE ChillerTrace ----------------------------
(***************************************************************************)
(* Trace validation: is a run of the engine a behaviour of Spec?           *)
(*                                                                         *)
(* The engine's simulated cluster (src/Engine/Protocols/Chiller) reports   *)
(* every step it takes as the action of Chiller.tla it implements          *)
(* (ChillerStep), with its transaction attempt, partition and node, and    *)
(* for CoordLockOuter and InnerExecute the version of every row it read;   *)
(* a crash as the spec's Crash.  tests/Contend.Coyote (traces) writes each *)
(* recorded run as a module that EXTENDS this one and defines the run's    *)
(* transactions (one per attempt), keys, placement, regions and events.    *)
(* TraceSpec follows the events one by one: each is the named action of    *)
(* Chiller.tla with the recorded arguments, and the values read must be    *)
(* the ones the spec's store holds on that copy.  The trace is a behaviour *)
(* of Spec when some behaviour of TraceSpec consumes every event:          *)
(* TraceMatchedReachable, violated.                                        *)
(*                                                                         *)
(* The simulated cluster runs on one thread, so the order of the events is *)
(* the order in which the steps took effect.  What the engine does that    *)
(* the spec leaves out is not recorded, and the recorded workloads keep    *)
(* to where the two agree (tests/Contend.Coyote/Chiller/ChillerTraces.cs): *)
(*  - An outer partition's locks are one step in the spec (per partition)  *)
(*    and one message per op in the engine: each recorded transaction has  *)
(*    at most one outer op per partition.                                  *)
(*  - The spec's outer replication is one step (D3: OuterCommit installs   *)
(*    on every live copy); the engine ships an outer share's prepared      *)
(*    entry, commit and release through the partition's log.  Those        *)
(*    entries' receipts and applies are not the spec's ReplicaReceive and  *)
(*    ReplicaApply (which are the inner region's) and are not recorded;    *)
(*    the recorded workloads keep inner and outer regions on partitions of *)
(*    their own, so an outer partition's log holds no inner entry and      *)
(*    LogApplied holds there.                                              *)
(*  - The spec's transactions may abort only at the inner host             *)
(*    (MayAbort): the recorded programs' outer bodies never abort.         *)
(*  - A replica's failure is traced, and a primary's with one survivor     *)
(*    and with two.  With two, the engine gathers by messages (a request,  *)
(*    a reply, a fill per survivor); each entry a survivor takes from      *)
(*    another is the spec's GatherPending of that copy and transaction     *)
(*    (recorded instead of its ReplicaReceive), and the messages that      *)
(*    carry no entry change nothing the spec holds.  The                   *)
(*    recorded primary's crash keeps coordinators off its node, so that it *)
(*    is one Crash.  A coordinator's failure is not traced: its successor  *)
(*    does not finish the transaction as the spec's (proofs/Chiller.md,    *)
(*    item 7: each share asks for the outcome).  The crash matrix, Coyote  *)
(*    and the P model check those.                                         *)
(***************************************************************************)
EXTENDS Chiller, TLC

CONSTANT
    TraceLog    \* the recorded events, each [kind, t, p, c, reads]: t a transaction (0 for none),
                \* p a partition, c a copy's index (1 the primary; 0 for none), reads a set of
                \* <<key, value>> pairs, the value a transaction or InitVal

VARIABLE
    l           \* the index of the next event of TraceLog to match

traceVars == <<vars, l>>

TypeTraceOK == l \in 1..(Len(TraceLog) + 1)

Consume == l' = l + 1

TraceInit == Init /\ l = 1

\* Every row the step read holds on copy cp the value the engine saw.
ReadAsRecorded(e, cp) == \A r \in e.reads : store[cp][r[1]] = r[2]

\* Section 3.3 step 3, with the value read on the outer partition's primary.
TraceCoordLockOuter(e) ==
    /\ e.kind = "CoordLockOuter"
    /\ ReadAsRecorded(e, Primary(e.p))
    /\ CoordLockOuter(e.t, e.p)

TraceCoordLockDenied(e) ==
    /\ e.kind = "CoordLockDenied"
    /\ CoordLockDenied(e.t, e.p)

\* Step 4: delegated to the recorded partition, its inner host.
TraceCoordDelegate(e) ==
    /\ e.kind = "CoordDelegate"
    /\ InnerOf[e.t] = e.p
    /\ CoordDelegate(e.t)

\* Step 4 on the host, with the values read on the host's copy.
TraceInnerExecute(e) ==
    /\ e.kind = "InnerExecute"
    /\ innerAt[e.t] # 0 /\ ReadAsRecorded(e, InnerHost(e.t))
    /\ InnerExecute(e.t)

TraceInnerReject(e) ==
    /\ e.kind = "InnerReject"
    /\ InnerReject(e.t)

TraceInnerCommit(e) ==
    /\ e.kind = "InnerCommit"
    /\ InnerCommit(e.t)

\* Section 5.1 on replica <<e.p, e.c>>.
TraceReplicaReceive(e) ==
    /\ e.kind = "ReplicaReceive"
    /\ ReplicaReceive(<<e.p, e.c>>, e.t)

TraceReplicaApply(e) ==
    /\ e.kind = "ReplicaApply"
    /\ ReplicaApply(<<e.p, e.c>>, e.t)

TraceCoordLearnCommit(e) ==
    /\ e.kind = "CoordLearnCommit"
    /\ CoordLearnCommit(e.t)

TraceCoordLearnAbort(e) ==
    /\ e.kind = "CoordLearnAbort"
    /\ CoordLearnAbort(e.t)

\* Step 5 on outer partition e.p.
TraceOuterCommit(e) ==
    /\ e.kind = "OuterCommit"
    /\ OuterCommit(e.t, e.p)

TraceOuterRelease(e) ==
    /\ e.kind = "OuterRelease"
    /\ OuterRelease(e.t, e.p)

TraceCoordFinish(e) ==
    /\ e.kind = "CoordFinish"
    /\ CoordFinish(e.t)

\* A node stopped: copy <<e.p, e.c>>.
TraceCrash(e) ==
    /\ e.kind = "Crash"
    /\ Crash(<<e.p, e.c>>)

TraceRecoverReplica(e) ==
    /\ e.kind = "RecoverReplica"
    /\ RecoverReplica(<<e.p, e.c>>)

\* Section 5.2's recovery of partition e.p's crashed primary, copy e.c.
TraceCloseChannels(e) ==
    /\ e.kind = "CloseChannels"
    /\ CloseChannels(<<e.p, e.c>>)

\* Survivor <<e.p, e.c>> takes a pending entry another survivor holds.
TraceGatherPending(e) ==
    /\ e.kind = "GatherPending"
    /\ GatherPending(e.p, <<e.p, e.c>>, e.t)

TraceDecidePending(e) ==
    /\ e.kind = "DecidePending"
    /\ DecidePending(e.p)

\* The survivor elected is the copy recorded.
TraceElectPrimary(e) ==
    /\ e.kind = "ElectPrimary"
    /\ ElectPrimary(e.p)
    /\ primary'[e.p] = e.c

TraceRecoveryCommit(e) ==
    /\ e.kind = "RecoveryCommit"
    /\ RecoveryCommit(e.t)

\* The event at l names its action; every other Trace action fails on its kind.
TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         \/ TraceCoordLockOuter(e) \/ TraceCoordLockDenied(e) \/ TraceCoordDelegate(e)
         \/ TraceInnerExecute(e) \/ TraceInnerReject(e) \/ TraceInnerCommit(e)
         \/ TraceReplicaReceive(e) \/ TraceReplicaApply(e)
         \/ TraceCoordLearnCommit(e) \/ TraceCoordLearnAbort(e)
         \/ TraceOuterCommit(e) \/ TraceOuterRelease(e) \/ TraceCoordFinish(e)
         \/ TraceCrash(e) \/ TraceRecoverReplica(e)
         \/ TraceCloseChannels(e) \/ TraceGatherPending(e) \/ TraceDecidePending(e)
         \/ TraceElectPrimary(e) \/ TraceRecoveryCommit(e)
    /\ Consume

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* Each Trace action conjoins one action of Spec and adds only guards, so a
\* behaviour of TraceSpec is one of Spec; checked, not argued.
NextStepProp == [][Next]_vars

\* Violated exactly when some behaviour of Spec matches the whole trace.
TraceMatchedReachable == l <= Len(TraceLog)
=============================================================================
