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
// another, each the entry its primary logged under that number, skipping (D5) only a number no
// live copy applied; a primary never logs again, as another transaction, a number a live copy
// applied (a new primary numbers after everything the survivors hold).
spec ReplicaAgreement observes eLogged, eApplied, eSkipped, eCopyCrashed {
  var logged: map[(int, int), int];
  var appliedAs: map[(int, int), map[int, int]];   // (partition, number) -> copy -> transaction
  var last: map[(int, int), int];
  var dead: set[(int, int)];
  start state Watching {
    on eLogged do (l: (p: int, sq: int, t: int)) {
      var c: int;
      if ((l.p, l.sq) in appliedAs) {
        foreach (c in keys(appliedAs[(l.p, l.sq)])) {
          assert (l.p, c) in dead || appliedAs[(l.p, l.sq)][c] == l.t,
            format("ReplicaAgreementInv: partition {0} logged entry {1} as transaction {2}, which its copy {3} applied as transaction {4}", l.p, l.sq, l.t, c, appliedAs[(l.p, l.sq)][c]);
        }
      }
      logged[(l.p, l.sq)] = l.t;
    }
    on eApplied do (a: (p: int, copy: int, sq: int, t: int)) {
      Next(a.p, a.copy, a.sq);
      assert (a.p, a.sq) in logged && logged[(a.p, a.sq)] == a.t,
        format("ReplicaAgreementInv: copy {0} of partition {1} applied entry {2} as transaction {3}, which the primary did not log so", a.copy, a.p, a.sq, a.t);
      if (!((a.p, a.sq) in appliedAs)) { appliedAs[(a.p, a.sq)] = default(map[int, int]); }
      appliedAs[(a.p, a.sq)][a.copy] = a.t;
    }
    on eSkipped do (k: (p: int, copy: int, sq: int)) {
      var c: int;
      Next(k.p, k.copy, k.sq);
      if ((k.p, k.sq) in appliedAs) {
        foreach (c in keys(appliedAs[(k.p, k.sq)])) {
          assert (k.p, c) in dead, format("ReplicaAgreementInv: copy {0} of partition {1} skipped entry {2}, which its live copy {3} applied", k.copy, k.p, k.sq, c);
        }
      }
    }
    on eCopyCrashed do (c: (p: int, copy: int)) { dead += ((c.p, c.copy)); }
  }

  fun Next(p: int, copy: int, sq: int) {
    var before: int;
    if ((p, copy) in last) { before = last[(p, copy)]; }
    assert sq == before + 1, format("ReplicaAgreementInv: copy {0} of partition {1} took entry {2} after {3}", copy, p, sq, before);
    last[(p, copy)] = sq;
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
// A crashed primary's shares are gone with it; its successor opens again those its log kept.
spec SharesEnd observes eShareOpened, eOutcome, eSharesLost {
  var open: set[(int, int)];
  start cold state Idle {
    on eShareOpened do (s: (t: int, p: int)) { open += ((s.t, s.p)); goto Open; }
    ignore eOutcome, eSharesLost;
  }
  hot state Open {
    on eShareOpened do (s: (t: int, p: int)) { open += ((s.t, s.p)); }
    on eOutcome do (o: (t: int, p: int, committed: bool)) {
      open -= ((o.t, o.p));
      if (sizeof(open) == 0) { goto Idle; }
    }
    on eSharesLost do (p: int) {
      var s: (int, int); var gone: set[(int, int)];
      foreach (s in open) { if (s.1 == p) { gone += (s); } }
      foreach (s in gone) { open -= (s); }
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

spec ReplicaCrashReachable observes eCopyCrashed {
  start state Watching {
    on eCopyCrashed do (c: (p: int, copy: int)) { assert false, format("ReplicaCrashReachable: copy {0} of partition {1} crashed", c.copy, c.p); }
  }
}

// RecoveryCommit: a new primary holds an inner region its crashed host had not committed.
spec RecoveryCommitReachable observes eOutcome, eRecoveryCommit {
  var committed: set[(int, int)];
  start state Watching {
    on eOutcome do (o: (t: int, p: int, committed: bool)) { if (o.committed) { committed += ((o.t, o.p)); } }
    on eRecoveryCommit do (r: (t: int, p: int)) {
      assert (r.t, r.p) in committed, format("RecoveryCommitReachable: the new primary of partition {0} commits transaction {1}, which its crashed host had not", r.p, r.t);
    }
  }
}

// D5's gap: recovery skips a number no survivor holds, one sent later having overtaken it and its
// sender cut off before it arrived (Network.p's reordering; FIFO queues never form the gap).
spec GapSkipReachable observes eSkipped {
  start state Watching {
    on eSkipped do (k: (p: int, copy: int, sq: int)) { assert false, format("GapSkipReachable: copy {0} of partition {1} skipped entry {2}, which no survivor held", k.copy, k.p, k.sq); }
  }
}
