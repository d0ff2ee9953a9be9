// A partition's primary: an outer participant (CoordLockOuter's locks, NO_WAIT; OuterCommit or
// OuterRelease) and the inner host (InnerExecute or InnerReject; InnerCommit once every
// configured replica has acknowledged receiving the entry, D10). Every change it commits is an
// entry of the partition's one log, sent to the configured replicas (the outer writes too: D3).
// A new configuration without a replica (RecoverReplica) ends the wait for its acknowledgements;
// left with none, the host notifies the coordinators of its inner commits itself (D6).
type Entry = (t: int, ks: set[int], writes: set[int], inner: bool, coord: machine);

machine Primary {
  var cfg: Config;
  var p: int;
  var replicaMachines: map[int, machine];
  var replicas: set[int];
  var lock: map[int, int];           // key -> the transaction holding it
  var ended: map[int, bool];         // transactions whose share ended here: committed?
  var lastSeq: int;
  var entries: map[int, Entry];      // entries waiting for acknowledgements, by seq
  var missing: map[int, set[int]];   // and the copies that have not acknowledged each
  var innerCommitted: seq[(t: int, coord: machine)];

  start state Init {
    defer eLockOuter, eDelegate, eAck, eOuterDecision, eView;
    on eReplicaMachines goto Serving with (a: (cfg: Config, p: int, replicas: map[int, machine])) {
      var c: int;
      cfg = a.cfg; p = a.p; replicaMachines = a.replicas;
      c = 1;
      while (c < cfg.copies) { replicas += (c); c = c + 1; }
    }
  }

  state Serving {
    on eLockOuter do (r: (t: int, coord: machine, ks: set[int])) {
      var k: int; var other: int; var victims: set[int];
      if (r.t in ended) { send r.coord, eLocked, (p = p, ok = false); return; }
      foreach (k in r.ks) {
        if (k in lock && lock[k] != r.t) {
          ended[r.t] = false;
          announce eOutcome, (t = r.t, p = p, committed = false);
          send r.coord, eLocked, (p = p, ok = false);
          if (cfg.mutants.outerUnilateralAbort) {
            // The twin: every transaction holding a lock here aborts with it, delegated or not.
            foreach (k in keys(lock)) { victims += (lock[k]); }
            foreach (other in victims) {
              ReleaseAll(other);
              ended[other] = false;
              announce eOutcome, (t = other, p = p, committed = false);
            }
          }
          return;
        }
      }
      foreach (k in r.ks) { lock[k] = r.t; }
      send r.coord, eLocked, (p = p, ok = true);
    }

    on eDelegate do (d: (t: int, coord: machine, ks: set[int], writes: set[int], mayAbort: bool)) {
      var k: int; var held: bool;
      foreach (k in d.ks) { if (k in lock && lock[k] != d.t) { held = true; } }
      if (held || (d.mayAbort && $)) {
        ended[d.t] = false;
        announce eOutcome, (t = d.t, p = p, committed = false);
        send d.coord, eInnerAbort, d.t;
        return;
      }
      foreach (k in d.ks) { lock[k] = d.t; }
      Ship((t = d.t, ks = d.ks, writes = d.writes, inner = true, coord = d.coord));
    }

    on eAck do (a: (copy: int, sq: int)) {
      if (!(a.sq in missing)) { return; }
      missing[a.sq] -= (a.copy);
      if (sizeof(missing[a.sq]) == 0) { Complete(a.sq); }
    }

    on eOuterDecision do (d: (t: int, commit: bool, writes: set[int], coord: machine)) {
      if (d.t in ended) { send d.coord, eOuterDone, p; return; }
      if (!d.commit) {
        ReleaseAll(d.t);
        ended[d.t] = false;
        announce eOutcome, (t = d.t, p = p, committed = false);
        send d.coord, eOuterDone, p;
        return;
      }
      Ship((t = d.t, ks = KeysHeldBy(d.t), writes = d.writes, inner = false, coord = d.coord));
    }

    on eView do (v: (p: int, replicas: set[int])) {
      var s: int; var c: int; var done: seq[int]; var i: int; var hadReplicas: bool;
      if (v.p != p) { return; }
      hadReplicas = sizeof(replicas) > 0;
      // The twin keeps waiting for the copies the configuration dropped.
      if (!cfg.mutants.waitForCutOffReplica) { replicas = v.replicas; }
      foreach (s in keys(missing)) {
        foreach (c in missing[s]) { if (!(c in replicas)) { missing[s] -= (c); } }
        if (sizeof(missing[s]) == 0) { done += (sizeof(done), s); }
      }
      while (i < sizeof(done)) { Complete(done[i]); i = i + 1; }
      if (hadReplicas && sizeof(replicas) == 0) {
        i = 0;
        while (i < sizeof(innerCommitted)) { send innerCommitted[i].coord, eNotify, (t = innerCommitted[i].t, copy = 0); i = i + 1; }
      }
    }
  }

  // The next log entry: to every configured replica, or committed at once with none.
  fun Ship(e: Entry) {
    var c: int;
    lastSeq = lastSeq + 1;
    announce eLogged, (p = p, sq = lastSeq, t = e.t);
    entries[lastSeq] = e;
    missing[lastSeq] = replicas;
    foreach (c in replicas) {
      send replicaMachines[c], eReplicate, (p = p, sq = lastSeq, t = e.t, writes = e.writes, inner = e.inner, coord = e.coord, from = this);
    }
    if (sizeof(replicas) == 0) { Complete(lastSeq); }
  }

  // InnerCommit, or an outer commit's end: install, release, tell whoever waits.
  fun Complete(s: int) {
    var e: Entry;
    e = entries[s];
    entries -= (s);
    missing -= (s);
    ReleaseAll(e.t);
    ended[e.t] = true;
    announce eOutcome, (t = e.t, p = p, committed = true);
    if (e.inner) {
      innerCommitted += (sizeof(innerCommitted), (t = e.t, coord = e.coord));
      if (sizeof(replicas) == 0) { send e.coord, eNotify, (t = e.t, copy = 0); }
    } else {
      send e.coord, eOuterDone, p;
    }
  }

  fun ReleaseAll(t: int) {
    var k: int; var mine: set[int];
    foreach (k in keys(lock)) { if (lock[k] == t) { mine += (k); } }
    foreach (k in mine) { lock -= (k); }
  }

  fun KeysHeldBy(t: int): set[int] {
    var k: int; var mine: set[int];
    foreach (k in keys(lock)) { if (lock[k] == t) { mine += (k); } }
    return mine;
  }
}

event eReplicaMachines: (cfg: Config, p: int, replicas: map[int, machine]);
