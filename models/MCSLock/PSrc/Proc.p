// A process taking the lock once per entry of its mode list (true: shared), with one context
// reused for every acquisition, as RWMCSLock.tla's processes do.
machine Proc {
  var word: Word;
  var me: int;
  var modes: seq[bool];

  start state Init {
    entry (payload: (word: Word, id: int, modes: seq[bool])) {
      var i: int;
      word = payload.word;
      me = payload.id;
      modes = payload.modes;
      while (i < sizeof(modes)) {
        Acquire(modes[i]);
        if (modes[i]) { ReaderRelease(); } else { WriterRelease(); }
        i = i + 1;
      }
    }
  }

  fun Call(e: event, payload: any) { send word, e, payload; receive { case eDone: {} } }

  fun Read(e: event): int {
    var v: int;
    send word, e, (p = this, id = me);
    receive { case eRead: (x: int) { v = x; } }
    return v;
  }

  fun Acquire(reader: bool) {
    var swapped: (holds: bool, head: bool, pred: int);
    Call(eInitContext, (p = this, id = me));
    send word, eSwap, (p = this, id = me, reader = reader);
    receive { case eSwapped: (s: (holds: bool, head: bool, pred: int)) { swapped = s; } }
    if (swapped.holds) { return; }
    if (!swapped.head) {
      Call(eLink, (p = this, id = me, pred = swapped.pred));
      while (Read(eReadSpin) != 0) { }
    }
    if (reader) { LeaveQueue(true); return; }
    while (Read(eReadReaders) != 0) { }
  }

  // ReaderCheckNext .. ReaderPassOn, and the writer's release: clear the tail or wake the
  // node behind, once it has linked.
  fun LeaveQueue(reader: bool) {
    var left: bool;
    if (Read(eReadNext) == -1) {
      send word, eLeaveCas, (p = this, id = me, reader = reader);
      receive { case eLeft: (b: bool) { left = b; } }
      if (left) { return; }
      while (Read(eReadNext) == -1) { }
    }
    Call(eWake, (p = this, id = me, reader = reader));
  }

  fun ReaderRelease() { Call(eReaderRelease, (p = this, id = me)); }

  fun WriterRelease() { LeaveQueue(false); }
}
