// A transaction's coordinator: step 3 locks its outer partitions one by one (NO_WAIT), step 4
// delegates the inner region and waits for every configured replica of the inner partition to
// notify (D6: the host itself when none is left), or for the host's rejection; step 5 sends the
// outcome to every outer partition it locked and waits for each to apply it. One allowed to fail
// may stop right after any step it takes; the partitions then learn its outcome from the inner
// host (Primary's RecoverCoordinator).
machine Coordinator {
  var cfg: Config;
  var t: int;
  var txn: TxnSpec;
  var primaries: seq[machine];
  var outer: seq[int];
  var pos: int;
  var locked: set[int];
  var replicas: set[int];
  var notified: set[int];
  var waiting: set[int];
  var commit: bool;
  var manager: machine;

  start state Init {
    entry (a: (cfg: Config, t: int, primaries: seq[machine], manager: machine)) {
      var p: int; var c: int;
      cfg = a.cfg; t = a.t; primaries = a.primaries; txn = cfg.txns[t]; manager = a.manager;
      while (p < cfg.parts) {
        if (p != txn.inner && sizeof(KeysOn(p)) > 0) { outer += (sizeof(outer), p); }
        p = p + 1;
      }
      c = 1;
      while (c < cfg.copies) { replicas += (c); c = c + 1; }
      goto Locking;
    }
  }

  state Locking {
    entry {
      if (pos == sizeof(outer)) { goto Delegated; }
      send primaries[outer[pos]], eLockOuter, (t = t, coord = this, ks = KeysOn(outer[pos]));
      if (MayStop()) { goto Crashed; }
    }
    on eLocked do (r: (p: int, ok: bool)) {
      if (r.ok) {
        locked += (r.p);
        pos = pos + 1;
        goto Locking;
      }
      commit = false;
      goto Finishing;
    }
    on eView do OnView;
  }

  state Delegated {
    entry {
      send primaries[txn.inner], eDelegate, (t = t, coord = this, ks = KeysOn(txn.inner), writes = WritesOn(txn.inner), mayAbort = txn.mayAbort);
      if (MayStop()) { goto Crashed; }
    }
    on eNotify do (n: (t: int, copy: int)) { notified += (n.copy); TryLearnCommit(); }
    on eInnerAbort do { commit = false; goto Finishing; }
    on eView do (v: (p: int, replicas: set[int])) { OnView(v); TryLearnCommit(); }
  }

  state Finishing {
    entry {
      var p: int;
      announce eCoordDecided, (t = t, commit = commit);
      if (MayStop()) { goto Crashed; }
      waiting = locked;
      foreach (p in locked) {
        send primaries[p], eOuterDecision, (t = t, commit = commit, writes = WritesOn(p), coord = this);
        if (MayStop()) { goto Crashed; }
      }
      if (sizeof(waiting) == 0) { goto Done; }
    }
    on eOuterDone do (p: int) {
      waiting -= (p);
      if (sizeof(waiting) == 0) { goto Done; }
    }
    on eView do OnView;
    ignore eNotify, eInnerAbort;
  }

  state Done {
    entry { announce eTxnEnded, t; }
    ignore eNotify, eInnerAbort, eView, eOuterDone;
  }

  // Crash-stop: it handles nothing more; the manager cuts it off.
  state Crashed {
    entry {
      announce eCoordStopped, t;
      send manager, eCoordCrashed, t;
    }
    ignore eLocked, eNotify, eInnerAbort, eView, eOuterDone;
  }

  fun MayStop(): bool { return t in cfg.coordMayCrash && $; }

  fun OnView(v: (p: int, replicas: set[int])) {
    if (v.p == txn.inner) { replicas = v.replicas; }
  }

  // D6: every configured replica of the inner partition has notified (the host, copy 0, when
  // none is configured), and at least one copy has.
  fun TryLearnCommit() {
    var c: int;
    if (sizeof(notified) == 0) { return; }
    if (sizeof(replicas) == 0) {
      if (!(0 in notified)) { return; }
    } else {
      foreach (c in replicas) { if (!(c in notified)) { return; } }
    }
    commit = true;
    goto Finishing;
  }

  fun KeysOn(p: int): set[int] {
    var k: int; var s: set[int];
    foreach (k in txn.ks) { if (cfg.partOf[k] == p) { s += (k); } }
    return s;
  }

  fun WritesOn(p: int): set[int] {
    var k: int; var s: set[int];
    foreach (k in txn.writes) { if (cfg.partOf[k] == p) { s += (k); } }
    return s;
  }
}
