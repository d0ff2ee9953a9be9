// Chiller.tla's properties that this model's steps can break, as P monitors.

// AtomicityInv: no partition commits a transaction that another aborts, and none ends it
// otherwise than its coordinator decided.
spec Atomicity observes eOutcome, eCoordDecided {
  var outcomes: map[int, map[int, bool]];
  var decided: map[int, bool];
  start state Watching {
    on eOutcome do (o: (t: int, p: int, committed: bool)) {
      var q: int;
      if (!(o.t in outcomes)) { outcomes[o.t] = default(map[int, bool]); }
      outcomes[o.t][o.p] = o.committed;
      foreach (q in keys(outcomes[o.t])) {
        assert outcomes[o.t][q] == o.committed,
          format("AtomicityInv: transaction {0} committed at one partition and aborted at another ({1}: {2}, {3}: {4})", o.t, q, outcomes[o.t][q], o.p, o.committed);
      }
      assert !(o.t in decided) || decided[o.t] == o.committed,
        format("AtomicityInv: partition {0} ended transaction {1} {2}, its coordinator decided {3}", o.p, o.t, o.committed, decided[o.t]);
    }
    on eCoordDecided do (d: (t: int, commit: bool)) {
      var q: int;
      decided[d.t] = d.commit;
      if (d.t in outcomes) {
        foreach (q in keys(outcomes[d.t])) {
          assert outcomes[d.t][q] == d.commit,
            format("AtomicityInv: transaction {0} decided {1}, but partition {2} ended it {3}", d.t, d.commit, q, outcomes[d.t][q]);
        }
      }
    }
  }
}

// ReplicaAgreementInv, as the log sees it: every copy applies its partition's entries one after
// another, each the entry its primary logged under that number.
spec ReplicaAgreement observes eLogged, eApplied {
  var logged: map[(int, int), int];
  var last: map[(int, int), int];
  start state Watching {
    on eLogged do (l: (p: int, sq: int, t: int)) { logged[(l.p, l.sq)] = l.t; }
    on eApplied do (a: (p: int, copy: int, sq: int, t: int)) {
      var before: int;
      if ((a.p, a.copy) in last) { before = last[(a.p, a.copy)]; }
      assert a.sq == before + 1, format("ReplicaAgreementInv: copy {0} of partition {1} applied entry {2} after {3}", a.copy, a.p, a.sq, before);
      assert (a.p, a.sq) in logged && logged[(a.p, a.sq)] == a.t,
        format("ReplicaAgreementInv: copy {0} of partition {1} applied entry {2} as transaction {3}, which the primary did not log so", a.copy, a.p, a.sq, a.t);
      last[(a.p, a.copy)] = a.sq;
    }
  }
}

// TerminationProp: every transaction's coordinator finishes, or crashes (then SharesEnd).
spec Termination observes eConfig, eTxnEnded, eCoordStopped {
  var left: int;
  start state Init {
    on eConfig goto Running with (c: Config) { left = sizeof(c.txns); }
  }
  hot state Running {
    on eTxnEnded, eCoordStopped do (t: int) {
      left = left - 1;
      if (left == 0) { goto Finished; }
    }
  }
  cold state Finished {
    ignore eTxnEnded, eCoordStopped;
  }
}

// TerminationProp for the partitions: every share a partition opened (locks granted, or a
// delegation taken) it eventually ends, a crashed coordinator's too.
spec SharesEnd observes eShareOpened, eOutcome {
  var open: set[(int, int)];
  start cold state Idle {
    on eShareOpened do (s: (t: int, p: int)) { open += ((s.t, s.p)); goto Open; }
    ignore eOutcome;
  }
  hot state Open {
    on eShareOpened do (s: (t: int, p: int)) { open += ((s.t, s.p)); }
    on eOutcome do (o: (t: int, p: int, committed: bool)) {
      open -= ((o.t, o.p));
      if (sizeof(open) == 0) { goto Idle; }
    }
  }
}

// Non-vacuity: each must be caught (a test case expects it), showing the step happens.
spec CommitReachable observes eCoordDecided {
  start state Watching {
    on eCoordDecided do (d: (t: int, commit: bool)) { assert !d.commit, format("CommitReachable: transaction {0} committed", d.t); }
  }
}

// A crashed coordinator's transaction committed by its successor.
spec TakeoverCommitReachable observes eTakenOver {
  start state Watching {
    on eTakenOver do (x: (t: int, p: int, commit: bool)) { assert !x.commit, format("TakeoverCommitReachable: the inner host of transaction {0} committed it for its crashed coordinator", x.t); }
  }
}

spec ReplicaCrashReachable observes eReplicaCrashed {
  start state Watching {
    on eReplicaCrashed do (c: (p: int, copy: int)) { assert false, format("ReplicaCrashReachable: copy {0} of partition {1} crashed", c.copy, c.p); }
  }
}
