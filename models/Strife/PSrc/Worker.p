// A worker thread: it asks the Strife machine for one step at a time, carrying its own state.
// Free-running, it asks again at once; driven, it waits for the driver's eGo before each step.
event eStep;
event eGo;
event eStepped;
event eWork: (w: Worker, ws: WState);
event eWorkDone: WState;

machine Worker {
  var strife: Strife;
  var driver: machine;
  var ws: WState;

  start state Init {
    entry (payload: (strife: Strife, driver: machine)) {
      strife = payload.strife;
      driver = payload.driver;
      ws = (txn = -1, pc = 0, retries = 0, queue = default(seq[int]), ranAgain = false, finished = false);
      if (driver == null) { goto Running; } else { goto Driven; }
    }
  }

  state Running {
    entry { send this, eStep; }
    on eStep do {
      Ask();
      if (ws.finished) { goto Done; }
      send this, eStep;
    }
  }

  state Driven {
    on eGo do {
      if (!ws.finished) { Ask(); }
      send driver, eStepped;
    }
  }

  state Done {
    ignore eStep, eGo;
  }

  fun Ask() {
    send strife, eWork, (w = this, ws = ws);
    receive {
      case eWorkDone: (r: WState) { ws = r; }
    }
  }
}

// Steps the workers in the order a test writes down: the prefix once, then the cycle forever.
machine Driver {
  var workers: seq[Worker];
  var prefix: seq[int];
  var cycle: seq[int];
  var at: int;

  start state Init {
    entry (payload: (prefix: seq[int], cycle: seq[int])) {
      prefix = payload.prefix;
      cycle = payload.cycle;
    }
    on eStart do (ws: seq[Worker]) {
      workers = ws;
      goto Stepping;
    }
  }

  state Stepping {
    entry {
      var w: int;
      if (at < sizeof(prefix)) { w = prefix[at]; } else { w = cycle[(at - sizeof(prefix)) % sizeof(cycle)]; }
      at = at + 1;
      send workers[w], eGo;
    }
    on eStepped goto Stepping;
  }
}

event eStart: seq[Worker];
