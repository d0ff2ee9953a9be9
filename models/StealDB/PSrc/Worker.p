// One worker thread per transaction (StealDB.tla: a worker is named by its transaction). It
// keeps its stack of RUNOP frames; every step on shared words is one request to Memory.
event eStep;

machine Worker {
  var memory: Memory;
  var me: int;
  var stack: seq[Frame];
  var cursor: int;

  start state Init {
    entry (payload: (memory: Memory, t: int)) {
      memory = payload.memory;
      me = payload.t;
      announce eTxnStarted, me;
      goto Working;
    }
  }

  state Working {
    entry { send this, eStep; }
    on eStep do {
      if (sizeof(stack) == 0) {
        send memory, eOwnerStep, (w = this, t = me, cursor = cursor);
        receive {
          case eOwnerDone: (r: (cursor: int, push: bool, frame: Frame, finished: bool)) {
            cursor = r.cursor;
            if (r.push) { stack += (sizeof(stack), r.frame); }
            if (r.finished) { goto Done; }
          }
        }
      } else {
        send memory, eFrameStep, (w = this, by = me, frame = stack[sizeof(stack) - 1]);
        receive {
          case eFrameDone: (r: (keep: bool, frame: Frame, push: bool, pushed: Frame)) {
            stack -= (sizeof(stack) - 1);
            if (r.keep) { stack += (sizeof(stack), r.frame); }
            if (r.push) { stack += (sizeof(stack), r.pushed); }
          }
        }
      }
      send this, eStep;
    }
  }

  state Done {
    ignore eStep;
  }
}
