// Three processes, each taking the lock twice with one context: p0 reads then writes, p1
// writes then reads, p2 reads twice; so a reader can find readers holding and a writer
// queued, the case the FIFO order decides.
fun NoMutants(): Mutants {
  return (readerBarges = false, skipReaderWait = false, uncounted = false, leavesUnlinked = false,
          givesUpWoken = false, wakeStores = false, letGoBeforeRead = false, writerEntersRead = false);
}

fun Launch(m: Mutants) { LaunchGivingUp(m, false); }

// With mayGiveUp, each process may give one wait up (GiveUp or HeadGivesUp).
fun LaunchGivingUp(m: Mutants, mayGiveUp: bool) {
  var word: Word;
  var modes: seq[bool];
  word = new Word(m);
  modes += (0, true); modes += (1, false);
  new Proc((word = word, id = 0, modes = modes, mayGiveUp = mayGiveUp));
  modes = default(seq[bool]); modes += (0, false); modes += (1, true);
  new Proc((word = word, id = 1, modes = modes, mayGiveUp = mayGiveUp));
  modes = default(seq[bool]); modes += (0, true); modes += (1, true);
  new Proc((word = word, id = 2, modes = modes, mayGiveUp = mayGiveUp));
}

machine TestLock { start state S { entry { Launch(NoMutants()); } } }
machine TestMutantReaderBarges { start state S { entry { var m: Mutants; m = NoMutants(); m.readerBarges = true; Launch(m); } } }
machine TestMutantSkipReaderWait { start state S { entry { var m: Mutants; m = NoMutants(); m.skipReaderWait = true; Launch(m); } } }
machine TestMutantUncounted { start state S { entry { var m: Mutants; m = NoMutants(); m.uncounted = true; Launch(m); } } }
machine TestMutantLeavesUnlinked { start state S { entry { var m: Mutants; m = NoMutants(); m.leavesUnlinked = true; Launch(m); } } }
machine TestMutantWriterEntersRead { start state S { entry { var m: Mutants; m = NoMutants(); m.writerEntersRead = true; Launch(m); } } }
machine TestGiveUp { start state S { entry { LaunchGivingUp(NoMutants(), true); } } }
machine TestMutantGivesUpWoken { start state S { entry { var m: Mutants; m = NoMutants(); m.givesUpWoken = true; LaunchGivingUp(m, true); } } }
machine TestMutantWakeStores { start state S { entry { var m: Mutants; m = NoMutants(); m.wakeStores = true; LaunchGivingUp(m, true); } } }
machine TestMutantLetGoBeforeRead { start state S { entry { var m: Mutants; m = NoMutants(); m.letGoBeforeRead = true; LaunchGivingUp(m, true); } } }

// Every test case checks every property; models/check knows which must fail, and how.
test tcLock [main=TestLock]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestLock, Word, Proc };
test tcMutantReaderBarges [main=TestMutantReaderBarges]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantReaderBarges, Word, Proc };
test tcMutantSkipReaderWait [main=TestMutantSkipReaderWait]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantSkipReaderWait, Word, Proc };
test tcMutantUncounted [main=TestMutantUncounted]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantUncounted, Word, Proc };
test tcMutantLeavesUnlinked [main=TestMutantLeavesUnlinked]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantLeavesUnlinked, Word, Proc };
test tcMutantWriterEntersRead [main=TestMutantWriterEntersRead]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantWriterEntersRead, Word, Proc };
test tcGiveUp [main=TestGiveUp]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestGiveUp, Word, Proc };
test tcMutantGivesUpWoken [main=TestMutantGivesUpWoken]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantGivesUpWoken, Word, Proc };
test tcMutantWakeStores [main=TestMutantWakeStores]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantWakeStores, Word, Proc };
test tcMutantLetGoBeforeRead [main=TestMutantLetGoBeforeRead]: assert Exclusion, FifoOrder, Progress, Reclaimed in { TestMutantLetGoBeforeRead, Word, Proc };
test tcReadersTogetherReachable [main=TestLock]: assert ReadersTogetherReachable in { TestLock, Word, Proc };
