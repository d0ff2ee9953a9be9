// A replica copy: acknowledges an entry on receipt (ReplicaReceive), applies entries in sequence
// order (ReplicaApply) and notifies the coordinator of an applied inner region (D6). One allowed
// to fail may stop right after any step it takes; the cluster manager then removes it from its
// partition's configuration (RecoverReplica) and tells the primary and the coordinators.
machine Replica {
  var cfg: Config;
  var p: int;
  var copy: int;
  var manager: machine;
  var held: map[int, (t: int, inner: bool, coord: machine)];
  var applied: int;

  start state Serving {
    entry (a: (cfg: Config, p: int, copy: int, manager: machine)) {
      cfg = a.cfg; p = a.p; copy = a.copy; manager = a.manager;
    }
    on eReplicate do (r: (p: int, sq: int, t: int, writes: set[int], inner: bool, coord: machine, from: machine)) {
      var next: (t: int, inner: bool, coord: machine);
      send r.from, eAck, (copy = copy, sq = r.sq);
      if (r.sq <= applied || r.sq in held) { return; }
      held[r.sq] = (t = r.t, inner = r.inner, coord = r.coord);
      if (MayStop()) { goto Crashed; }
      while ((applied + 1) in held) {
        applied = applied + 1;
        next = held[applied];
        held -= (applied);
        announce eApplied, (p = p, copy = copy, sq = applied, t = next.t);
        if (next.inner) { send next.coord, eNotify, (t = next.t, copy = copy); }
        if (MayStop()) { goto Crashed; }
      }
    }
  }

  state Crashed {
    entry {
      announce eReplicaCrashed, (p = p, copy = copy);
      send manager, eCrashed, (p = p, copy = copy);
    }
    ignore eReplicate;
  }

  fun MayStop(): bool { return (p, copy) in cfg.mayCrash && $; }
}

// The cluster manager: removes a crashed replica from its partition's configuration
// (RecoverReplica), and cuts a crashed coordinator off (CloseChannels).
machine Manager {
  var config: map[int, set[int]];
  var watchers: seq[machine];
  var primaries: seq[machine];

  start state Init {
    defer eCrashed, eCoordCrashed;
    on eWatchers goto Serving with (a: (cfg: Config, watchers: seq[machine], primaries: seq[machine])) {
      var p: int; var c: int;
      watchers = a.watchers; primaries = a.primaries;
      while (p < a.cfg.parts) {
        config[p] = default(set[int]);
        c = 1;
        while (c < a.cfg.copies) { config[p] += (c); c = c + 1; }
        p = p + 1;
      }
    }
  }

  state Serving {
    on eCrashed do (x: (p: int, copy: int)) {
      var i: int;
      config[x.p] -= (x.copy);
      while (i < sizeof(watchers)) { send watchers[i], eView, (p = x.p, replicas = config[x.p]); i = i + 1; }
    }
    on eCoordCrashed do (t: int) {
      var i: int;
      while (i < sizeof(primaries)) { send primaries[i], eCoordLost, t; i = i + 1; }
    }
  }
}

event eWatchers: (cfg: Config, watchers: seq[machine], primaries: seq[machine]);
