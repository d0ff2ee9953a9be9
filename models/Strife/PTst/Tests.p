// Workloads for the Strife model (those of specs/Strife/MCStrifeExec.tla, with a clustering),
// and MCStrifeExec.tla's mutants as test cases that must fail. Items: 1 X, 2 Y.

fun W(item: int): OpSpec { return (item = item, write = true); }
fun R(item: int): OpSpec { return (item = item, write = false); }
fun Ops1(a: OpSpec): seq[OpSpec] { var s: seq[OpSpec]; s += (0, a); return s; }
fun Ops2(a: OpSpec, b: OpSpec): seq[OpSpec] { var s: seq[OpSpec]; s += (0, a); s += (1, b); return s; }
fun Txn(batch: int, cluster: int, ops: seq[OpSpec], mayAbort: bool, age: int): TxnSpec {
  return (batch = batch, cluster = cluster, ops = ops, mayAbort = mayAbort, age = age);
}
fun NoMutants(): Mutants { return (noBarrier = false, abortKeepsLocks = false, overlapEarly = false, retryAfterCommit = false); }

// Batch 1: t0 writes X (cluster 1), t1 writes Y and may abort (cluster 2), the residuals t2 and
// t3 write X and Y in opposite orders (conflicting with both clusters and with each other).
// Batch 2: t4 writes X (cluster 1: it conflicts with batch 1's residuals), the residual t5
// writes Y and reads X.
fun TwoBatches(): seq[TxnSpec] {
  var s: seq[TxnSpec];
  s += (0, Txn(1, 1, Ops1(W(1)), false, 1));
  s += (1, Txn(1, 2, Ops1(W(2)), true, 2));
  s += (2, Txn(1, 0, Ops2(W(1), W(2)), false, 3));
  s += (3, Txn(1, 0, Ops2(W(2), W(1)), false, 4));
  s += (4, Txn(2, 1, Ops1(W(1)), false, 5));
  s += (5, Txn(2, 0, Ops2(W(2), R(1)), false, 6));
  return s;
}

// StrifeExecTermination's batch: two residuals writing X and Y in opposite orders.
fun OppositeResiduals(): seq[TxnSpec] {
  var s: seq[TxnSpec];
  s += (0, Txn(1, 0, Ops2(W(1), W(2)), false, 1));
  s += (1, Txn(1, 0, Ops2(W(2), W(1)), false, 2));
  return s;
}

fun Cfg(txns: seq[TxnSpec], batches: int, cc: CC, overlap: bool, m: Mutants): Config {
  return (txns = txns, batches = batches, workers = 2, cc = cc, maxRetries = 1, overlap = overlap, mutants = m,
          prefix = default(seq[int]), cycle = default(seq[int]));
}

fun Launch(cfg: Config) {
  var strife: Strife; var driver: Driver; var workers: seq[Worker]; var w: int;
  strife = new Strife(cfg);
  if (sizeof(cfg.cycle) > 0) { driver = new Driver((prefix = cfg.prefix, cycle = cfg.cycle)); }
  while (w < cfg.workers) {
    workers += (w, new Worker((strife = strife, driver = driver)));
    w = w + 1;
  }
  if (sizeof(cfg.cycle) > 0) { send driver, eStart, workers; }
}

machine TestExec { start state S { entry { Launch(Cfg(TwoBatches(), 2, NOWAIT_THEN_WAITDIE, false, NoMutants())); } } }
machine TestOverlap { start state S { entry { Launch(Cfg(TwoBatches(), 2, NOWAIT_THEN_WAITDIE, true, NoMutants())); } } }
machine TestOppositeTerminates { start state S { entry { Launch(Cfg(OppositeResiduals(), 1, NOWAIT_THEN_WAITDIE, true, NoMutants())); } } }

