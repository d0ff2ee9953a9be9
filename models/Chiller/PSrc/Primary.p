// A partition's primary: an outer participant (CoordLockOuter's locks, NO_WAIT; OuterCommit or
// OuterRelease) and the inner host (InnerExecute or InnerReject; InnerCommit once every
// configured replica has acknowledged receiving the entry, D10). Every change of its state is an
// entry of the partition's one log, sent to the configured replicas: an outer grant is answered
// only once its entry is held by them (D3), so a copy that takes over holds the same locks.
// A new configuration without a replica (RecoverReplica) ends the wait for its acknowledgements;
// left with none, the host notifies the coordinators of its inner commits itself (D6).
// A coordinator cut off (eCoordLost): each partition holding a share of its transaction asks the
// inner host, which answers from what it knows (RecoverCoordinator, D7): committed, rejected, or
// never received, then aborted here first. The engine's form: ChillerPrimary.AskForOrphans and
// Answer. A primary allowed to fail may stop after any step, or between the sends of one entry.
// A copy that takes over (eTakeOver) starts from the state its log built (ChillerCluster.Promote).
type Start = (cfg: Config, p: int, manager: machine, replicas: map[int, machine], primaries: seq[machine]);
type TakeOver = (cfg: Config, p: int, copy: int, manager: machine, replicas: map[int, machine], primaries: seq[machine],
                 lastSeq: int, lock: map[int, int], ended: map[int, bool], coordOf: map[int, machine],
                 innerCommitted: seq[(t: int, coord: machine)]);
event eStart: Start;
event eTakeOver: TakeOver;

