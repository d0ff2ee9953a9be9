// A (sub-)transaction: queued on its container until a thread is free (Dequeue), runs its
// logic, calls its sub-transactions on their containers, completes once all of them have
// (Complete), passing its tree's reads and writes up; a root then commits (Algorithm 3).
machine Node {
  var cfg: Config;
  var id: int;
  var me: NodeSpec;
  var parent: machine;       // null for a root
  var db: machine;
  var executors: seq[machine];
  var pending: int;          // sub-transactions called that have not completed
  var records: seq[Rec];

  start state Init {
    entry (a: (cfg: Config, id: int, parent: machine, db: machine, executors: seq[machine])) {
      cfg = a.cfg; id = a.id; me = cfg.nodes[id]; parent = a.parent; db = a.db; executors = a.executors;
      send executors[me.container], eWantThread, this;
      goto Queued;
    }
  }

  state Queued {
    on eThread goto Running;
  }

  // ReadOp, WriteLoad/WriteStore, Call; then FinishLogic. A child's completion waits.
  state Running {
    defer eChildDone;
    entry {
      var op: Op; var v: int;
      announce eStarted, id;
      foreach (op in me.ops) {
        if (op.kind == READ || op.kind == WRITE) {
          send db, eRead, (from = this, key = op.key);
          receive { case eValue: (x: int) { v = x; } }
          records += (sizeof(records), (container = me.container, key = op.key, read = true, write = op.kind == WRITE, val = v));
        } else if (op.kind == BLIND) {
          records += (sizeof(records), (container = me.container, key = op.key, read = false, write = true, val = 0));
        } else {
          announce eCalled, op.sub;
          new Node((cfg = cfg, id = op.sub, parent = this, db = db, executors = executors));
          pending = pending + 1;
        }
      }
      if (pending == 0 || (cfg.mutants.commitBeforeWaiting && parent == default(machine))) { goto Finishing; }
      // D1: the engine's executor takes the thread back while the node waits; the paper's does not.
      if (cfg.engineThreads) { send executors[me.container], eFreeThread; }
      goto Waiting;
    }
  }

  // Algorithm 1 line 16: wait for every sub-transaction called.
  state Waiting {
    on eChildDone do (r: seq[Rec]) {
      var x: Rec;
      foreach (x in r) { records += (sizeof(records), x); }
      pending = pending - 1;
      if (pending == 0) {
        if (cfg.engineThreads) {
          send executors[me.container], eWantThread, this; // the continuation is queued on the container
          goto Resuming;
        }
        goto Finishing;
      }
    }
  }

  state Resuming {
    on eThread goto Finishing;
  }

  state Finishing {
    entry {
      if (parent == default(machine)) { Commit(); }
      else {
        announce eCompleted, id;
        send parent, eChildDone, records;
      }
      send executors[me.container], eFreeThread;
      goto Finished;
    }
  }

  // A root that committed before its children (the mutant) hears of them here.
  state Finished {
    ignore eChildDone;
  }

  // BeginCommit, then LockStep for every container in the validation order, ValidateStep for
  // every one, WriteStep for every one (lockFirst, D5); or, as Algorithm 3 is written, lock and
  // validate each container before the next. A no anywhere: AbortAll.
  fun Commit() {
    var order: seq[int]; var c: int; var i: int; var ok: bool;
    var reads: map[int, int]; var writes: set[int]; var x: Rec;
    announce eCommitting, id;
    order += (0, me.container);
    while (c < cfg.containers) {
      if (c != me.container && Touches(c)) { order += (sizeof(order), c); }
      c = c + 1;
    }
    ok = true;
    if (cfg.mutants.paperLinear) {
      while (ok && i < sizeof(order)) {
        ok = LockIn(order[i]);
        if (ok) { ok = ValidateIn(order[i]); }
        i = i + 1;
      }
    } else {
      while (ok && i < sizeof(order)) { ok = LockIn(order[i]); i = i + 1; }
      i = 0;
      while (ok && i < sizeof(order)) { ok = ValidateIn(order[i]); i = i + 1; }
    }
    if (ok) {
      i = 0;
      while (i < sizeof(order)) {
        send db, eInstall, (from = this, root = id + 1, ks = WritesIn(order[i]));
        receive { case eDbDone: {} }
        i = i + 1;
      }
    } else {
      send db, eUnlockAll, (from = this, root = id + 1);
      receive { case eDbDone: {} }
    }
    foreach (x in records) {
      if (x.read && !(x.key in reads)) { reads[x.key] = x.val; }
      if (x.write) { writes += (x.key); }
    }
    announce eDecided, (root = id + 1, committed = ok, reads = reads, writes = writes);
  }

  fun Touches(c: int): bool {
    var x: Rec;
    foreach (x in records) { if (x.container == c) { return true; } }
    return false;
  }

  fun WritesIn(c: int): set[int] {
    var x: Rec; var s: set[int];
    foreach (x in records) { if (x.container == c && x.write) { s += (x.key); } }
    return s;
  }

  fun LockIn(c: int): bool {
    var ok: bool;
    send db, eLock, (from = this, root = id + 1, ks = WritesIn(c));
    receive { case eVote: (v: bool) { ok = v; } }
    return ok;
  }

  fun ValidateIn(c: int): bool {
    var x: Rec; var reads: map[int, int]; var ok: bool;
    foreach (x in records) { if (x.container == c && x.read && !(x.key in reads)) { reads[x.key] = x.val; } }
    send db, eValidate, (from = this, root = id + 1, reads = reads);
    receive { case eVote: (v: bool) { ok = v; } }
    return ok;
  }
}
