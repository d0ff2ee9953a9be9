// Chiller in P, at the level of specs/Chiller/Chiller.tla: one coordinator machine per
// transaction (steps 3-5 of Section 3.3), one primary machine per partition (outer participant
// and inner host), one machine per replica copy (ReplicaReceive, ReplicaApply, and the gather of a
// recovery), and a cluster manager (Zookeeper's role, assumed reliable). Any copy or coordinator
// the configuration allows to fail may crash right after any step it takes, its choice, explored
// by the checker; the network (Network.p) delivers every message, in any order, perhaps twice.
// Recovered: a replica's crash (RecoverReplica), a coordinator's (CloseChannels, then the inner
// host's RecoverCoordinator, D7), and a primary's: CloseChannels, the survivors' gather (D9),
// DecidePending on the candidate, ElectPrimary and RecoveryCommit, as the engine does them
// (ChillerReplica.OnView .. Decide, ChillerCluster.Promote).

// One transaction: the keys it reads or writes, those it writes, its inner host's partition
// (its keys there are its inner region, the others its outer region), and whether the inner
// host's constraint check may fail (InnerReject).
type TxnSpec = (ks: set[int], writes: set[int], inner: int, mayAbort: bool);

// Deliberately broken copies of one step each (specs/Chiller/MCChiller.tla's mutants, and the
// engine's ChillerMutants of the same names).
// redoesDoubledDelegation is the model's own: an inner host that takes a doubled delegation for a
// new one (the engine's OnDelegate ignores it), caught only because the network doubles.
type Mutants = (outerUnilateralAbort: bool, waitForCutOffReplica: bool, participantTakesOver: bool,
                decideBeforeGather: bool, hostCommitsOnSend: bool, redoesDoubledDelegation: bool);

// partOf: each key's partition; copies: of every partition, the first primary being copy 0;
// mayCrash: the (partition, copy) pairs allowed to crash, a primary among them;
// coordMayCrash: the transactions whose coordinator is allowed to.
type Config = (txns: seq[TxnSpec], partOf: map[int, int], parts: int, copies: int, mayCrash: set[(int, int)], coordMayCrash: set[int], mutants: Mutants);

// What a log entry records (the engine's EntryKind): an inner region; an outer share's locks,
// before its grant is answered (D3: a copy that takes over holds them again); an outer share's
// commit; its release.
enum Kind { KInner, KPrepared, KCommit, KRelease }
type Entry = (t: int, kind: Kind, ks: set[int], writes: set[int], coord: machine);

// Protocol messages.
event eLockOuter: (t: int, coord: machine, ks: set[int]);                              // CoordLockOuter
event eLocked: (p: int, ok: bool);                                                       // its answer (CoordLockDenied when not ok)
event eDelegate: (t: int, coord: machine, ks: set[int], writes: set[int], mayAbort: bool); // CoordDelegate
event eReplicate: (p: int, sq: int, e: Entry, from: machine);
event eAck: (copy: int, sq: int);                                                       // the replica's receipt
event eNotify: (t: int, copy: int);                                                      // ReplicaApply's notice (D6)
event eInnerAbort: int;                                                                  // InnerReject's notice
event eOuterDecision: (t: int, commit: bool, writes: set[int], coord: machine);          // OuterCommit / OuterRelease
event eOuterDone: int;
event eView: (p: int, copies: set[int]);                                                 // the partition's configuration
event eCrashed: (p: int, copy: int, who: machine);                                      // a copy stopped (to the manager)
event eCoordCrashed: int;                                                                // a coordinator stopped (to the manager)
event eCoordLost: int;                                                                   // CloseChannels: its channels closed
event eAskOutcome: (t: int, asker: int);                                                 // a share's question to the inner host
event eTakeoverDecision: (t: int, commit: bool);                                         // RecoverCoordinator's answer
// A primary's recovery.
event eRecover: (epoch: int, others: map[int, machine], fence: set[machine]);            // the manager to the candidate
event eGatherRequest: (epoch: int, candidate: machine, fromSeq: int, fence: set[machine]);
event eGatherReply: (epoch: int, copy: int, applied: int, entries: map[int, Entry]);
event eGatherFill: (epoch: int, entries: map[int, Entry], from: machine);
event eGatherDone: (epoch: int, copy: int);
event ePromoted: (p: int, copy: int, primary: machine, committed: set[int]);             // DecidePending done: the candidate takes over
event eElected: (p: int, old: machine, primary: machine, copy: int, copies: set[int], committed: set[int]); // ElectPrimary

// What the monitors observe.
event eConfig: Config;
event eOutcome: (t: int, p: int, committed: bool);   // a partition ended t's share
event eCoordDecided: (t: int, commit: bool);         // CoordLearnCommit / CoordLearnAbort / a denial
event eTxnEnded: int;                                // CoordFinish
event eLogged: (p: int, sq: int, t: int);            // the primary's log entry sq
event eApplied: (p: int, copy: int, sq: int, t: int);
event eSkipped: (p: int, copy: int, sq: int);        // recovery skipped a number no survivor held (D5)
event eCopyCrashed: (p: int, copy: int);
event eShareOpened: (t: int, p: int);                // a partition holds something of t
event eSharesLost: int;                              // a primary crashed: what only it held is gone
event eTakenOver: (t: int, p: int, commit: bool);    // RecoverCoordinator: the inner host decided t
event eCoordStopped: int;                            // a coordinator crashed
event eRecoveryCommit: (t: int, p: int);             // a new primary holds t's inner region
event ePrimaryElected: (p: int, copy: int);