machine Primary {
  var cfg: Config;
  var p: int;
  var myCopy: int;
  var manager: machine;
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
  var afterGrant: map[int, bool];    // a decision that came while the share's grant was being logged

  start state Init {
    defer eLockOuter, eDelegate, eAck, eOuterDecision, eView, eCoordLost, eAskOutcome, eTakeoverDecision, eElected;
    on eStart goto Serving with (a: Start) {
      var c: int;
      cfg = a.cfg; p = a.p; manager = a.manager; replicaMachines = a.replicas; primaries = a.primaries;
      c = 1;
      while (c < cfg.copies) { replicas += (c); c = c + 1; }
    }
    // ElectPrimary's new primary: its locks, outcomes and inner commits are what it applied
    // (RecoveryCommit for those its crashed host had not committed); its shares are open again.
    on eTakeOver goto Serving with (a: TakeOver) {
      var t: int; var k: int; var held: set[int]; var i: int;
      cfg = a.cfg; p = a.p; myCopy = a.copy; manager = a.manager; replicaMachines = a.replicas; primaries = a.primaries;
      lastSeq = a.lastSeq; lock = a.lock; ended = a.ended; coordOf = a.coordOf; innerCommitted = a.innerCommitted;
      foreach (t in keys(a.replicas)) { replicas += (t); }
      while (i < sizeof(innerCommitted)) {
        announce eRecoveryCommit, (t = innerCommitted[i].t, p = p);
        i = i + 1;
      }
      foreach (t in keys(ended)) { announce eOutcome, (t = t, p = p, committed = ended[t]); }
      foreach (k in keys(lock)) { held += (lock[k]); }
      foreach (t in held) { announce eShareOpened, (t = t, p = p); }
    }
  }

  state Serving {
    on eLockOuter do (r: (t: int, coord: machine, ks: set[int])) {
      var k: int; var other: int; var victims: set[int];
      if (r.t in cutOff) { return; } // the closed channel delivers nothing
      // A doubled request (Network.p), as the engine's OnLockOuter takes one: after a denial here
      // it is denied again; while its grant is logged, or once it is answered, the grant stands.
      if (r.t in ended) { if (!ended[r.t]) { Post(r.coord, eLocked, (p = p, ok = false)); } return; }
      if (Granting(r.t)) { return; }
      if (sizeof(KeysHeldBy(r.t)) > 0) { Post(r.coord, eLocked, (p = p, ok = true)); return; }
      foreach (k in r.ks) {
        if (k in lock && lock[k] != r.t) {
          ended[r.t] = false;
          announce eOutcome, (t = r.t, p = p, committed = false);
          Post(r.coord, eLocked, (p = p, ok = false));
          if (cfg.mutants.outerUnilateralAbort) {
            // The twin: every transaction holding a lock here aborts with it, delegated or not.
            foreach (k in keys(lock)) { victims += (lock[k]); }
            foreach (other in victims) {
              ReleaseAll(other);
              ended[other] = false;
              announce eOutcome, (t = other, p = p, committed = false);
            }
          }
          if (MayStop()) { goto Crashed; }
          return;
        }
      }
      foreach (k in r.ks) { lock[k] = r.t; }
      coordOf[r.t] = r.coord;
      announce eShareOpened, (t = r.t, p = p);
      if (Ship((t = r.t, kind = KPrepared, ks = r.ks, writes = default(set[int]), coord = r.coord)) || MayStop()) { goto Crashed; }
    }

    on eDelegate do (d: (t: int, coord: machine, ks: set[int], writes: set[int], mayAbort: bool)) {
      var k: int; var held: bool;
      // Cut off, decided here, or a doubled delegation whose inner region is being replicated.
      if (d.t in cutOff || d.t in ended || (Shipping(d.t) && !cfg.mutants.redoesDoubledDelegation)) { return; }
      announce eShareOpened, (t = d.t, p = p);
      foreach (k in d.ks) { if (k in lock && lock[k] != d.t) { held = true; } }
      if (held || (d.mayAbort && $)) {
        ended[d.t] = false;
        announce eOutcome, (t = d.t, p = p, committed = false);
        Post(d.coord, eInnerAbort, d.t);
        if (MayStop()) { goto Crashed; }
        return;
      }
      foreach (k in d.ks) { lock[k] = d.t; }
      if (Ship((t = d.t, kind = KInner, ks = d.ks, writes = d.writes, coord = d.coord)) || MayStop()) { goto Crashed; }
    }

    on eAck do (a: (copy: int, sq: int)) {
      if (!(a.sq in missing)) { return; }
      missing[a.sq] -= (a.copy);
      if (sizeof(missing[a.sq]) == 0) { Complete(a.sq); }
      if (MayStop()) { goto Crashed; }
    }

    on eOuterDecision do (d: (t: int, commit: bool, writes: set[int], coord: machine)) {
      if (d.t in cutOff) { return; }
      // Its grant still being logged (the coordinator aborted while waiting for the answer):
      // the decision applies once it is; an end being logged answers when it is.
      if (Shipping(d.t)) { if (Granting(d.t)) { afterGrant[d.t] = d.commit; } return; }
      if (d.t in ended) { Post(d.coord, eOuterDone, p); return; }
      if (OuterEnd(d.t, d.commit, d.writes, d.coord) || MayStop()) { goto Crashed; }
    }

    // CloseChannels for t's coordinator: ask the inner host about a share held here, and, as
    // that host, answer whoever asked before this node knew.
    on eCoordLost do (t: int) {
      var asker: int; var waiting: set[int];
      cutOff += (t);
      AskIfOrphan(t);
      if (t in asked) { waiting = asked[t]; foreach (asker in waiting) { Answer(t, asker); } }
      if (MayStop()) { goto Crashed; }
    }

    on eAskOutcome do (a: (t: int, asker: int)) {
      if (!(a.t in asked)) { asked[a.t] = default(set[int]); }
      asked[a.t] += (a.asker);
      Answer(a.t, a.asker);
      if (MayStop()) { goto Crashed; }
    }

    on eTakeoverDecision do (d: (t: int, commit: bool)) {
      if (d.t in ended || Shipping(d.t)) { return; }
      if (OuterEnd(d.t, d.commit, WritesOn(d.t), coordOf[d.t]) || MayStop()) { goto Crashed; }
    }

    on eView do (v: (p: int, copies: set[int])) {
      if (v.p != p) { return; }
      Reconfigure(v.copies);
      if (MayStop()) { goto Crashed; }
    }

    // ElectPrimary of a partition: its primary from now on. This node, if elected, serves the
    // configuration; an outer share here whose coordinator is cut off asks the new inner host.
    on eElected do (v: (p: int, old: machine, primary: machine, copy: int, copies: set[int], committed: set[int])) {
      var t: int;
      primaries[v.p] = v.primary;
      if (v.primary == this) { Reconfigure(v.copies); return; }
      foreach (t in cutOff) { if (cfg.txns[t].inner == v.p) { AskIfOrphan(t); } }
    }
  }

  // Crash-stop: it handles nothing more; what only it held (locks not yet logged, entries no
  // replica received) is gone, and the manager starts the partition's recovery.
  state Crashed {
    entry {
      announce eCopyCrashed, (p = p, copy = myCopy);
      announce eSharesLost, p;
      send manager, eCrashed, (p = p, copy = myCopy, who = this);
    }
    ignore eLockOuter, eDelegate, eAck, eOuterDecision, eView, eCoordLost, eAskOutcome, eTakeoverDecision, eElected;
  }

  fun MayStop(): bool { return (p, myCopy) in cfg.mayCrash && $; }

  // The configured replicas are now those of copies but this one: an entry no longer waits for
  // a dropped copy (the twin keeps waiting); left with none, notify the coordinators (D6).
  fun Reconfigure(copies: set[int]) {
    var s: int; var c: int; var done: seq[int]; var i: int; var hadReplicas: bool;
    hadReplicas = sizeof(replicas) > 0;
    if (!cfg.mutants.waitForCutOffReplica) { replicas = copies; replicas -= (myCopy); }
    foreach (s in keys(missing)) {
      foreach (c in missing[s]) { if (!(c in replicas)) { missing[s] -= (c); } }
      if (sizeof(missing[s]) == 0) { done += (sizeof(done), s); }
    }
    while (i < sizeof(done)) { Complete(done[i]); i = i + 1; }
    if (hadReplicas && sizeof(replicas) == 0) {
      i = 0;
      while (i < sizeof(innerCommitted)) { Post(innerCommitted[i].coord, eNotify, (t = innerCommitted[i].t, copy = myCopy)); i = i + 1; }
    }
  }

  // OuterCommit (through the log) or OuterRelease of t's share here; true if it stopped.
  fun OuterEnd(t: int, commit: bool, writes: set[int], coord: machine): bool {
    var held: set[int];
    held = KeysHeldBy(t);
    if (!commit && (sizeof(held) == 0 || sizeof(replicas) == 0)) {
      ReleaseAll(t);
      ended[t] = false;
      announce eOutcome, (t = t, p = p, committed = false);
      Post(coord, eOuterDone, p);
      return false;
    }
    if (commit) { return Ship((t = t, kind = KCommit, ks = held, writes = writes, coord = coord)); }
    return Ship((t = t, kind = KRelease, ks = held, writes = default(set[int]), coord = coord));
  }

  // A share of t held here, not ended and not committing, whose coordinator is cut off: ask t's
  // inner host (the twin decides alone: it aborts).
  fun AskIfOrphan(t: int) {
    if (t in ended || Shipping(t) || sizeof(KeysHeldBy(t)) == 0 || cfg.txns[t].inner == p) { return; }
    if (cfg.mutants.participantTakesOver) { OuterEnd(t, false, default(set[int]), coordOf[t]); return; }
    Post(primaries[cfg.txns[t].inner], eAskOutcome, (t = t, asker = p));
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
    Post(primaries[asker], eTakeoverDecision, (t = t, commit = ended[t]));
  }

  fun Shipping(t: int): bool {
    var s: int;
    foreach (s in keys(entries)) { if (entries[s].t == t) { return true; } }
    return false;
  }

  fun Granting(t: int): bool {
    var s: int;
    foreach (s in keys(entries)) { if (entries[s].t == t && entries[s].kind == KPrepared) { return true; } }
    return false;
  }

  fun WritesOn(t: int): set[int] {
    var k: int; var s: set[int];
    foreach (k in cfg.txns[t].writes) { if (cfg.partOf[k] == p) { s += (k); } }
    return s;
  }

  // The next log entry: to every configured replica, or completed at once with none. True if
  // this primary stopped between two of the sends, so that some replicas have the entry and
  // others do not. The twin HostCommitsOnSend commits an inner region as it starts sending, and
  // may stop before the first send (a message sent is delivered unless its receiver fenced the
  // sender first, so "dies before any replica has the message" is a stop before sending it).
  fun Ship(e: Entry): bool {
    var c: int; var shipped: int; var early: bool;
    lastSeq = lastSeq + 1;
    announce eLogged, (p = p, sq = lastSeq, t = e.t);
    entries[lastSeq] = e;
    missing[lastSeq] = replicas;
    early = cfg.mutants.hostCommitsOnSend && e.kind == KInner;
    if (early) { Complete(lastSeq); }
    foreach (c in replicas) {
      if ((shipped > 0 || early) && MayStop()) { return true; }
      Post(replicaMachines[c], eReplicate, (p = p, sq = lastSeq, e = e, from = this));
      shipped = shipped + 1;
    }
    if (sizeof(replicas) == 0) { Complete(lastSeq); }
    return false;
  }

  // An entry every configured replica holds: an outer grant is answered; an inner commit
  // (InnerCommit) or an outer end installs, releases, and tells whoever waits.
  fun Complete(s: int) {
    var e: Entry; var c: int; var waiting: set[int];
    if (!(s in entries)) { return; }
    e = entries[s];
    entries -= (s);
    missing -= (s);
    if (e.kind == KPrepared) {
      Post(e.coord, eLocked, (p = p, ok = true));
      if (e.t in afterGrant) { OuterEnd(e.t, afterGrant[e.t], WritesOn(e.t), e.coord); return; }
      if (e.t in cutOff) { AskIfOrphan(e.t); }
      return;
    }
    ReleaseAll(e.t);
    ended[e.t] = e.kind != KRelease;
    announce eOutcome, (t = e.t, p = p, committed = ended[e.t]);
    if (e.kind == KInner) {
      innerCommitted += (sizeof(innerCommitted), (t = e.t, coord = e.coord));
      if (sizeof(replicas) == 0) { Post(e.coord, eNotify, (t = e.t, copy = myCopy)); }
      if (e.t in asked) { waiting = asked[e.t]; foreach (c in waiting) { Answer(e.t, c); } }
    } else {
      Post(e.coord, eOuterDone, p);
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
