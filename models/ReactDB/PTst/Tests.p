// Workloads of tests/Contend.Coyote/ReactDB (those of specs/ReactDB, without the shared
// context), two containers, and the spec's mutants as test cases that must fail.
// Keys: 1 and 2 are acct0's rows 0 and 1 (container 0), 3 is acct1's row 0 (container 1).

fun Rd(k: int): Op { return (kind = READ, key = k, sub = -1); }
fun Wr(k: int): Op { return (kind = WRITE, key = k, sub = -1); }
fun Bl(k: int): Op { return (kind = BLIND, key = k, sub = -1); }
fun Cl(n: int): Op { return (kind = CALL, key = 0, sub = n); }
fun Node2(root: int, container: int, a: Op, b: Op): NodeSpec {
  var s: seq[Op]; s += (0, a); s += (1, b); return (root = root, container = container, ops = s);
}
fun Node1(root: int, container: int, a: Op): NodeSpec {
  var s: seq[Op]; s += (0, a); return (root = root, container = container, ops = s);
}
fun Roots(): seq[int] { var s: seq[int]; s += (0, 0); s += (1, 2); return s; }

// Transfers: T (node 0, container 0) writes key 1 and calls node 1 on container 1, which writes
// key 3; U (node 2, container 1) writes key 3 and calls node 3 on container 0, which writes key 2.
fun Transfers(): seq[NodeSpec] {
  var s: seq[NodeSpec];
  s += (0, Node2(0, 0, Wr(1), Cl(1)));
  s += (1, Node1(0, 1, Wr(3)));
  s += (2, Node2(2, 1, Wr(3), Cl(3)));
  s += (3, Node1(2, 0, Wr(2)));
  return s;
}

// Blind write (proofs/ReactDB.md, 4): T reads x (key 1) and calls a child that overwrites w
// (key 3) without reading it; U writes w and calls a child that writes x.
fun BlindWrite(): seq[NodeSpec] {
  var s: seq[NodeSpec];
  s += (0, Node2(0, 0, Rd(1), Cl(1)));
  s += (1, Node1(0, 1, Bl(3)));
  s += (2, Node2(2, 1, Wr(3), Cl(3)));
  s += (3, Node1(2, 0, Wr(1)));
  return s;
}

fun NoMutants(): Mutants { return (paperLinear = false, commitBeforeWaiting = false); }

fun Cfg(nodes: seq[NodeSpec], threads: int, engineThreads: bool, m: Mutants): Config {
  return (nodes = nodes, roots = Roots(), containers = 2, threads = threads, engineThreads = engineThreads, mutants = m);
}

fun Launch(cfg: Config) {
  var db: machine; var executors: seq[machine]; var c: int; var r: int;
  announce eConfig, cfg;
  db = new Db();
  while (c < cfg.containers) { executors += (c, new Executor(cfg.threads)); c = c + 1; }
  foreach (r in cfg.roots) { new Node((cfg = cfg, id = r, parent = default(machine), db = db, executors = executors)); }
}

machine TestTransfers { start state S { entry { Launch(Cfg(Transfers(), 1, true, NoMutants())); } } }
machine TestBlindWrite { start state S { entry { Launch(Cfg(BlindWrite(), 1, true, NoMutants())); } } }
// The paper's executor, a thread kept while waiting: one thread per container deadlocks
// (ReactDBPaperPoolOf1), two do not (ReactDBPoolOf2).
machine TestPaperPoolOf1 { start state S { entry { Launch(Cfg(Transfers(), 1, false, NoMutants())); } } }
machine TestPaperPoolOf2 { start state S { entry { Launch(Cfg(Transfers(), 2, false, NoMutants())); } } }
machine TestMutantPaperLinear { start state S { entry { var m: Mutants; m = NoMutants(); m.paperLinear = true; Launch(Cfg(BlindWrite(), 1, true, m)); } } }
machine TestMutantCommitBeforeWaiting { start state S { entry { var m: Mutants; m = NoMutants(); m.commitBeforeWaiting = true; Launch(Cfg(Transfers(), 1, true, m)); } } }

test tcTransfers [main=TestTransfers]: assert Serializable, ExactlyOnce, ResultsBeforeCommit, Termination in { TestTransfers, Db, Executor, Node };
test tcBlindWrite [main=TestBlindWrite]: assert Serializable, ExactlyOnce, ResultsBeforeCommit, Termination in { TestBlindWrite, Db, Executor, Node };
test tcPaperPoolOf1 [main=TestPaperPoolOf1]: assert Serializable, ExactlyOnce, ResultsBeforeCommit, Termination in { TestPaperPoolOf1, Db, Executor, Node };
test tcPaperPoolOf2 [main=TestPaperPoolOf2]: assert Serializable, ExactlyOnce, ResultsBeforeCommit, Termination in { TestPaperPoolOf2, Db, Executor, Node };
test tcMutantPaperLinear [main=TestMutantPaperLinear]: assert Serializable, ExactlyOnce, ResultsBeforeCommit, Termination in { TestMutantPaperLinear, Db, Executor, Node };
test tcMutantCommitBeforeWaiting [main=TestMutantCommitBeforeWaiting]: assert Serializable, ExactlyOnce, ResultsBeforeCommit, Termination in { TestMutantCommitBeforeWaiting, Db, Executor, Node };

// Non-vacuity: a root commits on each workload.
test tcTransfersCommitReachable [main=TestTransfers]: assert CommitReachable in { TestTransfers, Db, Executor, Node };
test tcBlindWriteCommitReachable [main=TestBlindWrite]: assert CommitReachable in { TestBlindWrite, Db, Executor, Node };
