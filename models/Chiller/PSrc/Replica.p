// A replica copy: acknowledges an entry on receipt (ReplicaReceive), applies entries in sequence
// order (ReplicaApply), building the state a copy that takes over serves from (its locks, its
// outcomes), and notifies the coordinator of an applied inner region (D6). It keeps every entry
// it received. When its primary is cut off, the manager names a candidate among the survivors,
// which gathers from the others what they hold, hands each what it lacks, and once each holds
// and has applied everything (D9, skipping the numbers nobody holds, D5) decides and takes over
// (GatherPending, DecidePending; the engine's ChillerReplica.OnView .. Decide). A channel from a
// cut-off node is closed: a survivor refuses its messages once it knows (the engine's fencing).
// One allowed to fail may stop right after any step it takes.
machine Replica {
  var cfg: Config;
  var p: int;
  var copy: int;
  var manager: machine;
  var primaries: seq[machine];
  var log: map[int, Entry];       // every entry received
  var held: set[int];             // received and not applied yet
  var applied: int;               // the last number applied
  var lock: map[int, int];
  var ended: map[int, bool];
  var coordOf: map[int, machine];
  var innerApplied: seq[(t: int, coord: machine)];
  var fenced: set[machine];       // cut-off nodes this copy knows of
  var epoch: int;                 // the latest recovery it knows of
  // As a recovery's candidate: the other survivors, those yet to reply and to hold everything.
  var others: map[int, machine];
  var replying: set[int];
  var filling: set[int];
  var has: map[int, (applied: int, holds: set[int])];

  start state Serving {
    entry (a: (cfg: Config, p: int, copy: int, manager: machine, primaries: seq[machine])) {
      cfg = a.cfg; p = a.p; copy = a.copy; manager = a.manager; primaries = a.primaries;
    }
    on eReplicate do (r: (p: int, sq: int, e: Entry, from: machine)) {
      if (r.from in fenced) { return; }
      Post(r.from, eAck, (copy = copy, sq = r.sq));
      if (r.sq <= applied || r.sq in log) { return; }
      log[r.sq] = r.e;
      held += (r.sq);
      if (MayStop()) { goto Crashed; }
      while ((applied + 1) in held) {
        ApplyNext(applied + 1);
        if (MayStop()) { goto Crashed; }
      }
    }
    on eRecover do (r: (epoch: int, others: map[int, machine], fence: set[machine])) {
      var c: int;
      if (r.epoch <= epoch) { return; }
      epoch = r.epoch;
      Fence(r.fence);
      others = r.others;
      replying = default(set[int]);
      foreach (c in keys(others)) { replying += (c); }
      filling = replying;
      has = default(map[int, (applied: int, holds: set[int])]);
      // The twin decides from its own log alone.
      if (cfg.mutants.decideBeforeGather || sizeof(others) == 0) { Decide(); return; }
      foreach (c in keys(others)) {
        Post(others[c], eGatherRequest, (epoch = epoch, candidate = this, fromSeq = applied + 1, fence = r.fence));
      }
      if (MayStop()) { goto Crashed; }
    }
    on eGatherRequest do (g: (epoch: int, candidate: machine, fromSeq: int, fence: set[machine])) {
      var s: int; var entries: map[int, Entry];
      Fence(g.fence);
      if (g.epoch > epoch) { epoch = g.epoch; }
      foreach (s in keys(log)) { if (s >= g.fromSeq) { entries[s] = log[s]; } }
      Post(g.candidate, eGatherReply, (epoch = g.epoch, copy = copy, applied = applied, entries = entries));
      if (MayStop()) { goto Crashed; }
    }
    on eGatherReply do (r: (epoch: int, copy: int, applied: int, entries: map[int, Entry])) {
      var s: int; var holds: set[int];
      if (r.epoch != epoch || !(r.copy in replying)) { return; }
      replying -= (r.copy);
      foreach (s in keys(r.entries)) { holds += (s); }
      has[r.copy] = (applied = r.applied, holds = holds);
      Hold(r.entries);
      if (MayStop()) { goto Crashed; }
      if (sizeof(replying) == 0) { Fill(); }
    }
    on eGatherFill do (f: (epoch: int, entries: map[int, Entry], from: machine)) {
      if (f.from in fenced) { return; }
      Hold(f.entries);
      FlushSkippingGaps();
      Post(f.from, eGatherDone, (epoch = f.epoch, copy = copy));
      if (MayStop()) { goto Crashed; }
    }
    on eGatherDone do (d: (epoch: int, copy: int)) {
      if (d.epoch != epoch || !(d.copy in filling)) { return; }
      filling -= (d.copy);
      if (sizeof(filling) == 0) { Decide(); }
    }
  }

  // Took over: its Primary machine serves the partition.
  state Promoted {
    ignore eReplicate, eRecover, eGatherRequest, eGatherReply, eGatherFill, eGatherDone;
  }

  state Crashed {
    entry {
      announce eCopyCrashed, (p = p, copy = copy);
      send manager, eCrashed, (p = p, copy = copy, who = this);
    }
    ignore eReplicate, eRecover, eGatherRequest, eGatherReply, eGatherFill, eGatherDone;
  }

  fun MayStop(): bool { return (p, copy) in cfg.mayCrash && $; }

  fun Fence(nodes: set[machine]) {
    var n: machine;
    foreach (n in nodes) { fenced += (n); }
  }

  // GatherPending: keeps the entries it lacked.
  fun Hold(entries: map[int, Entry]) {
    var s: int;
    foreach (s in keys(entries)) {
      if (s > applied && !(s in log)) { log[s] = entries[s]; held += (s); }
    }
  }

  // Every survivor has answered: hand each the entries it lacks, then wait for each to hold them.
  fun Fill() {
    var c: int; var s: int; var lacks: map[int, Entry];
    foreach (c in keys(others)) {
      lacks = default(map[int, Entry]);
      foreach (s in keys(log)) { if (s > has[c].applied && !(s in has[c].holds)) { lacks[s] = log[s]; } }
      Post(others[c], eGatherFill, (epoch = epoch, entries = lacks, from = this));
      if (MayStop()) { goto Crashed; }
    }
  }

  // DecidePending: every survivor holds every entry one of them received (D9); the inner
  // regions among them commit, anything else the crashed host ran aborts (the coordinators
  // learn which from ElectPrimary). This copy applies what it holds, then takes over.
  fun Decide() {
    var i: int; var committed: set[int]; var next: machine; var last: int; var s: int;
    FlushSkippingGaps();
    if (MayStop()) { goto Crashed; }
    while (i < sizeof(innerApplied)) { committed += (innerApplied[i].t); i = i + 1; }
    last = applied;
    foreach (s in keys(log)) { if (s > last) { last = s; } }
    next = new Primary();
    send next, eTakeOver, (cfg = cfg, p = p, copy = copy, manager = manager, replicas = others, primaries = primaries,
                           lastSeq = last, lock = lock, ended = ended, coordOf = coordOf, innerCommitted = innerApplied);
    send manager, ePromoted, (p = p, copy = copy, primary = next, committed = committed);
    goto Promoted;
  }

  // Applies every held entry in sequence order, skipping a number nobody holds: its sender, the
  // crashed primary, is cut off, so it can never arrive (D5).
  fun FlushSkippingGaps() {
    var next: int; var s: int;
    while (sizeof(held) > 0) {
      next = applied + 1000;
      foreach (s in held) { if (s < next) { next = s; } }
      while (applied + 1 < next) {
        applied = applied + 1;
        announce eSkipped, (p = p, copy = copy, sq = applied);
      }
      ApplyNext(next);
    }
  }

  // ReplicaApply of entry sq.
  fun ApplyNext(sq: int) {
    var e: Entry; var k: int; var mine: set[int];
    e = log[sq];
    held -= (sq);
    applied = sq;
    announce eApplied, (p = p, copy = copy, sq = sq, t = e.t);
    if (e.kind == KInner) {
      ended[e.t] = true;
      innerApplied += (sizeof(innerApplied), (t = e.t, coord = e.coord));
      Post(e.coord, eNotify, (t = e.t, copy = copy));
    } else if (e.kind == KPrepared) {
      foreach (k in e.ks) { lock[k] = e.t; }
      coordOf[e.t] = e.coord;
    } else {
      foreach (k in keys(lock)) { if (lock[k] == e.t) { mine += (k); } }
      foreach (k in mine) { lock -= (k); }
      ended[e.t] = e.kind == KCommit;
    }
  }
}

