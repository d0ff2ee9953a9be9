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
(*    is one Crash.                                                        *)
(*  - A coordinator's failure is traced on a node that only coordinates.   *)
(*    The spec gives each transaction a coordinator node of its own        *)
(*    (CoordNode(t)); the engine's node coordinates several.  Its crash is *)
(*    the spec's Crash of the coordinator of each attempt it has under way *)
(*    (CrashCoordinators, one Crash a step in attempt order, then the      *)
(*    event), and its channels' closing is CloseChannels of each.  The     *)
(*    engine's successor is pulled (proofs/Chiller.md, item 7): a share    *)
(*    whose coordinator is cut off asks the inner partition's primary,     *)
(*    which answers from its own log and records RecoverCoordinator the    *)
(*    first time.  That is the spec's RecoverCoordinator with the role     *)
(*    going to the recorded copy, and, if the transaction was delegated    *)
(*    and not yet decided, the new coordinator's CoordLearnCommit or       *)
(*    CoordLearnAbort from its own log in the same event.  The asking      *)
(*    shares then commit or release (OuterCommit, OuterRelease); the       *)
(*    successor collects no answers, so no CoordFinish follows.  A lock    *)
(*    request or an outcome still in flight when the coordinator stopped   *)
(*    would land as a step of a coordinator that is down, which the spec's *)
(*    one-step CoordLockOuter and OuterCommit cannot take: the recorded    *)
(*    runs have none.                                                      *)
(***************************************************************************)
EXTENDS Chiller, TLC

CONSTANT
    TraceLog    \* the recorded events, each [kind, t, p, c, reads]: t a transaction (0 for none),
                \* p a partition, c a copy's index (1 the primary; 0 for none), reads a set of
                \* <<key, value>> pairs, the value a transaction or InitVal; a coordinator
                \* node's CrashCoordinators and CloseCoordinators add ts, the attempts it had under way

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

\* A node that only coordinates stopped: the coordinators of the attempts in
\* e.ts crash one a step, in attempt order, without consuming the event;
\* the event is consumed once all have.
CrashNextCoordinator(e) ==
    /\ e.kind = "CrashCoordinators"
    /\ \E t \in e.ts : /\ Up(CoordNode(t)) /\ \A u \in e.ts : u < t => ~Up(CoordNode(u))
                      /\ Crash(CoordNode(t))

TraceCrashCoordinators(e) ==
    /\ e.kind = "CrashCoordinators"
    /\ \A t \in e.ts : ~Up(CoordNode(t))
    /\ UNCHANGED vars

\* Its channels closed: CloseChannels of each of those coordinators, the same way.
CloseNextCoordinator(e) ==
    /\ e.kind = "CloseCoordinators"
    /\ \E t \in e.ts : /\ CoordNode(t) \notin cutOff /\ \A u \in e.ts : u < t => CoordNode(u) \in cutOff
                      /\ CloseChannels(CoordNode(t))

TraceCloseCoordinators(e) ==
    /\ e.kind = "CloseCoordinators"
    /\ \A t \in e.ts : CoordNode(t) \in cutOff
    /\ UNCHANGED vars

\* Section 5.2's takeover by copy <<e.p, e.c>>, the inner partition's primary
\* that answered.  Consumes the event when the outcome is set by it (already
\* committing, or aborted because no copy knows t); otherwise TraceTakeoverLearns
\* does.
Takeover(e) ==
    /\ e.kind = "RecoverCoordinator"
    /\ RecoverCoordinator(e.t)
    /\ coordAt'[e.t] = <<e.p, e.c>>

TraceRecoverCoordinator(e) == Takeover(e) /\ coord'[e.t] # "delegated"

TakeoverUndecided(e) == Takeover(e) /\ coord'[e.t] = "delegated"

\* The new coordinator decides from its own log (D7).
TraceTakeoverLearns(e) ==
    /\ e.kind = "RecoverCoordinator"
    /\ ~AtOrigin(e.t) /\ coordAt[e.t] = <<e.p, e.c>>
    /\ CoordLearnCommit(e.t) \/ CoordLearnAbort(e.t)

\* The steps of one of several spec actions an event stands for: each leaves
\* the event for the last.
TraceSilent ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         \/ CrashNextCoordinator(e) \/ CloseNextCoordinator(e) \/ TakeoverUndecided(e)
    /\ UNCHANGED l

\* The event at l names its action; every other Trace action fails on its kind.
TraceNext ==
    \/ /\ l <= Len(TraceLog)
       /\ LET e == TraceLog[l] IN
            \/ TraceCoordLockOuter(e) \/ TraceCoordLockDenied(e) \/ TraceCoordDelegate(e)
            \/ TraceInnerExecute(e) \/ TraceInnerReject(e) \/ TraceInnerCommit(e)
            \/ TraceReplicaReceive(e) \/ TraceReplicaApply(e)
            \/ TraceCoordLearnCommit(e) \/ TraceCoordLearnAbort(e)
            \/ TraceOuterCommit(e) \/ TraceOuterRelease(e) \/ TraceCoordFinish(e)
            \/ TraceCrash(e) \/ TraceRecoverReplica(e)
            \/ TraceCloseChannels(e) \/ TraceGatherPending(e) \/ TraceDecidePending(e)
            \/ TraceElectPrimary(e) \/ TraceRecoveryCommit(e)
            \/ TraceCrashCoordinators(e) \/ TraceCloseCoordinators(e)
            \/ TraceRecoverCoordinator(e) \/ TraceTakeoverLearns(e)
       /\ Consume
    \/ TraceSilent

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

\* Each Trace action conjoins one action of Spec and adds only guards, or, the
\* last of several steps of one event, leaves vars unchanged, so a behaviour
\* of TraceSpec is one of Spec; checked, not argued.
NextStepProp == [][Next]_vars

\* Violated exactly when some behaviour of Spec matches the whole trace.
TraceMatchedReachable == l <= Len(TraceLog)
=============================================================================
