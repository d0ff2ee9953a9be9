// A process taking the lock once per entry of its mode list (true: shared), with one context
// reused for every acquisition, as RWMCSLock.tla's processes do. It may give one wait up
// (GiveUp, or HeadGivesUp as a head writer), chosen at a wait; it then queues its context
// again only once that context's waker has let it go (Reclaim).
machine Proc {
  var word: Word;
  var me: int;
  var modes: seq[bool];
  var mayGiveUp: bool;

  start state Init {
    entry (payload: (word: Word, id: int, modes: seq[bool], mayGiveUp: bool)) {
      var i: int;
      word = payload.word;
      me = payload.id;
      modes = payload.modes;
      mayGiveUp = payload.mayGiveUp;
      while (i < sizeof(modes)) {
        if (Acquire(modes[i])) {
          if (modes[i]) { ReaderRelease(); } else { WriterRelease(); }
        }
        i = i + 1;
      }
    }
  }

  fun Call(e: event, payload: any) { send word, e, payload; receive { case eDone: {} } }

  fun Read(e: event): int { return ReadOf(e, me); }

  fun ReadOf(e: event, id: int): int {
    var v: int;
    send word, e, (p = this, id = id);
    receive { case eRead: (x: int) { v = x; } }
    return v;
  }

  // True once the lock is held; false if the wait was given up.
  fun Acquire(reader: bool): bool {
    var swapped: (holds: bool, head: bool, pred: int);
    if (!reader && Read(eEnterFree) == 1) { return true; }
    Call(eInitContext, (p = this, id = me));
    send word, eSwap, (p = this, id = me, reader = reader);
    receive { case eSwapped: (s: (holds: bool, head: bool, pred: int)) { swapped = s; } }
    if (swapped.holds) { return true; }
    if (!swapped.head) {
      Call(eLink, (p = this, id = me, pred = swapped.pred));
      while (Read(eReadSpin) != 0) {
        if (mayGiveUp && $) {
          mayGiveUp = false;
          if (Read(eGiveUp) == 1) {
            while (Read(eReadGone) == 1) { } // Reclaim
            return false;
          }
        }
      }
    }
    if (reader) { LeaveQueue(true); return true; }
    while (Read(eReadReaders) != 0) {
      if (mayGiveUp && $) {
        // HeadGivesUp: leave as a writer's release does, never having held.
        mayGiveUp = false;
        announce eQuit, me;
        LeaveQueue(false);
        return false;
      }
    }
    return true;
  }

  // ReaderCheckNext .. ReaderPassOn, and the writer's release: clear the tail or wake the
  // node behind, once it has linked; if that node is gone, take it out the same way (Skip*).
  fun LeaveQueue(reader: bool) {
    var left: bool;
    var id: int;
    var succ: int;
    id = me;
    while (true) {
      succ = ReadOf(eReadNext, id);
      if (succ == -1) {
        send word, eLeaveCas, (p = this, id = id, reader = reader, skip = id != me);
        receive { case eLeft: (b: bool) { left = b; } }
        if (left) { return; }
        succ = ReadOf(eReadNext, id);
        while (succ == -1) { succ = ReadOf(eReadNext, id); }
      }
      send word, eWake, (p = this, id = id, succ = succ, reader = reader, skip = id != me);
      receive { case eRead: (s: int) { id = s; } }
      if (id == -1) { return; }
    }
  }

  fun ReaderRelease() { Call(eReaderRelease, (p = this, id = me)); }

  fun WriterRelease() { LeaveQueue(false); }
}
