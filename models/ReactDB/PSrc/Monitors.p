// ReactDB.tla's properties as P monitors.

// SerializableInv, for the two roots of these workloads: the committed roots' direct
// serialization graph has no cycle. A root must come before another when the other read its
// value (wr), when it read a key at a value the other's write replaced (rw), or when it
// installed a key before the other did (ww).
spec Serializable observes eDecided, eInstalledKey {
  var committed: map[int, (reads: map[int, int], writes: set[int])];
  var installers: map[int, seq[int]];

  start state Watching {
    on eInstalledKey do (e: (root: int, key: int)) {
      if (!(e.key in installers)) { installers[e.key] = default(seq[int]); }
      installers[e.key] += (sizeof(installers[e.key]), e.root);
    }
    on eDecided do (d: (root: int, committed: bool, reads: map[int, int], writes: set[int])) {
      var a: int;
      if (!d.committed) { return; }
      committed[d.root] = (reads = d.reads, writes = d.writes);
      foreach (a in keys(committed)) {
        assert a == d.root || !(Before(a, d.root) && Before(d.root, a)),
          format("SerializableInv: committed roots {0} and {1} each must come before the other", a, d.root);
      }
    }
  }

  fun Before(a: int, b: int): bool {
    var k: int; var i: int; var seen: int;
    foreach (k in keys(committed[b].reads)) { if (committed[b].reads[k] == a) { return true; } }
    foreach (k in keys(committed[a].reads)) { if (k in committed[b].writes && committed[a].reads[k] != b) { return true; } }
    foreach (k in keys(installers)) {
      seen = 0; i = 0;
      while (i < sizeof(installers[k])) {
        if (installers[k][i] == a && seen == 0) { seen = 1; }
        if (installers[k][i] == b && seen == 1) { return true; }
        i = i + 1;
      }
    }
    return false;
  }
}

// ExactlyOnceInv: no node's logic starts twice.
spec ExactlyOnce observes eStarted {
  var started: set[int];
  start state Watching {
    on eStarted do (n: int) {
      assert !(n in started), format("ExactlyOnceInv: node {0} started twice", n);
      started += (n);
    }
  }
}

// ResultsBeforeCommitInv: when a root starts its commit, every node of its tree that was called
// has completed.
spec ResultsBeforeCommit observes eConfig, eCalled, eCompleted, eCommitting {
  var cfg: Config;
  var called: set[int];
  var completed: set[int];
  start state Init {
    on eConfig do (c: Config) { cfg = c; goto Watching; }
  }
  state Watching {
    on eCalled do (n: int) { called += (n); }
    on eCompleted do (n: int) { completed += (n); }
    on eCommitting do (r: int) {
      var n: int;
      foreach (n in called) {
        assert cfg.nodes[n].root != r || n in completed,
          format("ResultsBeforeCommitInv: root {0} commits while its sub-transaction {1} has not completed", r, n);
      }
    }
  }
}

// TerminationProp: every root commits or aborts.
spec Termination observes eConfig, eDecided {
  var roots: int;
  var decided: int;
  start state Init {
    on eConfig do (c: Config) { roots = sizeof(c.roots); goto Running; }
  }
  hot state Running {
    on eDecided do {
      decided = decided + 1;
      if (decided == roots) { goto Settled; }
    }
  }
  cold state Settled {
    ignore eDecided;
  }
}

// Non-vacuity: a root commits; a root commits with writes in two containers.
spec CommitReachable observes eDecided {
  start state Watching {
    on eDecided do (d: (root: int, committed: bool, reads: map[int, int], writes: set[int])) {
      assert !d.committed, format("CommitReachable: root {0} committed", d.root);
    }
  }
}
