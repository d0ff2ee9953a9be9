// Strife's execution in P, at the level of specs/Strife/StrifeExec.tla: batches whose
// placement the analysis has made (each transaction in a cluster or the residual; the test
// gives the placement, with no conflict between clusters, which is what StrifeAnalysis.tla
// checks the analysis guarantees), worker machines that take clusters and residuals as the
// engine's workers do, a barrier between the phases, residual locks under NO_WAIT (then
// WaitDie), and the overlap of batch b+1's analysis with batch b's run (its conflict-free phase
// once every cluster is taken, and its residual phase). The Strife
// machine holds every shared word and performs each step a worker asks for atomically.

// One operation: the item it touches, and whether it writes it.
type OpSpec = (item: int, write: bool);
// One transaction: its batch (1..), its cluster (0: the residual), its ops, whether its logic
// may abort it at the end, and its WaitDie age (smaller is older).
type TxnSpec = (batch: int, cluster: int, ops: seq[OpSpec], mayAbort: bool, age: int);

// The residual phase's protocol: plain NO_WAIT with retry (the paper's), or NO_WAIT for the
// first maxRetries conflict aborts and WaitDie after (the engine's, StrifeExec.tla
// "nowaitThenWaitDie").
enum CC { NOWAIT, NOWAIT_THEN_WAITDIE }
// StrifeExec.tla's bphase.
enum BPhase { WAITING, ANALYSED, CLUSTERS, RESIDUALS, DONE }

// Deliberately broken copies of one step each (MCStrifeExec.tla's mutants).
type Mutants = (noBarrier: bool, abortKeepsLocks: bool, overlapEarly: bool, retryAfterCommit: bool);

// script: empty, the workers run freely and P's scheduler interleaves them; otherwise a
// driver steps the workers in this order (prefix), then repeats `cycle` forever: a schedule
// written out, to show one that a random scheduler would almost never pick.
type Config = (txns: seq[TxnSpec], batches: int, workers: int, cc: CC, maxRetries: int, overlap: bool,
               mutants: Mutants, prefix: seq[int], cycle: seq[int]);

// A worker's own state, sent with each request and returned updated: the transaction it runs
// (-1: none), its next op, its conflict aborts so far, the rest of the cluster it took.
type WState = (txn: int, pc: int, retries: int, queue: seq[int], ranAgain: bool, finished: bool);

// What the monitors observe.
event eConfig: Config;
event eAnalysed: (b: int, before: BPhase);      // Analyze(b); before: batch b-1's phase then
event eBatchDone: int;                           // FinishBatch(b)
event eTxnStart: (t: int, clustered: bool);      // ClusterStart / ResidualStart
event eUse: (item: int, t: int, write: bool);    // an op touches its item
event eRelease: int;                             // t's attempt ends: it touches nothing more
event eAttemptAborted: (t: int, held: int);      // a conflict abort, and the locks t holds after it
event eTxnEnd: (t: int, committed: bool);        // Finish: commit or the logic's abort
event eRetried: int;                             // a residual attempt aborted on a conflict
event eAllDone;
