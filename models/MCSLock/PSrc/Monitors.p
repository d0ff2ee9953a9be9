// RWMCSLock.tla's properties as P monitors.

// MutualExclusionInv: a writer holds alone.
spec Exclusion observes eEnteredFree, eGranted, eReleased {
  var holders: map[int, bool]; // id -> holds as a reader
  start state Watching {
    on eEnteredFree do (e: (id: int, reader: bool)) { Hold(e.id, e.reader); }
    on eGranted do (g: (id: int, reader: bool)) { Hold(g.id, g.reader); }
    on eReleased do (id: int) { holders -= (id); }
  }
  fun Hold(id: int, reader: bool) {
    var h: int;
    foreach (h in keys(holders)) {
      assert reader && holders[h], format("MutualExclusionInv: process {0} holds ({1}) while process {2} holds ({3})",
                                          id, Mode(reader), h, Mode(holders[h]));
    }
    holders[id] = reader;
  }
  fun Mode(reader: bool): string { if (reader) { return "shared"; } return "exclusive"; }
}

// RWFifoRefinementProp: only the head of the queue (in swap order) is granted, and a request
// enters without queuing only when nobody is queued.
spec FifoOrder observes eQueued, eEnteredFree, eGranted, eGaveUp, eQuit {
  var queue: seq[int];
  start state Watching {
    on eQueued do (q: (id: int, reader: bool)) { queue += (sizeof(queue), q.id); }
    // Cancel: a request given up leaves the queue wherever it is.
    on eGaveUp do (id: int) { Cancel(id); }
    on eQuit do (id: int) { Cancel(id); }
    on eEnteredFree do (e: (id: int, reader: bool)) {
      assert sizeof(queue) == 0, format("RWFifoRefinementProp: process {0} was admitted while process {1} was queued", e.id, queue[0]);
    }
    on eGranted do (g: (id: int, reader: bool)) {
      assert sizeof(queue) > 0 && queue[0] == g.id, format("RWFifoRefinementProp: process {0} was granted out of queue order {1}", g.id, queue);
      queue -= (0);
    }
  }
  fun Cancel(id: int) {
    var i: int;
    while (i < sizeof(queue)) { if (queue[i] == id) { queue -= (i); return; } i = i + 1; }
  }
}

// StarvationFreedomProp: every request is eventually granted, or given up.
spec Progress observes eRequested, eEnteredFree, eGranted, eGaveUp, eQuit {
  var waiting: set[int];
  start cold state Idle {
    on eRequested do (r: (id: int, reader: bool)) { waiting += (r.id); goto Waiting; }
  }
  hot state Waiting {
    on eRequested do (r: (id: int, reader: bool)) { waiting += (r.id); }
    on eEnteredFree do (e: (id: int, reader: bool)) { Served(e.id); }
    on eGranted do (g: (id: int, reader: bool)) { Served(g.id); }
    on eGaveUp do (id: int) { Served(id); }
    on eQuit do (id: int) { Served(id); }
  }
  fun Served(id: int) {
    waiting -= (id);
    if (sizeof(waiting) == 0) { goto Idle; }
  }
}

// GoneReclaimedProp: a context given up is eventually taken out of the queue and let go.
spec Reclaimed observes eGaveUp, eLetGo {
  var gone: set[int];
  start cold state Idle {
    on eGaveUp do (id: int) { gone += (id); goto Gone; }
    ignore eLetGo;
  }
  hot state Gone {
    on eGaveUp do (id: int) { gone += (id); }
    on eLetGo do (id: int) { gone -= (id); if (sizeof(gone) == 0) { goto Idle; } }
  }
}

// Non-vacuity (a passing workload must violate it): two readers hold together.
spec ReadersTogetherReachable observes eEnteredFree, eGranted, eReleased {
  var readers: set[int];
  start state Watching {
    on eEnteredFree do (e: (id: int, reader: bool)) { if (e.reader) { Add(e.id); } }
    on eGranted do (g: (id: int, reader: bool)) { if (g.reader) { Add(g.id); } }
    on eReleased do (id: int) { readers -= (id); }
  }
  fun Add(id: int) {
    readers += (id);
    assert sizeof(readers) < 2, "ReadersTogetherReachable: two readers hold together";
  }
}
