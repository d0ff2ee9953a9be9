// Workloads for the Chiller model and the spec's mutants that apply to it, as test cases.
// Keys 1, 2 on partition 0; 3, 4 on partition 1.

fun PartOf(): map[int, int] {
  var m: map[int, int];
  m[1] = 0; m[2] = 0; m[3] = 1; m[4] = 1;
  return m;
}

fun Keys2(a: int, b: int): set[int] { var s: set[int]; s += (a); s += (b); return s; }

// t0: inner on 0 (key 1), outer key 3; t1: inner on 1 (key 3), outer key 1, so each one's inner
// key is the other's outer key; t2: inner on 0 (key 2) with a check that may fail, outer key 4.
fun ThreeCrossing(): seq[TxnSpec] {
  var s: seq[TxnSpec];
  s += (0, (ks = Keys2(1, 3), writes = Keys2(1, 3), inner = 0, mayAbort = false));
  s += (1, (ks = Keys2(3, 1), writes = Keys2(3, 1), inner = 1, mayAbort = false));
  s += (2, (ks = Keys2(2, 4), writes = Keys2(2, 4), inner = 0, mayAbort = true));
  return s;
}

fun NoMutants(): Mutants {
  return (outerUnilateralAbort = false, waitForCutOffReplica = false, participantTakesOver = false, decideBeforeGather = false, hostCommitsOnSend = false, redoesDoubledDelegation = false);
}

fun Cfg(copies: int, mayCrash: set[(int, int)], m: Mutants): Config {
  return (txns = ThreeCrossing(), partOf = PartOf(), parts = 2, copies = copies, mayCrash = mayCrash, coordMayCrash = default(set[int]), mutants = m);
}

// Every coordinator may crash after any step it takes.
fun CoordCrashes(c: Config): Config {
  c.coordMayCrash += (0); c.coordMayCrash += (1); c.coordMayCrash += (2);
  return c;
}

fun Launch(cfg: Config) {
  var manager: machine; var primaries: seq[machine]; var coordinators: seq[machine];
  var replicas: map[int, machine]; var all: map[int, map[int, machine]]; var p: int; var c: int; var t: int;
  announce eConfig, cfg;
  manager = new Manager();
  while (p < cfg.parts) { primaries += (p, new Primary()); p = p + 1; }
  p = 0;
  while (p < cfg.parts) {
    replicas = default(map[int, machine]);
    c = 1;
    while (c < cfg.copies) { replicas[c] = new Replica((cfg = cfg, p = p, copy = c, manager = manager, primaries = primaries)); c = c + 1; }
    send primaries[p], eStart, (cfg = cfg, p = p, manager = manager, replicas = replicas, primaries = primaries);
    all[p] = replicas;
    p = p + 1;
  }
  while (t < sizeof(cfg.txns)) {
    coordinators += (t, new Coordinator((cfg = cfg, t = t, primaries = primaries, manager = manager)));
    t = t + 1;
  }
  send manager, eWatchers, (cfg = cfg, coordinators = coordinators, primaries = primaries, replicas = all);
}

fun Crash1(): set[(int, int)] { var s: set[(int, int)]; s += ((0, 1)); return s; }
fun Crash2(): set[(int, int)] { var s: set[(int, int)]; s += ((0, 1)); s += ((0, 2)); return s; }
// Partition 0's primary; with three copies also copy 1, the first candidate of its recovery and
// then its new primary; both partitions' primaries.
fun PrimaryCrash(): set[(int, int)] { var s: set[(int, int)]; s += ((0, 0)); return s; }
fun PrimaryAndCandidateCrash(): set[(int, int)] { var s: set[(int, int)]; s += ((0, 0)); s += ((0, 1)); return s; }
fun BothPrimariesCrash(): set[(int, int)] { var s: set[(int, int)]; s += ((0, 0)); s += ((1, 0)); return s; }

machine TestTwoCopies { start state Init { entry { Launch(Cfg(2, default(set[(int, int)]), NoMutants())); } } }
machine TestReplicaCrash { start state Init { entry { Launch(Cfg(2, Crash1(), NoMutants())); } } }
machine TestTwoReplicaCrashes { start state Init { entry { Launch(Cfg(3, Crash2(), NoMutants())); } } }
machine TestMutantOuterUnilateralAbort {
  start state Init { entry { var m: Mutants; m = NoMutants(); m.outerUnilateralAbort = true; Launch(Cfg(2, default(set[(int, int)]), m)); } }
}
machine TestMutantWaitForCutOffReplica {
  start state Init { entry { var m: Mutants; m = NoMutants(); m.waitForCutOffReplica = true; Launch(Cfg(2, Crash1(), m)); } }
}

machine TestCoordinatorCrash { start state Init { entry { Launch(CoordCrashes(Cfg(2, default(set[(int, int)]), NoMutants()))); } } }
machine TestCoordinatorAndReplicaCrash { start state Init { entry { Launch(CoordCrashes(Cfg(2, Crash1(), NoMutants()))); } } }
machine TestMutantParticipantTakesOver {
  start state Init { entry { var m: Mutants; m = NoMutants(); m.participantTakesOver = true; Launch(CoordCrashes(Cfg(2, default(set[(int, int)]), m))); } }
}

