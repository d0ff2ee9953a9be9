// The reader-writer MCS lock's shared words (specs/MCSLock/RWMCSLock.tla): the record word's
// tail and reader count, and each process's context (next, spin, kind). Every step a process
// takes on them is one request here, answered with what the step read, so the steps are
// atomic and interleave as the spec's actions do.

// Broken steps, one per mutant of specs/MCSLock/MCRWMCSLock.tla.
type Mutants = (readerBarges: bool, skipReaderWait: bool, uncounted: bool, leavesUnlinked: bool);

event eInitContext: (p: Proc, id: int);
event eSwap: (p: Proc, id: int, reader: bool);
event eSwapped: (holds: bool, head: bool, pred: int);
event eLink: (p: Proc, id: int, pred: int);
event eReadSpin: (p: Proc, id: int);
event eReadReaders: (p: Proc, id: int);
event eReadNext: (p: Proc, id: int);
event eRead: int;
event eLeaveCas: (p: Proc, id: int, reader: bool);
event eLeft: bool;
event eWake: (p: Proc, id: int, reader: bool);
event eReaderRelease: (p: Proc, id: int);
event eDone;

// Announced for the monitors.
event eRequested: (id: int, reader: bool);
event eQueued: (id: int, reader: bool);
event eEnteredFree: int;
event eGranted: (id: int, reader: bool);
event eReleased: int;

machine Word {
  var mutants: Mutants;
  var tail: int;              // -1: no queue
  var readers: int;
  var next: map[int, int];    // -1: none
  var spin: map[int, bool];
  var kind: map[int, bool];   // true: a reader's context

  start state Serve {
    entry (m: Mutants) { mutants = m; tail = -1; }

    on eInitContext do (r: (p: Proc, id: int)) {
      next[r.id] = -1;
      spin[r.id] = true;
      send r.p, eDone;
    }

    // SwapTail, and the reader's fast path: no queue, so counted and holding.
    on eSwap do (r: (p: Proc, id: int, reader: bool)) {
      var pred: int;
      kind[r.id] = r.reader;
      announce eRequested, (id = r.id, reader = r.reader);
      if (r.reader && (tail == -1 || mutants.readerBarges && readers > 0)) {
        readers = readers + 1;
        announce eEnteredFree, r.id;
        send r.p, eSwapped, (holds = true, head = false, pred = -1);
        return;
      }
      pred = tail;
      tail = r.id;
      announce eQueued, (id = r.id, reader = r.reader);
      send r.p, eSwapped, (holds = false, head = pred == -1, pred = pred);
    }

    on eLink do (r: (p: Proc, id: int, pred: int)) {
      next[r.pred] = r.id;
      send r.p, eDone;
    }

    // WaiterWoken: a reader holds (it was counted), a writer is the head.
    on eReadSpin do (r: (p: Proc, id: int)) {
      if (spin[r.id]) { send r.p, eRead, 1; return; }
      if (kind[r.id]) { announce eGranted, (id = r.id, reader = true); }
      send r.p, eRead, 0;
    }

    // WriterEnter once no reader holds.
    on eReadReaders do (r: (p: Proc, id: int)) {
      if (readers == 0 || mutants.skipReaderWait) { announce eGranted, (id = r.id, reader = false); send r.p, eRead, 0; }
      else { send r.p, eRead, readers; }
    }

    on eReadNext do (r: (p: Proc, id: int)) { send r.p, eRead, next[r.id]; }

    // ReaderLeaveCas / WriterReleaseCas: clear the tail if it is still ours.
    on eLeaveCas do (r: (p: Proc, id: int, reader: bool)) {
      if (tail == r.id) {
        tail = -1;
        if (!r.reader) { announce eReleased, r.id; }
        send r.p, eLeft, true;
      } else {
        send r.p, eLeft, mutants.leavesUnlinked && r.reader;
      }
    }

    // ReaderPassOn / WriterHandover: a reader successor is counted before its flag clears.
    on eWake do (r: (p: Proc, id: int, reader: bool)) {
      var s: int;
      s = next[r.id];
      if (kind[s] && !(mutants.uncounted && !r.reader)) { readers = readers + 1; }
      spin[s] = false;
      if (!r.reader) { announce eReleased, r.id; }
      send r.p, eDone;
    }

    on eReaderRelease do (r: (p: Proc, id: int)) {
      readers = readers - 1;
      assert readers >= 0, format("TypeOK: the reader count went below zero at process {0}'s release", r.id);
      announce eReleased, r.id;
      send r.p, eDone;
    }
  }
}
