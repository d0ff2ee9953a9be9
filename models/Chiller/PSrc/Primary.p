// A partition's primary: an outer participant (CoordLockOuter's locks, NO_WAIT; OuterCommit or
// OuterRelease) and the inner host (InnerExecute or InnerReject; InnerCommit once every
// configured replica has acknowledged receiving the entry, D10). Every change it commits is an
// entry of the partition's one log, sent to the configured replicas (the outer writes too: D3).
// A new configuration without a replica (RecoverReplica) ends the wait for its acknowledgements;
// left with none, the host notifies the coordinators of its inner commits itself (D6).
// A coordinator cut off (eCoordLost): its channels are closed, so nothing more of its transaction
// is taken from it; each partition holding a share of the transaction asks the inner host, which
// answers from what it knows (RecoverCoordinator, D7): committed, rejected, or never received,
// then aborted here first. The engine's form: ChillerPrimary.AskForOrphans and Answer.
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
  var primaries: seq[machine];
  var cutOff: set[int];              // transactions whose coordinator is cut off
  var asked: map[int, set[int]];     // as inner host: partitions waiting for an answer about t
  var coordOf: map[int, machine];    // each share's coordinator, whose eOuterDone an outer commit sends

  start state Init {
    defer eLockOuter, eDelegate, eAck, eOuterDecision, eView, eCoordLost, eAskOutcome, eTakeoverDecision;
    on eReplicaMachines goto Serving with (a: (cfg: Config, p: int, replicas: map[int, machine], primaries: seq[machine])) {
      var c: int;
      cfg = a.cfg; p = a.p; replicaMachines = a.replicas; primaries = a.primaries;
      c = 1;
      while (c < cfg.copies) { replicas += (c); c = c + 1; }
    }
  }

  state Serving {
    on eLockOuter do (r: (t: int, coord: machine, ks: set[int])) {
      var k: int; var other: int; var victims: set[int];
      if (r.t in cutOff) { return; } // the closed channel delivers nothing
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
      coordOf[r.t] = r.coord;
      announce eShareOpened, (t = r.t, p = p);
      send r.coord, eLocked, (p = p, ok = true);
    }

    on eDelegate do (d: (t: int, coord: machine, ks: set[int], writes: set[int], mayAbort: bool)) {
      var k: int; var held: bool;
      if (d.t in cutOff || d.t in ended) { return; }
      announce eShareOpened, (t = d.t, p = p);
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
      if (d.t in cutOff) { return; }
      if (d.t in ended) { send d.coord, eOuterDone, p; return; }
      OuterEnd(d.t, d.commit, d.writes, d.coord);
    }

    // CloseChannels for t's coordinator: ask the inner host about a share held here, and, as
    // that host, answer whoever asked before this node knew.
    on eCoordLost do (t: int) {
      var asker: int; var waiting: set[int];
      cutOff += (t);
      AskIfOrphan(t);
      if (t in asked) { waiting = asked[t]; foreach (asker in waiting) { Answer(t, asker); } }
    }

    on eAskOutcome do (a: (t: int, asker: int)) {
      if (!(a.t in asked)) { asked[a.t] = default(set[int]); }
      asked[a.t] += (a.asker);
      Answer(a.t, a.asker);
    }

    on eTakeoverDecision do (d: (t: int, commit: bool)) {
      if (d.t in ended || Shipping(d.t)) { return; }
      OuterEnd(d.t, d.commit, WritesOn(d.t), coordOf[d.t]);
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

  // OuterCommit (through the log) or OuterRelease of t's share here.
  fun OuterEnd(t: int, commit: bool, writes: set[int], coord: machine) {
    if (!commit) {
      ReleaseAll(t);
      ended[t] = false;
      announce eOutcome, (t = t, p = p, committed = false);
      send coord, eOuterDone, p;
      return;
    }
    Ship((t = t, ks = KeysHeldBy(t), writes = writes, inner = false, coord = coord));
  }

  // A share of t held here, not ended and not committing, whose coordinator is cut off: ask t's
  // inner host (the twin decides alone: it aborts).
  fun AskIfOrphan(t: int) {
    if (t in ended || Shipping(t) || sizeof(KeysHeldBy(t)) == 0 || cfg.txns[t].inner == p) { return; }
    if (cfg.mutants.participantTakesOver) { OuterEnd(t, false, default(set[int]), coordOf[t]); return; }
    send primaries[cfg.txns[t].inner], eAskOutcome, (t = t, asker = p);
  }

  // RecoverCoordinator, as t's inner host: committed or rejected here, the answer is known;
  // replicating, it waits for the commit; never received, t aborts here first, once this node
  // knows the coordinator is cut off (its delegation can then no longer come).
  fun Answer(t: int, asker: int) {
    if (Shipping(t)) { return; }
    if (!(t in ended)) {
      if (!(t in cutOff)) { return; }
      ended[t] = false;
      announce eOutcome, (t = t, p = p, committed = false);
    }
    announce eTakenOver, (t = t, p = p, commit = ended[t]);
    asked[t] -= (asker);
    send primaries[asker], eTakeoverDecision, (t = t, commit = ended[t]);
  }

  fun Shipping(t: int): bool {
    var s: int;
    foreach (s in keys(entries)) { if (entries[s].t == t) { return true; } }
    return false;
  }

  fun WritesOn(t: int): set[int] {
    var k: int; var s: set[int];
    foreach (k in cfg.txns[t].writes) { if (cfg.partOf[k] == p) { s += (k); } }
    return s;
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
    var e: Entry; var c: int; var waiting: set[int];
    e = entries[s];
    entries -= (s);
    missing -= (s);
    ReleaseAll(e.t);
    ended[e.t] = true;
    announce eOutcome, (t = e.t, p = p, committed = true);
    if (e.inner) {
      innerCommitted += (sizeof(innerCommitted), (t = e.t, coord = e.coord));
      if (sizeof(replicas) == 0) { send e.coord, eNotify, (t = e.t, copy = 0); }
      if (e.t in asked) { waiting = asked[e.t]; foreach (c in waiting) { Answer(e.t, c); } }
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

event eReplicaMachines: (cfg: Config, p: int, replicas: map[int, machine], primaries: seq[machine]);
