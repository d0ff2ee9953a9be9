// The workloads of specs/StealDB/MCStealDB.tla, and its mutants as test cases that must fail.
// Records: 0 the hot one, 1-3 A, B, C, 10 + 10 t + k transaction t's k-th private record.

fun Op(rec: int, deps: set[int], mayAbort: bool): OpSpec { return (rec = rec, deps = deps, mayAbort = mayAbort, write = true); }
fun ReadOp(rec: int, deps: set[int], mayAbort: bool): OpSpec { return (rec = rec, deps = deps, mayAbort = mayAbort, write = false); }
fun After0(): set[int] { var s: set[int]; s += (0); return s; }
fun Roots(): set[int] { return default(set[int]); }
fun Private(t: int, k: int): int { return 10 + 10 * t + k; }

fun NoMutants(): Mutants {
  return (noCas = false, nonAtomicSteal = false, earlyRelease = false, proceedWithoutLock = false,
          timeoutCancels = false, noTimeout = false, detectNoStealEdges = false,
          predEndedExit = false, detectIgnoresReaders = false);
}

// HotProg: every transaction increments the hot record, then two private records that depend
// on it (the work waiters steal); the last may hit a user abort.
fun Hot(): map[int, seq[OpSpec]] {
  var progs: map[int, seq[OpSpec]]; var t: int; var ops: seq[OpSpec];
  while (t < 3) {
    ops = default(seq[OpSpec]);
    ops += (0, Op(0, Roots(), false));
    ops += (1, Op(Private(t, 1), After0(), false));
    ops += (2, Op(Private(t, 2), After0(), true));
    progs[t] = ops;
    t = t + 1;
  }
  return progs;
}

// OppositeProg: two transactions take A and B in opposite orders, with a private op each.
fun Opposite(): map[int, seq[OpSpec]] {
  var progs: map[int, seq[OpSpec]]; var ops: seq[OpSpec];
  ops += (0, Op(1, Roots(), false)); ops += (1, Op(2, After0(), false)); ops += (2, Op(Private(0, 1), After0(), true));
  progs[0] = ops;
  ops = default(seq[OpSpec]);
  ops += (0, Op(2, Roots(), false)); ops += (1, Op(1, After0(), false)); ops += (2, Op(Private(1, 1), After0(), false));
  progs[1] = ops;
  return progs;
}

// LockOrderProg: sorted lock order A < B < C that stealing breaks.
fun LockOrder(): map[int, seq[OpSpec]] {
  var progs: map[int, seq[OpSpec]]; var ops: seq[OpSpec];
  ops += (0, Op(1, Roots(), false)); ops += (1, Op(2, After0(), false)); ops += (2, Op(3, After0(), false));
  progs[0] = ops;
  ops = default(seq[OpSpec]);
  ops += (0, Op(1, Roots(), false)); ops += (1, Op(Private(1, 1), After0(), false));
  progs[1] = ops;
  ops = default(seq[OpSpec]);
  ops += (0, Op(2, Roots(), false)); ops += (1, Op(3, After0(), false));
  progs[2] = ops;
  return progs;
}

// TwoHotProg: one transaction ahead of two waiters on two records, both reading its word.
fun TwoHot(): map[int, seq[OpSpec]] {
  var progs: map[int, seq[OpSpec]]; var ops: seq[OpSpec];
  ops += (0, Op(1, Roots(), false)); ops += (1, Op(2, After0(), false));
  ops += (2, Op(Private(0, 1), After0(), false)); ops += (3, Op(Private(0, 2), After0(), false));
  progs[0] = ops;
  ops = default(seq[OpSpec]);
  ops += (0, Op(1, Roots(), false));
  progs[1] = ops;
  ops = default(seq[OpSpec]);
  ops += (0, Op(2, Roots(), false));
  progs[2] = ops;
  return progs;
}

// HotReadProg (reader-writer locks): T0 writes the hot record, T1 and T2 only read it; each then
// writes two private records. T0's last op may abort.
fun HotRead(): map[int, seq[OpSpec]] {
  var progs: map[int, seq[OpSpec]]; var t: int; var ops: seq[OpSpec];
  while (t < 3) {
    ops = default(seq[OpSpec]);
    if (t == 0) { ops += (0, Op(0, Roots(), false)); } else { ops += (0, ReadOp(0, Roots(), false)); }
    ops += (1, Op(Private(t, 1), After0(), false));
    ops += (2, Op(Private(t, 2), After0(), t == 0));
    progs[t] = ops;
    t = t + 1;
  }
  return progs;
}

