// The shared words and the atomic steps on them. Each request is answered with the
// requester's new top frame (or none), and whether a new frame is pushed on top of it.
event eOwnerStep: (w: Worker, t: int, cursor: int);
event eOwnerDone: (cursor: int, push: bool, frame: Frame, finished: bool);
event eFrameStep: (w: Worker, by: int, frame: Frame);
event eFrameDone: (keep: bool, frame: Frame, push: bool, pushed: Frame);

machine Memory {
  var cfg: Config;
  var opTid: map[OpId, int];         // the op's transaction until claimed, then -1
  var opStatus: map[OpId, Status];
  var rq: map[int, seq[int]];
  var stealCtx: map[int, Token];
  var gen: map[int, int];
  var lockQ: map[int, seq[int]];
  var phase: map[int, Phase];
  var usedRec: map[int, set[int]];   // records on which t has executed an op (for eGranted/eReleased)
  var stacks: map[int, seq[Frame]];  // each worker's RUNOP stack as its replies leave it (for the detector)

  start state Serve {
    entry (c: Config) {
      var t: int; var i: int;
      cfg = c;
      foreach (t in keys(cfg.progs)) {
        i = 0;
        rq[t] = default(seq[int]);
        while (i < sizeof(cfg.progs[t])) {
          opTid[(t = t, i = i)] = t;
          opStatus[(t = t, i = i)] = NONE;
          if (sizeof(cfg.progs[t][i].deps) == 0) { rq[t] += (sizeof(rq[t]), i); }
          lockQ[cfg.progs[t][i].rec] = default(seq[int]);
          i = i + 1;
        }
        stealCtx[t] = (t = -1, i = 0);
        gen[t] = 0;
        phase[t] = RUN;
        usedRec[t] = default(set[int]);
        stacks[t] = default(seq[Frame]);
      }
    }
    on eOwnerStep do OwnerStep;
    on eFrameStep do FrameStep;
  }

  fun Ops(t: int): int { return sizeof(cfg.progs[t]); }
  fun RecOf(o: OpId): int { return cfg.progs[o.t][o.i].rec; }
  fun Finished(o: OpId): bool { return opStatus[o] != NONE; }
  fun InFlight(o: OpId): bool { return opTid[o] == -1 && !Finished(o); }
  fun Doomed(t: int): bool {
    var i: int;
    while (i < Ops(t)) { if (opStatus[(t = t, i = i)] == FAILED) { return true; } i = i + 1; }
    return false;
  }
  fun IsRunning(t: int): bool { return phase[t] != COMMITTED && phase[t] != ABORTED; }
  fun Acquired(o: OpId): bool { return Granted(o.t, RecOf(o)); }
  // t's context on r is shared: t only reads r (one op per record).
  fun Shared(t: int, r: int): bool {
    var i: int;
    if (!cfg.sharedReads) { return false; }
    while (i < Ops(t)) { if (cfg.progs[t][i].rec == r && cfg.progs[t][i].write) { return false; } i = i + 1; }
    return true;
  }
  // Granted: the head, or a shared context with only shared ones ahead (RWFifoLock.tla).
  fun Granted(t: int, r: int): bool {
    var i: int; var k: int;
    i = PosIn(t, r);
    if (i < 0) { return false; }
    if (i == 0) { return true; }
    while (k <= i) { if (!Shared(lockQ[r][k], r)) { return false; } k = k + 1; }
    return true;
  }
  fun InQueue(t: int, r: int): bool {
    var k: int;
    while (k < sizeof(lockQ[r])) { if (lockQ[r][k] == t) { return true; } k = k + 1; }
    return false;
  }
  fun WriteCtx(t: int, v: Token) { stealCtx[t] = v; gen[t] = gen[t] + 1; }
  fun NoFrame(): Frame { return (op = (t = -1, i = -1), pc = CHECK, pred = -1, hand = (from = -1, gen = -1, tok = (t = -1, i = 0)), hasHand = false); }
  // The lowest-index op of t nobody has claimed, or -1.
  fun Unclaimed(t: int): int {
    var i: int;
    while (i < Ops(t)) { if (opTid[(t = t, i = i)] == t) { return i; } i = i + 1; }
    return -1;
  }

  fun NewFrame(o: OpId): Frame { return (op = o, pc = CHECK, pred = -1, hand = (from = -1, gen = -1, tok = (t = -1, i = 0)), hasHand = false); }

  // Algorithm 1 for an idle owner: OwnerRunNext, OwnerDecide, OwnerRelease, OwnerFinish.
  fun OwnerStep(req: (w: Worker, t: int, cursor: int)) {
    var t: int; var i: int; var ok: bool; var r: int; var held: bool;
    t = req.t;
    if (phase[t] == RUN && req.cursor < sizeof(rq[t])) {
      OwnerPush(req.w, t, req.cursor + 1, NewFrame((t = t, i = rq[t][req.cursor])));
      return;
    }
    if (phase[t] == RUN && Doomed(t) && Unclaimed(t) >= 0 && $) {
      // OwnerCloseOp: a doomed owner runs, in index order, an op nobody claimed; the frame
      // claims it and finds it doomed (the engine's CloseUnclaimed, which must not leave an
      // op whose words it reuses for the next transaction).
      i = Unclaimed(t);
      announce eClosed, (t = t, i = i);
      OwnerPush(req.w, t, req.cursor, NewFrame((t = t, i = i)));
      return;
    }
    if (phase[t] == RUN) {
      ok = true;
      i = 0;
      while (i < Ops(t)) {
        if (Doomed(t) && InFlight((t = t, i = i))) { ok = false; }
        if (!Doomed(t) && !Finished((t = t, i = i))) { ok = false; }
        i = i + 1;
      }
      if (ok) {
        if (Doomed(t)) { phase[t] = ABORT_REL; } else { phase[t] = COMMIT_REL; }
        announce eTxnDecided, (t = t, committed = phase[t] == COMMIT_REL, ops = Ops(t));
      }
      send req.w, eOwnerDone, (cursor = req.cursor, push = false, frame = NoFrame(), finished = false);
      return;
    }
    if (phase[t] == COMMIT_REL || phase[t] == ABORT_REL) {
      held = false;
      // One granted context released per step; a context still waiting is released once it is
      // granted. Granted ones first: a waiting context seen first must not hold up a holder
      // behind which another transaction waits (with no threshold, that was a deadlock).
      foreach (r in keys(lockQ)) {
        if (!held && Granted(t, r)) {
          lockQ[r] = Without(lockQ[r], t);
          announce eReleased, (rec = r, t = t);
          held = true;
        }
      }
      foreach (r in keys(lockQ)) {
        if (!held && InQueue(t, r)) { held = true; }
      }
      if (!held) {
        if (phase[t] == COMMIT_REL) { phase[t] = COMMITTED; } else { phase[t] = ABORTED; }
        announce eTxnEnded, t;
      }
    }
    send req.w, eOwnerDone, (cursor = req.cursor, push = false, frame = NoFrame(), finished = !IsRunning(t));
  }

  // Algorithms 2 and 3: one step of the worker's top frame.
  fun FrameStep(req: (w: Worker, by: int, frame: Frame)) {
    var f: Frame; var o: OpId; var t: int; var r: int; var pred: int; var tok: Token; var ts: int;
    var choices: set[int]; var c: int; var h: int; var p: int;
    f = req.frame; o = f.op; t = o.t;
    if (f.pc == CHECK) {
      // RunOpClaim: CAS(&op.tid, tid, null). Mutant noCas: test here, set in a later step.
      if (opTid[o] == t) {
        if (cfg.mutants.noCas) { f.pc = CLAIM; } else { opTid[o] = -1; announce eClaimed, o; f.pc = LOCK; }
        Reply(req.by, req.w, true, f);
      } else { Reply(req.by, req.w, false, f); }
      return;
    }
    if (f.pc == CLAIM) {
      opTid[o] = -1; announce eClaimed, o; f.pc = LOCK;
      Reply(req.by, req.w, true, f);
      return;
    }
    if (f.pc == LOCK) {
      // RunOpTryLock: skip a doomed transaction's op; else append and remember the old tail.
      if (Doomed(t)) { opStatus[o] = FAILED; Reply(req.by, req.w, false, f); return; }
      r = RecOf(o);
      announce eRequested, (rec = r, t = t);
      if (sizeof(lockQ[r]) > 0) { f.pred = lockQ[r][sizeof(lockQ[r]) - 1]; }
      lockQ[r] += (sizeof(lockQ[r]), t);
      if (Granted(t, r)) { f.pc = EXEC; } else { f.pc = WAIT; }
      Reply(req.by, req.w, true, f);
      return;
    }
    if (f.pc == WAIT) {
      // The enabled ones of WaiterProceed, WaiterTimeout, WaiterStealSwap, WaiterStealBack,
      // WaiterStealBasic; one is chosen.
      r = RecOf(o);
      // The second exit, "the predecessor no longer runs", only with exclusive locks (StealDB.tla).
      if (Acquired(o) || ((!cfg.sharedReads || cfg.mutants.predEndedExit) && !IsRunning(f.pred)) || cfg.mutants.proceedWithoutLock) { choices += (0); }
      if (!Acquired(o) && !cfg.mutants.noTimeout) { choices += (1); }
      if (!Acquired(o) && cfg.detect && OnCycle(FrameNode(req.by, sizeof(stacks[req.by]) - 1))) { choices += (5); }
      if (!Acquired(o) && IsRunning(f.pred)) {
        if (cfg.policy == QUEUE && stealCtx[f.pred].t != -1) { choices += (2); }
        if (cfg.policy == QUEUE && lockQ[r][sizeof(lockQ[r]) - 1] == t && stealCtx[t].t != -1) { choices += (3); }
        if (cfg.policy == BASIC && IsRunning(lockQ[r][0]) && stealCtx[lockQ[r][0]].t != -1) { choices += (4); }
      }
      if (sizeof(choices) == 0) { Reply(req.by, req.w, true, f); return; } // spin: nothing enabled yet
      c = choose(choices);
      if (c == 0) { f.pc = EXEC; Reply(req.by, req.w, true, f); return; }
      if (c == 5) {
        // DetectorAbort: the top frame waits on a cycle; it gives up as a timed-out one does.
        announce eDetectorAbort, (op = o, stolenCycle = StolenOnCycle(FrameNode(req.by, sizeof(stacks[req.by]) - 1)));
        opStatus[o] = FAILED;
        Reply(req.by, req.w, false, f);
        return;
      }
      if (c == 1) {
        opStatus[o] = FAILED;
        if (cfg.mutants.timeoutCancels) { lockQ[r] = Without(lockQ[r], t); }
        Reply(req.by, req.w, false, f);
        return;
      }
      if (c == 2 || c == 3) {
        if (c == 2) { p = f.pred; } else { p = t; }
        f.hand = (from = p, gen = gen[p], tok = stealCtx[p]); f.hasHand = true;
        announce eTaken, (from = p, gen = gen[p]);
        // C1: one exchange. Mutant nonAtomicSteal: the clear comes in a later step (the STEAL
        // step below), so another waiter can read the same context meanwhile.
        if (!cfg.mutants.nonAtomicSteal || c == 3) { WriteCtx(p, (t = -1, i = 0)); }
        f.pc = STEAL;
        Reply(req.by, req.w, true, f);
        return;
      }
      // WaiterStealBasic: CAS the holder's index down by one, run that op.
      h = lockQ[r][0];
      tok = stealCtx[h];
      announce eTaken, (from = h, gen = gen[h]);
      if (tok.i > 0) { WriteCtx(h, (t = h, i = tok.i - 1)); } else { WriteCtx(h, (t = -1, i = 0)); }
      ReplyPush(req.by, req.w, f, NewFrame((t = h, i = rq[h][tok.i])));
      return;
    }
    if (f.pc == STEAL) {
      // WaiterStealRun: if Ts still runs, hand <Ts, i - 1> down through T's word, run op i.
      if (cfg.mutants.nonAtomicSteal && f.hand.from != t) { WriteCtx(f.hand.from, (t = -1, i = 0)); }
      ts = f.hand.tok.t;
      f.pc = WAIT; f.hasHand = false;
      if (IsRunning(ts)) {
        if (f.hand.tok.i > 0) { WriteCtx(t, (t = ts, i = f.hand.tok.i - 1)); }
        ReplyPush(req.by, req.w, f, NewFrame((t = ts, i = rq[ts][f.hand.tok.i])));
        return;
      }
      Reply(req.by, req.w, true, f);
      return;
    }
    // ExecuteOp: read, maybe a user abort, insert the ops made runnable, publish <t, last>.
    Execute(o);
    announce eRanBy, (op = o, by = req.by);
    if (cfg.mutants.earlyRelease) {
      r = RecOf(o);
      lockQ[r] = Without(lockQ[r], t);
      announce eReleased, (rec = r, t = t);
    }
    Reply(req.by, req.w, false, f);
  }

  fun Execute(o: OpId) {
    var t: int; var j: int; var ready: bool; var d: int; var added: bool;
    t = o.t;
    announce eGranted, (rec = RecOf(o), t = t, shared = Shared(t, RecOf(o)));
    announce eExecuted, o;
    if (cfg.progs[t][o.i].mayAbort && $) { opStatus[o] = FAILED; } else { opStatus[o] = OK; }
    j = 0;
    while (j < Ops(t)) {
      if (sizeof(cfg.progs[t][j].deps) > 0 && o.i in cfg.progs[t][j].deps) {
        ready = true;
        foreach (d in cfg.progs[t][j].deps) { if (opStatus[(t = t, i = d)] == NONE) { ready = false; } }
        if (ready) { rq[t] += (sizeof(rq[t]), j); added = true; }
      }
      j = j + 1;
    }
    // Positions are 0-based here; the spec's are 1-based.
    if (added) { WriteCtx(t, (t = t, i = sizeof(rq[t]) - 1)); }
  }

  fun Without(q: seq[int], t: int): seq[int] {
    var out: seq[int]; var k: int;
    while (k < sizeof(q)) { if (q[k] != t) { out += (sizeof(out), q[k]); } k = k + 1; }
    return out;
  }

  // Every answer goes through these three, which keep the stacks' mirror as the worker will.
  fun OwnerPush(w: Worker, t: int, cursor: int, f: Frame) {
    stacks[t] += (sizeof(stacks[t]), f);
    send w, eOwnerDone, (cursor = cursor, push = true, frame = f, finished = false);
  }

  fun Reply(by: int, w: Worker, keep: bool, f: Frame) {
    stacks[by] -= (sizeof(stacks[by]) - 1);
    if (keep) { stacks[by] += (sizeof(stacks[by]), f); }
    send w, eFrameDone, (keep = keep, frame = f, push = false, pushed = NoFrame());
  }

  fun ReplyPush(by: int, w: Worker, f: Frame, pushed: Frame) {
    stacks[by] -= (sizeof(stacks[by]) - 1);
    stacks[by] += (sizeof(stacks[by]), f);
    stacks[by] += (sizeof(stacks[by]), pushed);
    send w, eFrameDone, (keep = true, frame = f, push = true, pushed = pushed);
  }

  // StealDBDeadlock.tla's waits-for graph (SuccIn), its nodes as ints: R(t) = t, the release of
  // t; F(w, k) = 1000 + 100 w + k, frame k of worker w's stack; C(t, r) = 100000 + 1000 t + r,
  // t's lock context in r's queue. An edge n -> m: n cannot move before m does.
  fun FrameNode(w: int, k: int): int { return 1000 + 100 * w + k; }
  fun ContextNode(t: int, r: int): int { return 100000 + 1000 * t + r; }
  fun Visible(w: int, k: int): bool { return !cfg.mutants.detectNoStealEdges || stacks[w][k].op.t == w; }
  fun PosIn(t: int, r: int): int {
    var k: int;
    while (k < sizeof(lockQ[r])) { if (lockQ[r][k] == t) { return k; } k = k + 1; }
    return -1;
  }

  fun Succ(n: int): set[int] {
    var out: set[int]; var w: int; var k: int; var t: int; var r: int; var i: int; var f: Frame;
    if (n < 1000) {
      // The release waits for every frame running one of n's ops, on any worker.
      if (phase[n] == RUN) {
        foreach (w in keys(stacks)) {
          k = 0;
          while (k < sizeof(stacks[w])) { if (stacks[w][k].op.t == n && Visible(w, k)) { out += (FrameNode(w, k)); } k = k + 1; }
        }
      }
      return out;
    }
    if (n < 100000) {
      w = (n - 1000) / 100; k = (n - 1000) % 100;
      if (k >= sizeof(stacks[w]) || !Visible(w, k)) { return out; }
      f = stacks[w][k];
      // A frame returns only after the one above it; in the wait loop it needs its context at the head.
      if (k + 1 < sizeof(stacks[w]) && Visible(w, k + 1)) { out += (FrameNode(w, k + 1)); }
      if ((f.pc == WAIT || f.pc == STEAL) && !Granted(f.op.t, RecOf(f.op))) { out += (ContextNode(f.op.t, RecOf(f.op))); }
      return out;
    }
    t = (n - 100000) / 1000; r = (n - 100000) % 1000;
    i = PosIn(t, r);
    if (Granted(t, r)) {
      if (phase[t] == RUN) { out += (t); }
      return out;
    }
    // Behind every context ahead: a writer waits for all the readers ahead. The mutant: with
    // only granted readers ahead (in the engine, out of the queue) it waits for nobody.
    if (cfg.mutants.detectIgnoresReaders && Shared(lockQ[r][i - 1], r) && Granted(lockQ[r][i - 1], r)) { return out; }
    k = 0;
    while (k < i) { out += (ContextNode(lockQ[r][k], r)); k = k + 1; }
    return out;
  }

  // The nodes reachable from n in one or more edges.
  fun Reach(n: int): set[int] {
    var seen: set[int]; var frontier: seq[int]; var x: int; var m: int;
    foreach (m in Succ(n)) { if (!(m in seen)) { seen += (m); frontier += (sizeof(frontier), m); } }
    while (sizeof(frontier) > 0) {
      x = frontier[0]; frontier -= (0);
      foreach (m in Succ(x)) { if (!(m in seen)) { seen += (m); frontier += (sizeof(frontier), m); } }
    }
    return seen;
  }

  fun OnCycle(n: int): bool { return n in Reach(n); }

  // Whether a frame running another transaction's op than its worker's lies on a cycle through n.
  fun StolenOnCycle(n: int): bool {
    var x: int; var w: int; var k: int;
    foreach (x in Reach(n)) {
      if (x >= 1000 && x < 100000) {
        w = (x - 1000) / 100; k = (x - 1000) % 100;
        if (k < sizeof(stacks[w]) && stacks[w][k].op.t != w && (x == n || n in Reach(x))) { return true; }
      }
    }
    return false;
  }
}