machine TestMutantNoBarrier { start state S { entry { var m: Mutants; m = NoMutants(); m.noBarrier = true; Launch(Cfg(TwoBatches(), 2, NOWAIT_THEN_WAITDIE, true, m)); } } }
machine TestMutantAbortKeepsLocks { start state S { entry { var m: Mutants; m = NoMutants(); m.abortKeepsLocks = true; Launch(Cfg(TwoBatches(), 2, NOWAIT_THEN_WAITDIE, true, m)); } } }
machine TestMutantOverlapEarly { start state S { entry { var m: Mutants; m = NoMutants(); m.overlapEarly = true; Launch(Cfg(TwoBatches(), 2, NOWAIT_THEN_WAITDIE, true, m)); } } }
machine TestMutantRetryAfterCommit { start state S { entry { var m: Mutants; m = NoMutants(); m.retryAfterCommit = true; Launch(Cfg(TwoBatches(), 2, NOWAIT_THEN_WAITDIE, true, m)); } } }

// Plain NO_WAIT with retry (the paper's residual phase) livelocks: a fair schedule, written out
// because a random scheduler would break it at once. Worker 0 analyses the batch, starts it and
// takes t0; worker 1 takes t1; each locks its first item. Then, forever: t1 meets X held,
// aborts and takes Y again; t0 meets Y held, aborts and takes X again.
machine TestNoWaitLivelock {
  start state S {
    entry {
      var c: Config; var prefix: seq[int]; var cycle: seq[int];
      prefix += (0, 0); prefix += (1, 0); prefix += (2, 0); prefix += (3, 1); prefix += (4, 0); prefix += (5, 1);
      cycle += (0, 1); cycle += (1, 1); cycle += (2, 0); cycle += (3, 0);
      c = Cfg(OppositeResiduals(), 1, NOWAIT, true, NoMutants());
      c.prefix = prefix;
      c.cycle = cycle;
      Launch(c);
    }
  }
}

// Every test case checks every property; models/check knows which must fail, and how.
test tcExec [main=TestExec]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestExec, Strife, Worker, Driver };
test tcOverlap [main=TestOverlap]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestOverlap, Strife, Worker, Driver };
test tcOppositeTerminates [main=TestOppositeTerminates]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestOppositeTerminates, Strife, Worker, Driver };
test tcMutantNoBarrier [main=TestMutantNoBarrier]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestMutantNoBarrier, Strife, Worker, Driver };
test tcMutantAbortKeepsLocks [main=TestMutantAbortKeepsLocks]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestMutantAbortKeepsLocks, Strife, Worker, Driver };
test tcMutantOverlapEarly [main=TestMutantOverlapEarly]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestMutantOverlapEarly, Strife, Worker, Driver };
test tcMutantRetryAfterCommit [main=TestMutantRetryAfterCommit]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestMutantRetryAfterCommit, Strife, Worker, Driver };
test tcNoWaitLivelock [main=TestNoWaitLivelock]: assert ExactlyOnce, PhaseOrder, LocksMatchAttempt, MutualExclusion, Termination in { TestNoWaitLivelock, Strife, Worker, Driver };
// The same twins seen by what they break in the data, not only in the phases.
test tcMutantNoBarrierExclusion [main=TestMutantNoBarrier]: assert MutualExclusion in { TestMutantNoBarrier, Strife, Worker, Driver };
test tcMutantOverlapEarlyExclusion [main=TestMutantOverlapEarly]: assert MutualExclusion in { TestMutantOverlapEarly, Strife, Worker, Driver };

// Non-vacuity: each must fail with the named monitor, showing that step happens in that workload.
test tcExecClusterCommitReachable [main=TestExec]: assert ClusterCommitReachable in { TestExec, Strife, Worker, Driver };
test tcExecResidualCommitReachable [main=TestExec]: assert ResidualCommitReachable in { TestExec, Strife, Worker, Driver };
test tcExecRetryReachable [main=TestExec]: assert RetryReachable in { TestExec, Strife, Worker, Driver };
test tcOverlapReachable [main=TestOverlap]: assert OverlapReachable in { TestOverlap, Strife, Worker, Driver };
test tcOverlapClustersReachable [main=TestOverlap]: assert OverlapClustersReachable in { TestOverlap, Strife, Worker, Driver };
test tcOppositeRetryReachable [main=TestOppositeTerminates]: assert RetryReachable in { TestOppositeTerminates, Strife, Worker, Driver };
// And the other way: without the overlap, no batch is analysed while another runs.
test tcExecNeverOverlaps [main=TestExec]: assert OverlapReachable, OverlapClustersReachable in { TestExec, Strife, Worker, Driver };