// SharedOppositeProg: each transaction reads one record, then writes the other.
fun SharedOpposite(): map[int, seq[OpSpec]] {
  var progs: map[int, seq[OpSpec]]; var ops: seq[OpSpec];
  ops += (0, ReadOp(1, Roots(), false)); ops += (1, Op(2, After0(), false)); ops += (2, Op(Private(0, 1), After0(), true));
  progs[0] = ops;
  ops = default(seq[OpSpec]);
  ops += (0, ReadOp(2, Roots(), false)); ops += (1, Op(1, After0(), false)); ops += (2, Op(Private(1, 1), After0(), false));
  progs[1] = ops;
  return progs;
}

fun Launch(progs: map[int, seq[OpSpec]], policy: Policy, mutants: Mutants) { LaunchWith(progs, policy, mutants, false, false); }

fun LaunchWith(progs: map[int, seq[OpSpec]], policy: Policy, mutants: Mutants, detect: bool, sharedReads: bool) {
  var memory: Memory; var t: int;
  memory = new Memory((progs = progs, policy = policy, mutants = mutants, detect = detect, sharedReads = sharedReads));
  foreach (t in keys(progs)) { new Worker((memory = memory, t = t)); }
}

// StealDBDeadlock.tla's DetectSpec: the detector and no wait threshold, so that every deadlock
// is the detector's to end (Termination); the mutant's detector misses the cycle through a stolen op.
fun NoThreshold(): Mutants { var m: Mutants; m = NoMutants(); m.noTimeout = true; return m; }
fun NoStealEdges(): Mutants { var m: Mutants; m = NoThreshold(); m.detectNoStealEdges = true; return m; }

machine TestHot { start state S { entry { Launch(Hot(), QUEUE, NoMutants()); } } }
machine TestOpposite { start state S { entry { Launch(Opposite(), QUEUE, NoMutants()); } } }
machine TestLockOrder { start state S { entry { Launch(LockOrder(), QUEUE, NoMutants()); } } }
machine TestTwoHot { start state S { entry { Launch(TwoHot(), QUEUE, NoMutants()); } } }
machine TestBasicHot { start state S { entry { Launch(Hot(), BASIC, NoMutants()); } } }
machine TestNoStealOpposite { start state S { entry { Launch(Opposite(), NOSTEAL, NoMutants()); } } }

machine TestMutantNoCas { start state S { entry { var m: Mutants; m = NoMutants(); m.noCas = true; Launch(Hot(), QUEUE, m); } } }
machine TestMutantNonAtomicSteal { start state S { entry { var m: Mutants; m = NoMutants(); m.nonAtomicSteal = true; Launch(TwoHot(), QUEUE, m); } } }
machine TestMutantEarlyRelease { start state S { entry { var m: Mutants; m = NoMutants(); m.earlyRelease = true; Launch(Hot(), QUEUE, m); } } }
machine TestMutantProceedWithoutLock { start state S { entry { var m: Mutants; m = NoMutants(); m.proceedWithoutLock = true; Launch(Hot(), QUEUE, m); } } }
machine TestMutantTimeoutCancels { start state S { entry { var m: Mutants; m = NoMutants(); m.timeoutCancels = true; Launch(Hot(), QUEUE, m); } } }
machine TestDetectOpposite { start state S { entry { LaunchWith(Opposite(), QUEUE, NoThreshold(), true, false); } } }
machine TestDetectLockOrder { start state S { entry { LaunchWith(LockOrder(), QUEUE, NoThreshold(), true, false); } } }
machine TestNoStealDetectOpposite { start state S { entry { LaunchWith(Opposite(), NOSTEAL, NoThreshold(), true, false); } } }
machine TestMutantDetectNoStealEdges { start state S { entry { LaunchWith(LockOrder(), QUEUE, NoStealEdges(), true, false); } } }
machine TestSharedHot { start state S { entry { LaunchWith(HotRead(), QUEUE, NoMutants(), false, true); } } }
machine TestSharedOpposite { start state S { entry { LaunchWith(SharedOpposite(), QUEUE, NoMutants(), false, true); } } }
machine TestDetectSharedOpposite { start state S { entry { LaunchWith(SharedOpposite(), QUEUE, NoThreshold(), true, true); } } }
machine TestMutantDetectIgnoreReaders { start state S { entry { var m: Mutants; m = NoThreshold(); m.detectIgnoresReaders = true; LaunchWith(SharedOpposite(), QUEUE, m, true, true); } } }
machine TestMutantPredEndedExit { start state S { entry { var m: Mutants; m = NoMutants(); m.predEndedExit = true; LaunchWith(HotRead(), QUEUE, m, false, true); } } }
machine TestPaperLockOrderNoTimeout { start state S { entry { var m: Mutants; m = NoMutants(); m.noTimeout = true; Launch(LockOrder(), QUEUE, m); } } }