machine TestPrimaryCrash { start state Init { entry { Launch(Cfg(2, PrimaryCrash(), NoMutants())); } } }
machine TestPrimaryCrashThreeCopies { start state Init { entry { Launch(Cfg(3, PrimaryCrash(), NoMutants())); } } }
machine TestPrimaryAndCandidateCrash { start state Init { entry { Launch(Cfg(3, PrimaryAndCandidateCrash(), NoMutants())); } } }
machine TestBothPrimariesCrash { start state Init { entry { Launch(Cfg(2, BothPrimariesCrash(), NoMutants())); } } }
machine TestPrimaryAndCoordinatorCrash { start state Init { entry { Launch(CoordCrashes(Cfg(2, PrimaryCrash(), NoMutants()))); } } }
machine TestMutantDecideBeforeGather {
  start state Init { entry { var m: Mutants; m = NoMutants(); m.decideBeforeGather = true; Launch(Cfg(3, PrimaryCrash(), m)); } }
}
machine TestMutantHostCommitsOnSend {
  start state Init { entry { var m: Mutants; m = NoMutants(); m.hostCommitsOnSend = true; Launch(Cfg(2, PrimaryCrash(), m)); } }
}

machine TestMutantRedoesDoubledDelegation {
  start state Init { entry { var m: Mutants; m = NoMutants(); m.redoesDoubledDelegation = true; Launch(Cfg(2, default(set[(int, int)]), m)); } }
}

test tcTwoCopies [main=TestTwoCopies]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestTwoCopies, Coordinator, Primary, Replica, Manager, Courier };
test tcReplicaCrash [main=TestReplicaCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestReplicaCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcTwoReplicaCrashes [main=TestTwoReplicaCrashes]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestTwoReplicaCrashes, Coordinator, Primary, Replica, Manager, Courier };
test tcMutantOuterUnilateralAbort [main=TestMutantOuterUnilateralAbort]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestMutantOuterUnilateralAbort, Coordinator, Primary, Replica, Manager, Courier };
test tcMutantWaitForCutOffReplica [main=TestMutantWaitForCutOffReplica]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestMutantWaitForCutOffReplica, Coordinator, Primary, Replica, Manager, Courier };
test tcTwoCopiesCommitReachable [main=TestTwoCopies]: assert CommitReachable in { TestTwoCopies, Coordinator, Primary, Replica, Manager, Courier };
test tcReplicaCrashReachable [main=TestReplicaCrash]: assert ReplicaCrashReachable in { TestReplicaCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcTwoReplicaCrashesReachable [main=TestTwoReplicaCrashes]: assert ReplicaCrashReachable in { TestTwoReplicaCrashes, Coordinator, Primary, Replica, Manager, Courier };
test tcCoordinatorCrash [main=TestCoordinatorCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestCoordinatorCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcCoordinatorAndReplicaCrash [main=TestCoordinatorAndReplicaCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestCoordinatorAndReplicaCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcMutantParticipantTakesOver [main=TestMutantParticipantTakesOver]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestMutantParticipantTakesOver, Coordinator, Primary, Replica, Manager, Courier };
test tcCoordinatorCrashTakeoverReachable [main=TestCoordinatorCrash]: assert TakeoverCommitReachable in { TestCoordinatorCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcPrimaryCrash [main=TestPrimaryCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestPrimaryCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcPrimaryCrashThreeCopies [main=TestPrimaryCrashThreeCopies]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestPrimaryCrashThreeCopies, Coordinator, Primary, Replica, Manager, Courier };
test tcPrimaryAndCandidateCrash [main=TestPrimaryAndCandidateCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestPrimaryAndCandidateCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcBothPrimariesCrash [main=TestBothPrimariesCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestBothPrimariesCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcPrimaryAndCoordinatorCrash [main=TestPrimaryAndCoordinatorCrash]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestPrimaryAndCoordinatorCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcMutantDecideBeforeGather [main=TestMutantDecideBeforeGather]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestMutantDecideBeforeGather, Coordinator, Primary, Replica, Manager, Courier };
test tcMutantHostCommitsOnSend [main=TestMutantHostCommitsOnSend]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestMutantHostCommitsOnSend, Coordinator, Primary, Replica, Manager, Courier };
test tcPrimaryCrashRecoveryCommitReachable [main=TestPrimaryCrash]: assert RecoveryCommitReachable in { TestPrimaryCrash, Coordinator, Primary, Replica, Manager, Courier };
test tcMutantRedoesDoubledDelegation [main=TestMutantRedoesDoubledDelegation]: assert Atomicity, ReplicaAgreement, Termination, SharesEnd in { TestMutantRedoesDoubledDelegation, Coordinator, Primary, Replica, Manager, Courier };
test tcPrimaryCrashGapSkipReachable [main=TestPrimaryCrash]: assert GapSkipReachable in { TestPrimaryCrash, Coordinator, Primary, Replica, Manager, Courier };
