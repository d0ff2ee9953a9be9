// StrifeExec.tla's properties as P monitors.

// ExactlyOnceInv: no transaction ends twice; a done batch has every transaction ended once.
spec ExactlyOnce observes eConfig, eTxnEnd, eBatchDone {
  var cfg: Config;
  var ended: map[int, int];
  start state Init {
    on eConfig do (c: Config) { cfg = c; goto Watching; }
  }
  state Watching {
    on eTxnEnd do (e: (t: int, committed: bool)) {
      if (e.t in ended) { ended[e.t] = ended[e.t] + 1; } else { ended[e.t] = 1; }
      assert ended[e.t] == 1, format("ExactlyOnceInv: transaction {0} ended {1} times", e.t, ended[e.t]);
    }
    on eBatchDone do (b: int) {
      var t: int;
      while (t < sizeof(cfg.txns)) {
        assert cfg.txns[t].batch != b || (t in ended && ended[t] == 1),
          format("ExactlyOnceInv: batch {0} done, but transaction {1} did not end exactly once", b, t);
        t = t + 1;
      }
    }
  }
}

// NoResidualBeforeClustersInv: a residual starts only once every clustered transaction of its
// batch has ended. BatchOrderInv: no transaction of batch b+1 starts before batch b is done.
spec PhaseOrder observes eConfig, eTxnStart, eTxnEnd, eBatchDone {
  var cfg: Config;
  var ended: set[int];
  var done: set[int];
  start state Init {
    on eConfig do (c: Config) { cfg = c; goto Watching; }
  }
  state Watching {
    on eTxnEnd do (e: (t: int, committed: bool)) { ended += (e.t); }
    on eBatchDone do (b: int) { done += (b); }
    on eTxnStart do (s: (t: int, clustered: bool)) {
      var b: int; var u: int;
      b = cfg.txns[s.t].batch;
      assert b == 1 || (b - 1) in done, format("BatchOrderInv: transaction {0} of batch {1} starts before batch {2} is done", s.t, b, b - 1);
      if (!s.clustered) {
        while (u < sizeof(cfg.txns)) {
          assert cfg.txns[u].batch != b || cfg.txns[u].cluster == 0 || u in ended,
            format("NoResidualBeforeClustersInv: residual {0} starts while transaction {1} of cluster {2} has not ended", s.t, u, cfg.txns[u].cluster);
          u = u + 1;
        }
      }
    }
  }
}

// LocksMatchAttemptInv, at an abort: the aborted attempt holds no lock.
spec LocksMatchAttempt observes eAttemptAborted {
  start state Watching {
    on eAttemptAborted do (a: (t: int, held: int)) {
      assert a.held == 0, format("LocksMatchAttemptInv: transaction {0} aborted an attempt but still holds {1} locks", a.t, a.held);
    }
  }
}

// MutualExclusionInv: from an op's touch of its item until the attempt ends, no other
// transaction touches the item if either writes it. Every transaction's uses are then
// disjoint in time from every conflicting transaction's, so the run is conflict-equivalent to
// running them one at a time (the serial reference of StrifeExec.tla's refinement).
spec MutualExclusion observes eUse, eRelease {
  var users: map[int, map[int, bool]];   // item -> the transactions touching it -> whether they wrote it
  start state Watching {
    on eUse do (u: (item: int, t: int, write: bool)) {
      var other: int;
      if (!(u.item in users)) { users[u.item] = default(map[int, bool]); }
      foreach (other in keys(users[u.item])) {
        assert other == u.t || !(u.write || users[u.item][other]),
          format("MutualExclusionInv: transaction {0} touches item {1} while transaction {2} does, and one of them writes it", u.t, u.item, other);
      }
      if (u.t in users[u.item]) { users[u.item][u.t] = users[u.item][u.t] || u.write; } else { users[u.item][u.t] = u.write; }
    }
    on eRelease do (t: int) {
      var x: int;
      foreach (x in keys(users)) { if (t in users[x]) { users[x] -= (t); } }
    }
  }
}

// TerminationProp: the run ends (every batch done).
spec Termination observes eConfig, eAllDone {
  start hot state Running {
    ignore eConfig;
    on eAllDone goto Finished;
  }
  cold state Finished {
    ignore eConfig, eAllDone;
  }
}

// Non-vacuity: each monitor below says a step never happens; test cases that must fail with its
// name (models/models.json) show that the step happens in that workload.

// A clustered transaction commits; a residual commits.
spec ClusterCommitReachable observes eConfig, eTxnEnd {
  var cfg: Config;
  start state Init { on eConfig do (c: Config) { cfg = c; goto Watching; } }
  state Watching {
    on eTxnEnd do (e: (t: int, committed: bool)) {
      assert !(e.committed && cfg.txns[e.t].cluster > 0), format("ClusterCommitReachable: clustered transaction {0} committed", e.t);
    }
  }
}

spec ResidualCommitReachable observes eConfig, eTxnEnd {
  var cfg: Config;
  start state Init { on eConfig do (c: Config) { cfg = c; goto Watching; } }
  state Watching {
    on eTxnEnd do (e: (t: int, committed: bool)) {
      assert !(e.committed && cfg.txns[e.t].cluster == 0), format("ResidualCommitReachable: residual {0} committed", e.t);
    }
  }
}

// A residual attempt aborts on a conflict and is retried.
spec RetryReachable observes eRetried {
  start state Watching {
    on eRetried do (t: int) { assert false, format("RetryReachable: residual {0} retried after a conflict", t); }
  }
}

// The overlap: a batch is analysed while the one before it runs its residuals (the paper's),
// or its clusters (ours).
spec OverlapReachable observes eAnalysed {
  start state Watching {
    on eAnalysed do (a: (b: int, before: BPhase)) {
      assert a.before != RESIDUALS, format("OverlapReachable: batch {0} analysed while batch {1} ran its residuals", a.b, a.b - 1);
    }
  }
}

spec OverlapClustersReachable observes eAnalysed {
  start state Watching {
    on eAnalysed do (a: (b: int, before: BPhase)) {
      assert a.before != CLUSTERS, format("OverlapClustersReachable: batch {0} analysed while batch {1} ran its clusters", a.b, a.b - 1);
    }
  }
}