// Every test case checks every property; models/check knows which must fail, and how.
test tcHot [main=TestHot]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestHot, Memory, Worker };
test tcOpposite [main=TestOpposite]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestOpposite, Memory, Worker };
test tcLockOrder [main=TestLockOrder]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestLockOrder, Memory, Worker };
test tcTwoHot [main=TestTwoHot]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestTwoHot, Memory, Worker };
test tcBasicWSHot [main=TestBasicHot]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestBasicHot, Memory, Worker };
test tcNoStealOpposite [main=TestNoStealOpposite]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestNoStealOpposite, Memory, Worker };
test tcMutantNoCas [main=TestMutantNoCas]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantNoCas, Memory, Worker };
test tcMutantNonAtomicSteal [main=TestMutantNonAtomicSteal]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantNonAtomicSteal, Memory, Worker };
test tcMutantEarlyRelease [main=TestMutantEarlyRelease]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantEarlyRelease, Memory, Worker };
test tcMutantProceedWithoutLock [main=TestMutantProceedWithoutLock]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantProceedWithoutLock, Memory, Worker };
test tcMutantTimeoutCancels [main=TestMutantTimeoutCancels]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantTimeoutCancels, Memory, Worker };
test tcPaperLockOrderNoTimeout [main=TestPaperLockOrderNoTimeout]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestPaperLockOrderNoTimeout, Memory, Worker };
test tcDetectOpposite [main=TestDetectOpposite]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestDetectOpposite, Memory, Worker };
test tcDetectLockOrder [main=TestDetectLockOrder]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestDetectLockOrder, Memory, Worker };
test tcNoStealDetectOpposite [main=TestNoStealDetectOpposite]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestNoStealDetectOpposite, Memory, Worker };
test tcMutantDetectNoStealEdges [main=TestMutantDetectNoStealEdges]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantDetectNoStealEdges, Memory, Worker };
test tcSharedHot [main=TestSharedHot]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestSharedHot, Memory, Worker };
test tcSharedOpposite [main=TestSharedOpposite]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestSharedOpposite, Memory, Worker };
test tcDetectSharedOpposite [main=TestDetectSharedOpposite]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestDetectSharedOpposite, Memory, Worker };
test tcMutantDetectIgnoreReaders [main=TestMutantDetectIgnoreReaders]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantDetectIgnoreReaders, Memory, Worker };
test tcMutantPredEndedExit [main=TestMutantPredEndedExit]: assert ExactlyOnce, MutualExclusion, TwoPhase, StealTokenTakenOnce, Termination in { TestMutantPredEndedExit, Memory, Worker };

// Non-vacuity: each must fail with the named monitor, showing that step happens in that workload.
test tcHotCommitReachable [main=TestHot]: assert CommitReachable in { TestHot, Memory, Worker };
test tcHotAbortReachable [main=TestHot]: assert AbortReachable in { TestHot, Memory, Worker };
test tcHotStealReachable [main=TestHot]: assert StealReachable in { TestHot, Memory, Worker };
test tcOppositeCommitReachable [main=TestOpposite]: assert CommitReachable in { TestOpposite, Memory, Worker };
test tcOppositeAbortReachable [main=TestOpposite]: assert AbortReachable in { TestOpposite, Memory, Worker };
test tcHotCloseReachable [main=TestHot]: assert CloseReachable in { TestHot, Memory, Worker };
test tcLockOrderCloseReachable [main=TestLockOrder]: assert CloseReachable in { TestLockOrder, Memory, Worker };
test tcLockOrderStealReachable [main=TestLockOrder]: assert StealReachable in { TestLockOrder, Memory, Worker };
test tcTwoHotStealReachable [main=TestTwoHot]: assert StealReachable in { TestTwoHot, Memory, Worker };
test tcBasicWSHotStealReachable [main=TestBasicHot]: assert StealReachable in { TestBasicHot, Memory, Worker };
test tcNoStealOppositeCommitReachable [main=TestNoStealOpposite]: assert CommitReachable in { TestNoStealOpposite, Memory, Worker };
// And its twin the other way: vanilla 2PL never runs another transaction's op.
test tcNoStealOppositeNeverSteals [main=TestNoStealOpposite]: assert StealReachable in { TestNoStealOpposite, Memory, Worker };
test tcDetectOppositeDetectReachable [main=TestDetectOpposite]: assert DetectReachable in { TestDetectOpposite, Memory, Worker };
test tcDetectLockOrderStolenCycleReachable [main=TestDetectLockOrder]: assert StolenCycleReachable in { TestDetectLockOrder, Memory, Worker };
test tcSharedHotSharedUseReachable [main=TestSharedHot]: assert SharedUseReachable in { TestSharedHot, Memory, Worker };
test tcDetectSharedOppositeDetectReachable [main=TestDetectSharedOpposite]: assert DetectReachable in { TestDetectSharedOpposite, Memory, Worker };
