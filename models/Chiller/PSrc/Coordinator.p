// A transaction's coordinator: step 3 locks its outer partitions one by one (NO_WAIT), step 4
// delegates the inner region and waits for every other copy of the inner partition's
// configuration to notify (D6: the host itself when it is the only one), or for the host's
// rejection; step 5 sends the outcome to every outer partition it locked and waits for each to
// apply it. A partition's new primary (eElected) changes what it waits for: a lock granted or
// asked for at the crashed primary fails the transaction (CoordLearnParticipantFailed); a
// delegation to it commits only if recovery holds its inner region (the engine's Elected
// message), else aborts; an outcome goes again to the new primary. One allowed to fail may stop
// right after any step it takes; the partitions then learn its outcome from the inner host
// (Primary's RecoverCoordinator).
machine Coordinator {
  var cfg: Config;
  var t: int;
  var txn: TxnSpec;
  var primaries: seq[machine];
  var outer: seq[int];
  var pos: int;
  var locked: set[int];
  var sentTo: map[int, machine];    // the primary each outer lock request went to
  var pending: int;                 // the partition whose lock answer it waits for (-1: none)
  var innerCopies: set[int];        // the inner partition's configuration, its primary among them
  var primaryCopy: map[int, int];   // each partition's primary copy
  var hostCopy: int;                // the copy the inner region was delegated to
  var delegatedTo: machine;
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
        primaryCopy[p] = 0;
        p = p + 1;
      }
      while (c < cfg.copies) { innerCopies += (c); c = c + 1; }
      pending = -1;
      goto Locking;
    }
  }

  state Locking {
    entry {
      if (pos == sizeof(outer)) { goto Delegated; }
      sentTo[outer[pos]] = primaries[outer[pos]];
      pending = outer[pos];
      Post(primaries[outer[pos]], eLockOuter, (t = t, coord = this, ks = KeysOn(outer[pos])));
      if (MayStop()) { goto Crashed; }
    }
    on eLocked do (r: (p: int, ok: bool)) {
      if (r.p != pending) { return; } // a doubled answer of a partition locked before (Network.p)
      pending = -1;
      if (r.ok) {
        locked += (r.p);
        pos = pos + 1;
        goto Locking;
      }
      commit = false;
      goto Finishing;
    }
    on eView do OnView;
    on eElected do (v: (p: int, old: machine, primary: machine, copy: int, copies: set[int], committed: set[int])) {
      Learn(v);
      if (v.p in sentTo && sentTo[v.p] == v.old) { commit = false; goto Finishing; }
    }
  }

  state Delegated {
    entry {
      hostCopy = primaryCopy[txn.inner];
      delegatedTo = primaries[txn.inner];
      Post(primaries[txn.inner], eDelegate, (t = t, coord = this, ks = KeysOn(txn.inner), writes = WritesOn(txn.inner), mayAbort = txn.mayAbort));
      if (MayStop()) { goto Crashed; }
    }
    on eNotify do (n: (t: int, copy: int)) { notified += (n.copy); TryLearnCommit(); }
    on eInnerAbort do { commit = false; goto Finishing; }
    on eView do (v: (p: int, copies: set[int])) { OnView(v); TryLearnCommit(); }
    ignore eLocked; // a doubled grant
    on eElected do (v: (p: int, old: machine, primary: machine, copy: int, copies: set[int], committed: set[int])) {
      Learn(v);
      if (v.p != txn.inner) { return; }
      if (delegatedTo == v.old && !(t in v.committed)) { commit = false; goto Finishing; }
      TryLearnCommit();
    }
  }

  state Finishing {
    entry {
      var p: int;
      announce eCoordDecided, (t = t, commit = commit);
      if (MayStop()) { goto Crashed; }
      // Every partition locked, and one asked that has not answered (its lock may be held there,
      // or by the new primary that took its place).
      waiting = locked;
      if (pending >= 0) { waiting += (pending); }
      foreach (p in waiting) {
        Post(primaries[p], eOuterDecision, (t = t, commit = commit, writes = WritesOn(p), coord = this));
        if (MayStop()) { goto Crashed; }
      }
      if (sizeof(waiting) == 0) { goto Done; }
    }
    on eOuterDone do (p: int) {
      waiting -= (p);
      if (sizeof(waiting) == 0) { goto Done; }
    }
    on eView do OnView;
    on eElected do (v: (p: int, old: machine, primary: machine, copy: int, copies: set[int], committed: set[int])) {
      Learn(v);
      if (v.p in waiting) { Post(primaries[v.p], eOuterDecision, (t = t, commit = commit, writes = WritesOn(v.p), coord = this)); }
    }
    ignore eNotify, eInnerAbort, eLocked;
  }

  state Done {
    entry { announce eTxnEnded, t; }
    ignore eNotify, eInnerAbort, eView, eOuterDone, eElected, eLocked;
  }

  // Crash-stop: it handles nothing more; the manager cuts it off.
  state Crashed {
    entry {
      announce eCoordStopped, t;
      send manager, eCoordCrashed, t;
    }
    ignore eLocked, eNotify, eInnerAbort, eView, eOuterDone, eElected;
  }

  fun MayStop(): bool { return t in cfg.coordMayCrash && $; }

  fun OnView(v: (p: int, copies: set[int])) {
    if (v.p == txn.inner) { innerCopies = v.copies; }
  }

  fun Learn(v: (p: int, old: machine, primary: machine, copy: int, copies: set[int], committed: set[int])) {
    primaries[v.p] = v.primary;
    primaryCopy[v.p] = v.copy;
    if (v.p == txn.inner) { innerCopies = v.copies; }
  }

  // D6: every copy of the inner partition's configuration but the host has notified (the host
  // itself when it is the only one), and at least one copy has.
  fun TryLearnCommit() {
    var c: int;
    if (sizeof(notified) == 0) { return; }
    foreach (c in innerCopies) { if (c != hostCopy && !(c in notified)) { return; } }
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
