// Chiller in P, at the level of specs/Chiller/Chiller.tla for the failure-free protocol, a
// replica's failure and a coordinator's: one coordinator machine per transaction (steps 3-5 of
// Section 3.3), one primary machine per partition (outer participant and inner host), one machine
// per replica copy (ReplicaReceive, ReplicaApply), and a cluster manager that removes a crashed
// replica from its partition's configuration (RecoverReplica) and cuts a crashed coordinator off
// (CloseChannels), after which the inner host takes it over (RecoverCoordinator, D7). A replica or
// a coordinator allowed to fail may crash right after any step it takes (its choice, explored by
// the checker). Not modelled yet: a primary's crash and its recovery (GatherPending ..
// RecoveryCommit), which the engine's crash matrix and Coyote tests cover.

// One transaction: the keys it reads or writes, those it writes, its inner host's partition
// (its keys there are its inner region, the others its outer region), and whether the inner
// host's constraint check may fail (InnerReject).
type TxnSpec = (ks: set[int], writes: set[int], inner: int, mayAbort: bool);

// Deliberately broken copies of one step each (specs/Chiller/MCChiller.tla's mutants).
type Mutants = (outerUnilateralAbort: bool, waitForCutOffReplica: bool, participantTakesOver: bool);

// partOf: each key's partition; copies: of every partition, the primary being copy 0;
// mayCrash: the (partition, copy) pairs allowed to crash; coordMayCrash: the transactions whose
// coordinator is allowed to.
type Config = (txns: seq[TxnSpec], partOf: map[int, int], parts: int, copies: int, mayCrash: set[(int, int)], coordMayCrash: set[int], mutants: Mutants);

// Protocol messages.
event eLockOuter: (t: int, coord: machine, ks: set[int]);                              // CoordLockOuter
event eLocked: (p: int, ok: bool);                                                       // its answer (CoordLockDenied when not ok)
event eDelegate: (t: int, coord: machine, ks: set[int], writes: set[int], mayAbort: bool); // CoordDelegate
event eReplicate: (p: int, sq: int, t: int, writes: set[int], inner: bool, coord: machine, from: machine);
event eAck: (copy: int, sq: int);                                                       // the replica's receipt
event eNotify: (t: int, copy: int);                                                      // ReplicaApply's notice (D6)
event eInnerAbort: int;                                                                  // InnerReject's notice
event eOuterDecision: (t: int, commit: bool, writes: set[int], coord: machine);          // OuterCommit / OuterRelease
event eOuterDone: int;
event eView: (p: int, replicas: set[int]);                                               // the partition's configuration
event eCrashed: (p: int, copy: int);
event eCoordCrashed: int;                                                                // a coordinator stopped (to the manager)
event eCoordLost: int;                                                                   // CloseChannels: its channels closed
event eAskOutcome: (t: int, asker: int);                                                 // a share's question to the inner host
event eTakeoverDecision: (t: int, commit: bool);                                         // RecoverCoordinator's answer

// What the monitors observe.
event eConfig: Config;
event eOutcome: (t: int, p: int, committed: bool);   // a partition ended t's share
event eCoordDecided: (t: int, commit: bool);         // CoordLearnCommit / CoordLearnAbort / a denial
event eTxnEnded: int;                                // CoordFinish
event eLogged: (p: int, sq: int, t: int);           // the primary's log entry seq
event eApplied: (p: int, copy: int, sq: int, t: int);
event eReplicaCrashed: (p: int, copy: int);
event eShareOpened: (t: int, p: int);                // a partition holds something of t
event eTakenOver: (t: int, p: int, commit: bool);    // RecoverCoordinator: the inner host decided t
event eCoordStopped: int;                            // a coordinator crashed
