// The shared state of a Strife run and the steps on it; one request, one atomic step.
machine Strife {
  var cfg: Config;
  var phase: map[int, BPhase];          // bphase; batch 0 is the empty one before the first
  var current: int;                     // the batch whose clusters or residuals run
  var clusters: map[int, seq[int]];     // per batch, its cluster ids, in order of first appearance
  var claimedClusters: map[int, int];
  var doneClusters: map[int, int];
  var residuals: map[int, seq[int]];    // per batch, its residual transactions
  var claimedResiduals: map[int, int];
  var doneResiduals: map[int, int];
  var holder: map[int, int];            // item -> the residual holding its lock, or -1
  var allDone: bool;

  start state Serve {
    entry (c: Config) {
      var t: int; var b: int; var op: OpSpec;
      cfg = c;
      announce eConfig, cfg;
      phase[0] = DONE;
      b = 1;
      while (b <= cfg.batches) {
        phase[b] = WAITING;
        clusters[b] = default(seq[int]);
        residuals[b] = default(seq[int]);
        claimedClusters[b] = 0; doneClusters[b] = 0; claimedResiduals[b] = 0; doneResiduals[b] = 0;
        b = b + 1;
      }
      while (t < sizeof(cfg.txns)) {
        b = cfg.txns[t].batch;
        if (cfg.txns[t].cluster == 0) { residuals[b] += (sizeof(residuals[b]), t); }
        else if (!(cfg.txns[t].cluster in clusters[b])) { clusters[b] += (sizeof(clusters[b]), cfg.txns[t].cluster); }
        foreach (op in cfg.txns[t].ops) { holder[op.item] = -1; }
        t = t + 1;
      }
    }
    on eWork do (req: (w: Worker, ws: WState)) {
      send req.w, eWorkDone, Step(req.ws);
    }
  }

  fun Step(ws: WState): WState {
    var c: int; var n: int;
    if (ws.txn >= 0) { return RunOp(ws); }
    if (sizeof(ws.queue) > 0) {
      // ClusterStart: the cluster's next transaction, once the one before it ended.
      ws.txn = ws.queue[0];
      ws.queue -= (0);
      announce eTxnStart, (t = ws.txn, clustered = true);
      return ws;
    }
    c = current;
    n = c + 1;
    if (phase[c] == CLUSTERS && claimedClusters[c] < sizeof(clusters[c])) { return TakeCluster(ws, c); }
    if ((phase[c] == RESIDUALS || cfg.mutants.noBarrier && phase[c] == CLUSTERS && claimedClusters[c] == sizeof(clusters[c]))
        && claimedResiduals[c] < sizeof(residuals[c])) {
      // ResidualStart
      ws.txn = residuals[c][claimedResiduals[c]];
      claimedResiduals[c] = claimedResiduals[c] + 1;
      announce eTxnStart, (t = ws.txn, clustered = false);
      return ws;
    }
    if (n <= cfg.batches) {
      // Analyze(n): without overlap once batch c is done; with it once c runs (a worker gets
      // here in c's conflict-free phase only when every cluster of c is taken).
      if (phase[n] == WAITING && (phase[c] == DONE || cfg.overlap && (phase[c] == CLUSTERS || phase[c] == RESIDUALS))) {
        phase[n] = ANALYSED;
        announce eAnalysed, (b = n, before = phase[c]);
        return ws;
      }
      if (cfg.mutants.overlapEarly && phase[n] == ANALYSED && claimedClusters[n] < sizeof(clusters[n])) {
        return TakeCluster(ws, n); // the twin: batch n's clusters start while batch c runs
      }
      if (phase[n] == ANALYSED && phase[c] == DONE) {
        // StartClusters(n)
        current = n;
        phase[n] = CLUSTERS;
        if (doneClusters[n] == sizeof(clusters[n])) { Barrier(n); }
        return ws;
      }
    }
    if (phase[c] == DONE && c == cfg.batches) {
      if (!allDone) { allDone = true; announce eAllDone; }
      ws.finished = true;
    }
    return ws; // nothing to do yet: the worker asks again
  }

  // A worker takes the next cluster of batch b: its transactions, one after another.
  fun TakeCluster(ws: WState, b: int): WState {
    var k: int; var t: int;
    k = clusters[b][claimedClusters[b]];
    claimedClusters[b] = claimedClusters[b] + 1;
    while (t < sizeof(cfg.txns)) {
      if (cfg.txns[t].batch == b && cfg.txns[t].cluster == k) { ws.queue += (sizeof(ws.queue), t); }
      t = t + 1;
    }
    return ws;
  }

  // One step of the worker's transaction: an op (ClusterOp, ResidualOp), or Finish.
  fun RunOp(ws: WState): WState {
    var t: int; var ts: TxnSpec; var op: OpSpec; var h: int; var committed: bool;
    t = ws.txn;
    ts = cfg.txns[t];
    if (ws.pc < sizeof(ts.ops)) {
      op = ts.ops[ws.pc];
      if (ts.cluster > 0) {
        announce eUse, (item = op.item, t = t, write = op.write); // no lock at all
        ws.pc = ws.pc + 1;
        return ws;
      }
      h = holder[op.item];
      if (h == -1 || h == t) {
        holder[op.item] = t;
        announce eUse, (item = op.item, t = t, write = op.write);
        ws.pc = ws.pc + 1;
        return ws;
      }
      if (cfg.cc == NOWAIT || ws.retries < cfg.maxRetries || ts.age > cfg.txns[h].age) {
        // AbortAttempt: release every lock, forget the attempt, start again.
        if (!cfg.mutants.abortKeepsLocks) { ReleaseAll(t); }
        announce eRelease, t;
        announce eAttemptAborted, (t = t, held = Held(t));
        announce eRetried, t;
        ws.pc = 0;
        if (ws.retries < cfg.maxRetries) { ws.retries = ws.retries + 1; }
      }
      return ws; // WaitDie: an older requester waits (no step)
    }
    // Finish: commit, or the logic's abort; either releases every lock.
    committed = !(ts.mayAbort && $);
    ReleaseAll(t);
    announce eRelease, t;
    announce eTxnEnd, (t = t, committed = committed);
    if (cfg.mutants.retryAfterCommit && committed && ts.cluster == 0 && !ws.ranAgain) {
      ws.ranAgain = true; // the twin: the worker runs the committed transaction again
      ws.pc = 0;
      return ws;
    }
    ws.txn = -1; ws.pc = 0; ws.retries = 0; ws.ranAgain = false;
    if (ts.cluster > 0) {
      if (sizeof(ws.queue) == 0) {
        doneClusters[ts.batch] = doneClusters[ts.batch] + 1;
        if (doneClusters[ts.batch] == sizeof(clusters[ts.batch]) && phase[ts.batch] == CLUSTERS) { Barrier(ts.batch); }
      }
    } else {
      doneResiduals[ts.batch] = doneResiduals[ts.batch] + 1;
      if (doneResiduals[ts.batch] == sizeof(residuals[ts.batch]) && phase[ts.batch] == RESIDUALS) { FinishBatch(ts.batch); }
    }
    return ws;
  }

  // The barrier: every cluster of b has finished.
  fun Barrier(b: int) {
    phase[b] = RESIDUALS;
    if (doneResiduals[b] == sizeof(residuals[b])) { FinishBatch(b); }
  }

  fun FinishBatch(b: int) {
    announce eBatchDone, b;
    phase[b] = DONE;
  }

  fun ReleaseAll(t: int) {
    var x: int;
    foreach (x in keys(holder)) { if (holder[x] == t) { holder[x] = -1; } }
  }

  fun Held(t: int): int {
    var x: int; var n: int;
    foreach (x in keys(holder)) { if (holder[x] == t) { n = n + 1; } }
    return n;
  }
}
