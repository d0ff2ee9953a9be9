// StealDB.tla's properties as P monitors.

// ExactlyOnceInv, and StealDBCore's claim half: no op is claimed or executed twice, and a
// transaction that commits executed every op once.
spec ExactlyOnce observes eExecuted, eClaimed, eTxnDecided {
  var runs: map[OpId, int];
  var claims: set[OpId];
  start state Watching {
    on eClaimed do (o: OpId) {
      assert !(o in claims), format("ExactlyOnceCoreInv: op {0} of transaction {1} claimed twice", o.i, o.t);
      claims += (o);
    }
    on eExecuted do (o: OpId) {
      if (o in runs) { runs[o] = runs[o] + 1; } else { runs[o] = 1; }
      assert runs[o] == 1, format("ExactlyOnceInv: op {0} of transaction {1} executed {2} times", o.i, o.t, runs[o]);
    }
    on eTxnDecided do (d: (t: int, committed: bool, ops: int)) {
      var i: int;
      if (d.committed) {
        while (i < d.ops) {
          assert (t = d.t, i = i) in runs, format("ExactlyOnceInv: transaction {0} commits without executing op {1}", d.t, i);
          i = i + 1;
        }
      }
    }
  }
}

// MutualExclusionInv: a transaction uses a record from the first execution of its op on it
// until it releases the record's lock; two use one record at once only if both hold it shared.
spec MutualExclusion observes eGranted, eReleased {
  var writer: map[int, int];
  var readers: map[int, set[int]];
  start state Watching {
    on eGranted do (g: (rec: int, t: int, shared: bool)) {
      var u: int;
      assert !(g.rec in writer) || writer[g.rec] == g.t,
        format("MutualExclusionInv: transaction {0} executes on record {1} while transaction {2} writes it", g.t, g.rec, writer[g.rec]);
      if (!(g.rec in readers)) { readers[g.rec] = default(set[int]); }
      if (g.shared) { readers[g.rec] += (g.t); return; }
      foreach (u in readers[g.rec]) {
        assert u == g.t, format("MutualExclusionInv: transaction {0} writes record {1} while transaction {2} reads it", g.t, g.rec, u);
      }
      writer[g.rec] = g.t;
    }
    on eReleased do (g: (rec: int, t: int)) {
      if (g.rec in writer && writer[g.rec] == g.t) { writer -= (g.rec); }
      if (g.rec in readers) { readers[g.rec] -= (g.t); }
    }
  }
}

// Non-vacuity of reader-writer locks: two transactions never read one record at once (tests
// with shared reads must fail it).
spec SharedUseReachable observes eGranted, eReleased {
  var readers: map[int, set[int]];
  start state Watching {
    on eGranted do (g: (rec: int, t: int, shared: bool)) {
      if (!g.shared) { return; }
      if (!(g.rec in readers)) { readers[g.rec] = default(set[int]); }
      readers[g.rec] += (g.t);
      assert sizeof(readers[g.rec]) < 2, format("SharedUseReachable: two transactions read record {0} at once", g.rec);
    }
    on eReleased do (g: (rec: int, t: int)) {
      if (g.rec in readers) { readers[g.rec] -= (g.t); }
    }
  }
}

// TwoPhaseProp: once a transaction has released a lock it requests none and executes nothing.
spec TwoPhase observes eReleased, eRequested, eExecuted {
  var shrinking: set[int];
  start state Watching {
    on eReleased do (g: (rec: int, t: int)) { shrinking += (g.t); }
    on eRequested do (g: (rec: int, t: int)) {
      assert !(g.t in shrinking), format("TwoPhaseProp: transaction {0} requests record {1} after releasing a lock", g.t, g.rec);
    }
    on eExecuted do (o: OpId) {
      assert !(o.t in shrinking), format("TwoPhaseProp: transaction {0} executes op {1} after releasing a lock", o.t, o.i);
    }
  }
}

// StealTokenTakenOnceInv: each write of a steal-context word is taken by one stealer.
spec StealTokenTakenOnce observes eTaken {
  var taken: set[(from: int, gen: int)];
  start state Watching {
    on eTaken do (k: (from: int, gen: int)) {
      assert !(k in taken), format("StealTokenTakenOnceInv: the context in transaction {0}'s word (write {1}) was taken twice", k.from, k.gen);
      taken += (k);
    }
  }
}

// TerminationProp: every transaction that starts ends (OwnerFinish), committed or aborted.
spec Termination observes eTxnStarted, eTxnEnded {
  var pending: set[int];
  start cold state Idle {
    on eTxnStarted do (t: int) { pending += (t); goto Waiting; }
    ignore eTxnEnded;
  }
  hot state Waiting {
    on eTxnStarted do (t: int) { pending += (t); }
    on eTxnEnded do (t: int) {
      pending -= (t);
      if (sizeof(pending) == 0) { goto Idle; }
    }
  }
}

// Non-vacuity: a protocol that does nothing passes every property above. Each monitor below
// says a step never happens; test cases that must fail with its name (models/models.json)
// show the step happens in that workload.

// A transaction commits.
spec CommitReachable observes eTxnDecided {
  start state Watching {
    on eTxnDecided do (d: (t: int, committed: bool, ops: int)) {
      assert !d.committed, format("CommitReachable: transaction {0} committed", d.t);
    }
  }
}

// A transaction aborts (a timeout, a user abort).
spec AbortReachable observes eTxnDecided {
  start state Watching {
    on eTxnDecided do (d: (t: int, committed: bool, ops: int)) {
      assert d.committed, format("AbortReachable: transaction {0} aborted", d.t);
    }
  }
}

// A worker executes another transaction's op (a stolen op runs).
spec StealReachable observes eRanBy {
  start state Watching {
    on eRanBy do (r: (op: OpId, by: int)) {
      assert r.op.t == r.by, format("StealReachable: op {0} of transaction {1} ran on transaction {2}'s worker", r.op.i, r.op.t, r.by);
    }
  }
}

// The owner of a doomed transaction closes an op nobody claimed (OwnerCloseOp).
spec CloseReachable observes eClosed {
  start state Watching {
    on eClosed do (o: OpId) { assert false, format("CloseReachable: the owner of transaction {0} closed its unclaimed op {1}", o.t, o.i); }
  }
}

// Non-vacuity of the detector: a waiter aborts on a cycle (DetectReachable), and one of those
// cycles runs through a stolen op (StealDBDeadlock.tla's StolenCycleReachable).
spec DetectReachable observes eDetectorAbort {
  start state Watching {
    on eDetectorAbort do (d: (op: OpId, stolenCycle: bool)) { assert false, format("DetectReachable: op {0} aborted on a cycle", d.op); }
  }
}

spec StolenCycleReachable observes eDetectorAbort {
  start state Watching {
    on eDetectorAbort do (d: (op: OpId, stolenCycle: bool)) {
      assert !d.stolenCycle, format("StolenCycleReachable: op {0} aborted on a cycle through a stolen op", d.op);
    }
  }
}