// The cluster manager: removes a crashed replica from its partition's configuration
// (RecoverReplica); cuts a crashed coordinator off (CloseChannels); for a crashed primary, cuts
// it off and names the first survivor the candidate of the partition's recovery, naming another
// (a later epoch) if a survivor stops before it is done; then makes the candidate that took over
// the primary (ElectPrimary) and tells every primary and coordinator.
machine Manager {
  var cfg: Config;
  var config: map[int, set[int]];         // each partition's live copies, its primary among them
  var primaryCopy: map[int, int];
  var primaries: seq[machine];
  var coordinators: seq[machine];
  var replicaMachines: map[int, map[int, machine]];
  var recovering: map[int, bool];
  var oldPrimary: map[int, machine];      // the crashed primary a recovery replaces
  var fence: map[int, set[machine]];      // each partition's crashed copies
  var epoch: int;
  var lostCoords: set[int];

  start state Init {
    defer eCrashed, eCoordCrashed, ePromoted;
    on eWatchers goto Serving with (a: (cfg: Config, coordinators: seq[machine], primaries: seq[machine], replicas: map[int, map[int, machine]])) {
      var p: int; var c: int;
      cfg = a.cfg; coordinators = a.coordinators; primaries = a.primaries; replicaMachines = a.replicas;
      while (p < cfg.parts) {
        config[p] = default(set[int]);
        c = 0;
        while (c < cfg.copies) { config[p] += (c); c = c + 1; }
        primaryCopy[p] = 0;
        recovering[p] = false;
        fence[p] = default(set[machine]);
        p = p + 1;
      }
    }
  }

  state Serving {
    on eCrashed do (x: (p: int, copy: int, who: machine)) {
      var i: int;
      config[x.p] -= (x.copy);
      fence[x.p] += (x.who);
      if (x.copy == primaryCopy[x.p] && !recovering[x.p]) {
        recovering[x.p] = true;
        oldPrimary[x.p] = x.who;
        Recover(x.p);
        return;
      }
      if (recovering[x.p]) { Recover(x.p); return; }
      while (i < sizeof(primaries)) { send primaries[i], eView, (p = x.p, copies = config[x.p]); i = i + 1; }
      i = 0;
      while (i < sizeof(coordinators)) { send coordinators[i], eView, (p = x.p, copies = config[x.p]); i = i + 1; }
    }
    on eCoordCrashed do (t: int) {
      var i: int;
      lostCoords += (t);
      while (i < sizeof(primaries)) { send primaries[i], eCoordLost, t; i = i + 1; }
    }
    // A candidate took over; one of an abandoned epoch still counts if it is alive and no other
    // has (the survivors it gathered from hold what it holds).
    on ePromoted do (x: (p: int, copy: int, primary: machine, committed: set[int])) {
      var i: int; var t: int;
      if (!recovering[x.p] || !(x.copy in config[x.p])) { return; }
      recovering[x.p] = false;
      primaryCopy[x.p] = x.copy;
      primaries[x.p] = x.primary;
      announce ePrimaryElected, (p = x.p, copy = x.copy);
      while (i < sizeof(primaries)) {
        send primaries[i], eElected, (p = x.p, old = oldPrimary[x.p], primary = x.primary, copy = x.copy, copies = config[x.p], committed = x.committed);
        i = i + 1;
      }
      i = 0;
      while (i < sizeof(coordinators)) {
        send coordinators[i], eElected, (p = x.p, old = oldPrimary[x.p], primary = x.primary, copy = x.copy, copies = config[x.p], committed = x.committed);
        i = i + 1;
      }
      foreach (t in lostCoords) { send x.primary, eCoordLost, t; }
    }
  }

  // A recovery's (next) epoch: the first live copy gathers from the others.
  fun Recover(p: int) {
    var candidate: int; var c: int; var others: map[int, machine];
    assert sizeof(config[p]) > 0, format("partition {0} lost every copy: the configuration allows too many crashes", p);
    epoch = epoch + 1;
    candidate = cfg.copies;
    foreach (c in config[p]) { if (c < candidate) { candidate = c; } }
    foreach (c in config[p]) { if (c != candidate) { others[c] = replicaMachines[p][c]; } }
    send replicaMachines[p][candidate], eRecover, (epoch = epoch, others = others, fence = fence[p]);
  }
}

event eWatchers: (cfg: Config, coordinators: seq[machine], primaries: seq[machine], replicas: map[int, map[int, machine]]);
