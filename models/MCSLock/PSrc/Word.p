// The reader-writer MCS lock's shared words (specs/MCSLock/RWMCSLock.tla): the record word's
// tail and reader count, and each process's context (next, spin, kind). Every step a process
// takes on them is one request here, answered with what the step read, so the steps are
// atomic and interleave as the spec's actions do.

// Broken steps, one per mutant of specs/MCSLock/MCRWMCSLock.tla.
type Mutants = (readerBarges: bool, skipReaderWait: bool, uncounted: bool, leavesUnlinked: bool,
                givesUpWoken: bool, wakeStores: bool, letGoBeforeRead: bool, writerEntersRead: bool);

event eEnterFree: (p: Proc, id: int);
event eInitContext: (p: Proc, id: int);
event eSwap: (p: Proc, id: int, reader: bool);
event eSwapped: (holds: bool, head: bool, pred: int);
event eLink: (p: Proc, id: int, pred: int);
event eReadSpin: (p: Proc, id: int);
event eReadReaders: (p: Proc, id: int);
event eReadNext: (p: Proc, id: int);
event eRead: int;
event eLeaveCas: (p: Proc, id: int, reader: bool, skip: bool);
event eLeft: bool;
event eWake: (p: Proc, id: int, succ: int, reader: bool, skip: bool);
event eReaderRelease: (p: Proc, id: int);
event eGiveUp: (p: Proc, id: int);
event eReadGone: (p: Proc, id: int);
event eDone;

// Announced for the monitors.
event eRequested: (id: int, reader: bool);
event eQueued: (id: int, reader: bool);
event eEnteredFree: (id: int, reader: bool);
event eGranted: (id: int, reader: bool);
event eReleased: int;
event eGaveUp: int;    // a waiter gave up (GiveUp): its context is gone
event eQuit: int;      // a head writer gave up (HeadGivesUp): it leaves, never having held
event eLetGo: int;     // a gone context taken out of the queue, back to its owner

machine Word {
  var mutants: Mutants;
  var tail: int;              // -1: no queue
  var readers: int;
  var next: map[int, int];    // -1: none
  var spin: map[int, bool];
  var kind: map[int, bool];   // true: a reader's context
  var gone: map[int, bool];   // given up, still queued, for its waker to take out

  start state Serve {
    entry (m: Mutants) { mutants = m; tail = -1; }

    // WriterEnterFree: a writer takes a word with no queue and no reader in one step, its
    // context cleared for the successor that will link to it and not set to wait; answers 1
    // if it holds, else 0 and nothing changed.
    on eEnterFree do (r: (p: Proc, id: int)) {
      assert !(r.id in gone) || !gone[r.id], format("context {0} taken again while still gone", r.id);
      if (tail != -1 || readers > 0 && !mutants.writerEntersRead) { send r.p, eRead, 0; return; }
      next[r.id] = -1;
      spin[r.id] = false;
      gone[r.id] = false;
      kind[r.id] = false;
      tail = r.id;
      announce eRequested, (id = r.id, reader = false);
      announce eEnteredFree, (id = r.id, reader = false);
      send r.p, eRead, 1;
    }

    on eInitContext do (r: (p: Proc, id: int)) {
      assert !(r.id in gone) || !gone[r.id], format("context {0} queued again while still gone", r.id);
      next[r.id] = -1;
      spin[r.id] = true;
      gone[r.id] = false;
      send r.p, eDone;
    }

    // SwapTail, and the reader's fast path: no queue, so counted and holding.
    on eSwap do (r: (p: Proc, id: int, reader: bool)) {
      var pred: int;
      kind[r.id] = r.reader;
      announce eRequested, (id = r.id, reader = r.reader);
      if (r.reader && (tail == -1 || mutants.readerBarges && readers > 0)) {
        readers = readers + 1;
        announce eEnteredFree, (id = r.id, reader = true);
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

    // ReaderLeaveCas / WriterReleaseCas, and SkipCas (r.skip: r.id is a gone context the
    // sender takes out of the queue): clear the tail if it is still r.id, letting a gone one go.
    on eLeaveCas do (r: (p: Proc, id: int, reader: bool, skip: bool)) {
      if (tail == r.id) {
        tail = -1;
        if (r.skip) { LetGo(r.id); } else if (!r.reader) { announce eReleased, r.id; }
        send r.p, eLeft, true;
      } else {
        send r.p, eLeft, mutants.leavesUnlinked && r.reader && !r.skip;
      }
    }

    // ReaderPassOn / WriterHandover, and SkipOn with SkipWake (r.skip: the gone context r.id
    // is let go, its successor r.succ read before): the successor s is woken by a CAS on its
    // flag, a reader counted before its flag clears. If s is gone the CAS fails and the answer
    // names s, which the sender takes out of the queue next; else -1.
    on eWake do (r: (p: Proc, id: int, succ: int, reader: bool, skip: bool)) {
      var s: int;
      s = r.succ;
      if (r.skip) { LetGo(r.id); } else if (!r.reader) { announce eReleased, r.id; }
      if (gone[s] && !mutants.wakeStores) {
        if (mutants.letGoBeforeRead) { LetGo(s); }
        send r.p, eRead, s;
        return;
      }
      if (kind[s] && !(mutants.uncounted && !r.reader)) { readers = readers + 1; }
      spin[s] = false;
      send r.p, eRead, -1;
    }

    // GiveUp: a CAS on the waiter's own flag, which fails once it was woken.
    on eGiveUp do (r: (p: Proc, id: int)) {
      if (spin[r.id] || mutants.givesUpWoken) {
        gone[r.id] = true;
        announce eGaveUp, r.id;
        send r.p, eRead, 1;
        return;
      }
      send r.p, eRead, 0;
    }

    on eReadGone do (r: (p: Proc, id: int)) { if (gone[r.id]) { send r.p, eRead, 1; } else { send r.p, eRead, 0; } }

    on eReaderRelease do (r: (p: Proc, id: int)) {
      readers = readers - 1;
      assert readers >= 0, format("TypeOK: the reader count went below zero at process {0}'s release", r.id);
      announce eReleased, r.id;
      send r.p, eDone;
    }
  }

  fun LetGo(id: int) {
    if (!gone[id]) { return; }
    gone[id] = false;
    announce eLetGo, id;
  }
}
