// A container's executor: a fixed number of threads; a node asking for one waits, in order,
// until one is given back.
machine Executor {
  var free: int;
  var waiting: seq[machine];

  start state Serve {
    entry (threads: int) { free = threads; }
    on eWantThread do (m: machine) {
      if (free > 0) { free = free - 1; send m, eThread; }
      else { waiting += (sizeof(waiting), m); }
    }
    on eFreeThread do {
      if (sizeof(waiting) > 0) { send waiting[0], eThread; waiting -= (0); }
      else { free = free + 1; }
    }
  }
}
