// StealDB in P, at the level of specs/StealDB/StealDB.tla (Spec): one worker machine per
// transaction runs a stack of RUNOP frames; the Memory machine holds every shared word (op
// tids, op status, runnable queues, steal contexts, lock queues, transaction phases) and
// performs each spec action on them as one atomic step. The interleaving of the workers'
// requests is what P's scheduler explores.

// Op i of transaction t's DAG: the record it locks, the ops it depends on, whether it may abort,
// whether it writes (with sharedReads, an op that does not locks its record shared).
type OpSpec = (rec: int, deps: set[int], mayAbort: bool, write: bool);
type OpId = (t: int, i: int);
// A steal context <tid, rq position>; t = -1 is the empty context (Bot).
type Token = (t: int, i: int);
// The context a frame took: whose word it came from, and which write to that word it was.
type Hand = (from: int, gen: int, tok: Token);

// Frame pcs, as StealDB.tla's Labels.
enum Pc { CHECK, CLAIM, LOCK, WAIT, STEAL, EXEC }
// Transaction phases.
enum Phase { RUN, COMMIT_REL, ABORT_REL, COMMITTED, ABORTED }
// Op status.
enum Status { NONE, OK, FAILED }
// Steal policies: StealDB, basic work stealing, vanilla 2PL.
enum Policy { QUEUE, BASIC, NOSTEAL }

type Frame = (op: OpId, pc: Pc, pred: int, hand: Hand, hasHand: bool);

// Deliberately broken copies of one step each (MCStealDB.tla's mutants).
// detectNoStealEdges is StealDBDeadlock.tla's MutantNoStealEdges: the detector leaves out every
// frame that runs another transaction's op.
// predEndedExit is MCStealDB.tla's MutantProceedWhenPredEnds (the paper's second wait exit kept
// with shared locks); detectIgnoresReaders is MCStealDBDeadlock.tla's MutantEdgesIgnoreReaders.
type Mutants = (noCas: bool, nonAtomicSteal: bool, earlyRelease: bool, proceedWithoutLock: bool,
                timeoutCancels: bool, noTimeout: bool, detectNoStealEdges: bool,
                predEndedExit: bool, detectIgnoresReaders: bool);

// detect: StealDBDeadlock.tla's DetectorAbort is among a waiter's steps. sharedReads: StealDB.tla's
// SharedReads, reader-writer locks.
type Config = (progs: map[int, seq[OpSpec]], policy: Policy, mutants: Mutants, detect: bool, sharedReads: bool);

// What the monitors observe.
event eTxnStarted: int;
event eTxnDecided: (t: int, committed: bool, ops: int);  // OwnerDecide
event eTxnEnded: int;                                      // OwnerFinish: every lock context released
event eExecuted: OpId;
event eClaimed: OpId;
event eGranted: (rec: int, t: int, shared: bool); // a transaction starts using a record (an op executes on it)
event eReleased: (rec: int, t: int);      // a transaction releases a lock context
event eRequested: (rec: int, t: int);     // a transaction appends a lock context
event eTaken: (from: int, gen: int);      // a steal context is taken from a word
event eRanBy: (op: OpId, by: int);       // an op executed on the worker of transaction `by`
event eClosed: OpId;                      // OwnerCloseOp: a doomed owner runs an op nobody claimed
event eDetectorAbort: (op: OpId, stolenCycle: bool); // DetectorAbort; its cycle runs through a stolen op
