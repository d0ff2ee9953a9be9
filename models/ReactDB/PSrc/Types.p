// ReactDB in P, at the level of specs/ReactDB/ReactDB.tla and the engine's ReactDbEngine:
// containers whose executors have a fixed number of threads, (sub-)transactions as machines
// that run their logic on a thread of their container, asynchronous calls into other
// containers, completion only after every sub-transaction called (Algorithm 1 line 16), and the
// root's commit over OCC (Silo's phases) in the spec's lockFirst order or, as a mutant,
// Algorithm 3 as written. The Db machine holds every record and lock and performs each request
// atomically, as one container's Silo step would.
//
// Left out (the Coyote tests and TLC models cover them): synchronous same-container calls, the
// conservative abort (no workload here puts two sub-transactions of a root in one container),
// user aborts and retries (a root that fails validation aborts and ends).

// One step of a node's logic: read a key, write it (a read-modify-write, validated as a read
// too), overwrite it blindly, or call node `sub` (asynchronously: it runs on its own container).
enum OpKind { READ, WRITE, BLIND, CALL }
type Op = (kind: OpKind, key: int, sub: int);
// A (sub-)transaction: its root's node id, its container, its logic.
type NodeSpec = (root: int, container: int, ops: seq[Op]);

// Deliberately broken steps (specs/ReactDB's models of the same names).
type Mutants = (paperLinear: bool, commitBeforeWaiting: bool);

// engineThreads: true, a node waiting for its children gives its thread back (the engine's
// executors, ReactDB.tla D1); false, it keeps it until it completes (the paper's executor).
type Config = (nodes: seq[NodeSpec], roots: seq[int], containers: int, threads: int, engineThreads: bool, mutants: Mutants);

// What a node read and wrote, passed up to its parent with its completion (Alg. 1 line 20), so
// that the root commits with its whole tree's read and write sets: per container, key, value read.
type Rec = (container: int, key: int, read: bool, write: bool, val: int);

// Db requests; each answered by one event to `from`.
event eRead: (from: machine, key: int);
event eValue: int;
event eLock: (from: machine, root: int, ks: set[int]);
event eValidate: (from: machine, root: int, reads: map[int, int]);
event eVote: bool;
event eInstall: (from: machine, root: int, ks: set[int]);
event eUnlockAll: (from: machine, root: int);
event eDbDone;

// Executors
event eWantThread: machine;
event eThread;
event eFreeThread;

// A child's completion, with its tree's records.
event eChildDone: seq[Rec];

// What the monitors observe.
event eConfig: Config;
event eCalled: int;                        // a node is called (Call: queued on its container)
event eStarted: int;                       // a node's logic starts (Dequeue)
event eCompleted: int;                     // a node completes (Complete)
event eCommitting: int;                    // a root (its node id) starts its commit (BeginCommit)
// A root is named in the Db and below by its writer id, its node id + 1 (0 is the value every
// record has before any commit).
event eInstalledKey: (root: int, key: int);
event eDecided: (root: int, committed: bool, reads: map[int, int], writes: set[int]);
