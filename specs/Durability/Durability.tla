----------------------------- MODULE Durability -----------------------------
(***************************************************************************)
(* The single-node engine's durability: value logging with epoch group     *)
(* commit, checkpoints, and recovery after a crash, in the shape of SiloR  *)
(* (Zheng et al., OSDI 2014): each committed transaction's writes are      *)
(* logged with its commit id; a worker's records go to its logger's file;  *)
(* a logger writes what its workers committed, marks the epochs it now     *)
(* holds whole, and syncs; the durable epoch is the minimum over loggers   *)
(* of what each has synced; a transaction is acknowledged only when its    *)
(* epoch is durable; recovery replays the checkpoint, then the logs up to  *)
(* the durable epoch, the newest commit id of a row winning.               *)
(*                                                                         *)
(* The concurrency control protocol is abstracted to its commit point:     *)
(* Commit is one step, taken while the transaction holds its rows (2PL's   *)
(* locks, Silo's write locks after validation, StealDB's queue locks),     *)
(* so commits are serial here and their order is the conflict order.      *)
(* The engine implements a step's commit id and append in                  *)
(* src/Engine/Durability/EpochLog.cs (WorkerLog.Commit).                   *)
(*                                                                         *)
(* Decisions where the anchor paper leaves a choice:                       *)
(* - A checkpoint is built from the previous checkpoint and the log, not    *)
(*   by scanning the tables (SiloR scans its tree): 2PL writes a row in    *)
(*   place before it commits, so a scan would need each protocol's lock    *)
(*   word to tell a committed value from a dirty one; the log holds only   *)
(*   committed values.  It still runs beside the workers ("fuzzy"): it     *)
(*   covers the durable epoch it read when it began, and the records of    *)
(*   later epochs stay in the log (CheckpointScan, CheckpointEnd).         *)
(* - Recovery ends by writing a checkpoint of what it recovered and        *)
(*   starting a new generation of log files (RecoverInstall): records the  *)
(*   durable epoch did not cover, which the crashed run never acknowledged,*)
(*   are then never read again, even once later epochs pass them.          *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Worker,      \* the engine's workers
    Logger,      \* the logger threads, each with its own file
    LoggerOf,    \* LoggerOf[w]: the logger that drains worker w's buffer
    Key,         \* the rows
    Txn,         \* every transaction a client submits, each once
    Ops,         \* Ops[t] = [worker |-> w, reads |-> R, writes |-> W], R and W sets of keys
    MaxEpoch,    \* the epoch stops advancing here (bounds the model)
    MaxCrashes,  \* how many times the process may crash
    Scale,       \* commit ids of epoch e are e * Scale .. e * Scale + Scale - 1 (the engine: e << 32)
    Init,        \* model value: the value a row was loaded with
    None         \* model value: no state recorded

ASSUME /\ LoggerOf \in [Worker -> Logger]
       /\ \A t \in Txn : Ops[t].worker \in Worker /\ Ops[t].reads \cup Ops[t].writes \subseteq Key
       /\ MaxEpoch \in Nat \ {0} /\ MaxCrashes \in Nat /\ Scale > Cardinality(Txn)

VARIABLES
    phase,          \* "running", "crashed" (memory gone), "recovering" (recovery read the disk)
    epoch,          \* the global epoch workers read at their commit point (EpochLog's epoch)
    store,          \* in memory: store[k] = [val |-> writer or Init, cid |-> its commit id]
    lastCid,        \* in memory: lastCid[w], the last commit id worker w gave out
    buffer,         \* in memory: buffer[w], w's records its logger has not taken yet
    file,           \* on disk or in the OS cache: file[l], logger l's records and epoch marks
    synced,         \* synced[l]: how long a prefix of file[l] a sync has made durable
    loggerDurable,  \* in memory: the epoch logger l's last sync covers
    durable,        \* in memory: the durable epoch, what an acknowledgement waits for
    ckpt,           \* on disk: the checkpoint [epoch |-> c, rows |-> [Key -> [val, cid]]]
    scan,           \* in memory: the checkpoint being built, or None
    recovered,      \* in memory: what the current recovery read, or None
    crashes,        \* crashes so far
    \* The client's view and the history, which a crash does not erase:
    committed,      \* transactions that committed in some run
    acked,          \* transactions whose caller was told "committed"
    pending,        \* in memory: committed in this run, their callers not yet answered
    info,           \* info[t]: t's commit id, epoch, and the writer of each row it read or overwrote
    interrupted     \* the state a recovery cut short by a crash had read, or None

vars == <<phase, epoch, store, lastCid, buffer, file, synced, loggerDurable, durable,
          ckpt, scan, recovered, crashes, committed, acked, pending, info, interrupted>>

Max(S) == CHOOSE x \in S : \A y \in S : y <= x
Min(S) == CHOOSE x \in S : \A y \in S : x <= y

Row == [val : Txn \cup {Init}, cid : Nat]
Record == [kind : {"txn"}, txn : Txn, epoch : Nat, cid : Nat]
Mark == [kind : {"mark"}, epoch : Nat]
InitRows == [k \in Key |-> [val |-> Init, cid |-> 0]]
NoInfo == [cid |-> 0, epoch |-> 0, from |-> [k \in {} |-> Init]]

TypeOK ==
    /\ phase \in {"running", "crashed", "recovering"}
    /\ epoch \in 1..MaxEpoch + 1
    /\ store \in [Key -> Row] \cup {None}
    /\ lastCid \in [Worker -> Nat]
    /\ \A w \in Worker : buffer[w] \in Seq(Record)
    /\ \A l \in Logger : file[l] \in Seq(Record \cup Mark) /\ synced[l] \in 0..Len(file[l])
    /\ loggerDurable \in [Logger -> Nat]
    /\ durable \in Nat
    /\ ckpt \in [epoch : Nat, rows : [Key -> Row]]
    /\ scan = None \/ scan \in [target : Nat, rows : [Key -> Row], done : SUBSET Logger]
    /\ recovered = None \/ recovered \in [epoch : Nat, rows : [Key -> Row]]
    /\ crashes \in 0..MaxCrashes
    /\ committed \subseteq Txn /\ acked \subseteq committed /\ pending \subseteq committed \ acked
    /\ interrupted = None \/ interrupted \in [epoch : Nat, rows : [Key -> Row]]

Init_ ==
    /\ phase = "running"
    /\ epoch = 1
    /\ store = InitRows
    /\ lastCid = [w \in Worker |-> 0]
    /\ buffer = [w \in Worker |-> << >>]
    /\ file = [l \in Logger |-> << >>]
    /\ synced = [l \in Logger |-> 0]
    /\ loggerDurable = [l \in Logger |-> 0]
    /\ durable = 0
    \* The loaded state: the checkpoint the engine writes when it opens an empty directory.
    /\ ckpt = [epoch |-> 0, rows |-> InitRows]
    /\ scan = None
    /\ recovered = None
    /\ crashes = 0
    /\ committed = {}
    /\ acked = {}
    /\ pending = {}
    /\ info = [t \in Txn |-> NoInfo]
    /\ interrupted = None

(***************************************************************************)
(* Applying records: the newest commit id of a row wins, whatever order    *)
(* they come in, so any order of files, and replaying one twice, give one  *)
(* state.  DirectoryRecovery.Put in the engine.                            *)
(***************************************************************************)
ApplyOne(rows, r) ==
    [k \in Key |-> IF k \in Ops[r.txn].writes /\ r.cid > rows[k].cid
                   THEN [val |-> r.txn, cid |-> r.cid] ELSE rows[k]]

RECURSIVE ApplySeq(_, _)
ApplySeq(rows, s) == IF s = << >> THEN rows ELSE ApplySeq(ApplyOne(rows, Head(s)), Tail(s))

\* The records of s whose epoch is in lo+1..hi.
Between(s, lo, hi) == SelectSeq(s, LAMBDA e : e.kind = "txn" /\ lo < e.epoch /\ e.epoch <= hi)

LastMark(s) == LET marks == {s[i].epoch : i \in {j \in 1..Len(s) : s[j].kind = "mark"}}
               IN IF marks = {} THEN 0 ELSE Max(marks)

RECURSIVE ConcatFiles(_, _)
ConcatFiles(order, s) == IF order = << >> THEN s ELSE ConcatFiles(Tail(order), s \o file[Head(order)])

LoggerOrder == CHOOSE order \in [1..Cardinality(Logger) -> Logger] : \A l \in Logger : \E i \in DOMAIN order : order[i] = l

(***************************************************************************)
(* The steps.                                                              *)
(***************************************************************************)

\* A transaction commits on its worker.  Under its rows' locks and its own
\* buffer's lock it reads the epoch, takes a commit id larger than every
\* version it read or overwrote and than its worker's last (Silo's rule,
\* here for every protocol), installs its writes and appends its record.
\* WorkerLog.Commit.
CommitId(t) ==
    Max({epoch * Scale, lastCid[Ops[t].worker] + 1} \cup
        {store[k].cid + 1 : k \in Ops[t].reads \cup Ops[t].writes})

Commit(t) ==
    /\ phase = "running"
    /\ t \notin committed
    /\ LET w == Ops[t].worker
           c == CommitId(t)
       IN /\ c < (epoch + 1) * Scale
          /\ store' = [k \in Key |-> IF k \in Ops[t].writes THEN [val |-> t, cid |-> c] ELSE store[k]]
          /\ lastCid' = [lastCid EXCEPT ![w] = c]
          /\ buffer' = [buffer EXCEPT ![w] = Append(@, [kind |-> "txn", txn |-> t, epoch |-> epoch, cid |-> c])]
          /\ committed' = committed \cup {t}
          /\ pending' = pending \cup {t}
          /\ info' = [info EXCEPT ![t] = [cid |-> c, epoch |-> epoch,
                         from |-> [k \in Ops[t].reads \cup Ops[t].writes |-> store[k].val]]]
    /\ UNCHANGED <<phase, epoch, file, synced, loggerDurable, durable, ckpt, scan, recovered, crashes, acked, interrupted>>

\* The caller hears "committed" once the transaction's epoch is durable.
\* WorkerLog.Hold and EpochLog's Logger.AnswerUpTo.
Acknowledged(t) == info[t].epoch <= durable

\* The calls still to answer once t's is: each is answered once (a pooled
\* request is reused after its answer is read).
AnsweredAll(t) == pending \ {t}

Acknowledge(t) ==
    /\ phase = "running"
    /\ t \in pending
    /\ Acknowledged(t)
    /\ acked' = acked \cup {t}
    /\ pending' = AnsweredAll(t)
    /\ UNCHANGED <<phase, epoch, store, lastCid, buffer, file, synced, loggerDurable, durable,
                   ckpt, scan, recovered, crashes, committed, info, interrupted>>

\* The epoch advances (EpochLog.BeginRound, logger 0's once an epoch length).
AdvanceEpoch ==
    /\ phase = "running"
    /\ epoch < MaxEpoch
    /\ epoch' = epoch + 1
    /\ UNCHANGED <<phase, store, lastCid, buffer, file, synced, loggerDurable, durable,
                   ckpt, scan, recovered, crashes, committed, acked, pending, info, interrupted>>

\* A logger reads the epoch G, takes its workers' buffers (each under the
\* worker's buffer lock), appends them to its file and then a mark: every
\* record of an epoch before G is now in the file, since a commit that
\* reads an epoch before G took its buffer lock before this step did.
\* EpochLog's Logger.Round, its first half.
Collect(l) ==
    /\ phase = "running"
    /\ LET mine == {w \in Worker : LoggerOf[w] = l}
           order == CHOOSE o \in [1..Cardinality(mine) -> mine] : \A w \in mine : \E i \in DOMAIN o : o[i] = w
           RECURSIVE Gather(_)
           Gather(i) == IF i > Len(order) THEN << >> ELSE buffer[order[i]] \o Gather(i + 1)
       IN /\ epoch - 1 > LastMark(file[l]) \/ \E w \in mine : buffer[w] # << >>
          /\ file' = [file EXCEPT ![l] = @ \o Gather(1) \o << [kind |-> "mark", epoch |-> epoch - 1] >>]
          /\ buffer' = [w \in Worker |-> IF w \in mine THEN << >> ELSE buffer[w]]
    /\ UNCHANGED <<phase, epoch, store, lastCid, synced, loggerDurable, durable,
                   ckpt, scan, recovered, crashes, committed, acked, pending, info, interrupted>>

\* The durable epoch: what every logger has synced.
DurableEpoch(byLogger) == Min({byLogger[l] : l \in Logger})

\* A logger syncs its file (fdatasync) and publishes the epoch its last mark
\* covers; the durable epoch follows.  Logger.Round's end, EpochLog.Publish.
Sync(l) ==
    /\ phase = "running"
    /\ synced[l] < Len(file[l])
    /\ synced' = [synced EXCEPT ![l] = Len(file[l])]
    /\ LET now == [loggerDurable EXCEPT ![l] = Max({@, LastMark(file[l])})]
       IN /\ loggerDurable' = now
          /\ durable' = Max({durable, DurableEpoch(now)})
    /\ UNCHANGED <<phase, epoch, store, lastCid, buffer, file, ckpt, scan, recovered, crashes, committed, acked, pending, info, interrupted>>

\* A checkpoint begins: it will cover the durable epoch it reads now.
\* The engine does not yet checkpoint while it serves: it checkpoints when it
\* opens its directory (DirectoryRecovery.WriteCheckpoint), so its log grows
\* until the next open.  These three steps are the design it is to follow.
CheckpointBegin ==
    /\ phase = "running"
    /\ scan = None
    /\ durable > ckpt.epoch
    /\ scan' = [target |-> durable, rows |-> ckpt.rows, done |-> {}]
    /\ UNCHANGED <<phase, epoch, store, lastCid, buffer, file, synced, loggerDurable, durable,
                   ckpt, recovered, crashes, committed, acked, pending, info, interrupted>>

\* It folds in one logger's durable records of the epochs it covers, while
\* the workers and loggers go on.
CheckpointScan(l) ==
    /\ phase = "running"
    /\ scan # None /\ l \notin scan.done
    /\ scan' = [scan EXCEPT !.rows = ApplySeq(@, Between(SubSeq(file[l], 1, synced[l]), ckpt.epoch, scan.target)),
                            !.done = @ \cup {l}]
    /\ UNCHANGED <<phase, epoch, store, lastCid, buffer, file, synced, loggerDurable, durable,
                   ckpt, recovered, crashes, committed, acked, pending, info, interrupted>>

\* The epoch a finished checkpoint says it covers.
CheckpointEpoch == scan.target

\* It is written (to a new file, synced, then renamed over the old one), and
\* the records it covers leave the log (whole segments are deleted).
CheckpointEnd ==
    /\ phase = "running"
    /\ scan # None /\ scan.done = Logger
    /\ LET c == CheckpointEpoch
           keep(s) == SelectSeq(s, LAMBDA e : e.epoch > c)
       IN /\ ckpt' = [epoch |-> c, rows |-> scan.rows]
          /\ file' = [l \in Logger |-> keep(SubSeq(file[l], 1, synced[l])) \o SubSeq(file[l], synced[l] + 1, Len(file[l]))]
          /\ synced' = [l \in Logger |-> Len(keep(SubSeq(file[l], 1, synced[l])))]
    /\ scan' = None
    /\ UNCHANGED <<phase, epoch, store, lastCid, buffer, loggerDurable, durable,
                   recovered, crashes, committed, acked, pending, info, interrupted>>

\* The process dies.  Memory is gone; each file keeps its synced prefix and
\* perhaps some of what was written after it (a torn record at the end is
\* one whose checksum fails, which recovery treats as not written).
Crash ==
    /\ phase # "crashed"
    /\ crashes < MaxCrashes
    /\ \E kept \in [Logger -> 0..Max({Len(file[l]) : l \in Logger})] :
          /\ \A l \in Logger : synced[l] <= kept[l] /\ kept[l] <= Len(file[l])
          /\ file' = [l \in Logger |-> SubSeq(file[l], 1, kept[l])]
          /\ synced' = kept
    /\ phase' = "crashed"
    /\ crashes' = crashes + 1
    /\ store' = None
    /\ buffer' = [w \in Worker |-> << >>]
    /\ loggerDurable' = [l \in Logger |-> 0]
    /\ durable' = 0
    /\ pending' = {}  \* the calls not answered end with an error: their outcome is unknown
    /\ scan' = None
    /\ recovered' = None
    /\ interrupted' = IF phase = "recovering" THEN recovered ELSE interrupted
    /\ UNCHANGED <<epoch, lastCid, ckpt, committed, acked, info>>

\* Recovery reads the disk: the durable epoch is what every file's marks
\* show (or the checkpoint's, whichever is later), and the state is the
\* checkpoint with the records of the epochs after it up to that one.
\* DirectoryRecovery.ReplayLogs.
RecoveredEpoch == Max({ckpt.epoch, DurableEpoch([l \in Logger |-> LastMark(file[l])])})

Replay(d) == ApplySeq(ckpt.rows, Between(ConcatFiles(LoggerOrder, << >>), ckpt.epoch, d))

\* What the disk's log files are once recovery has read them: untouched until
\* RecoverInstall has written the checkpoint that replaces them.
LogsAfterRead == file

RecoverRead ==
    /\ phase = "crashed"
    /\ LET d == RecoveredEpoch IN recovered' = [epoch |-> d, rows |-> Replay(d)]
    /\ phase' = "recovering"
    /\ file' = LogsAfterRead
    /\ synced' = [l \in Logger |-> Len(LogsAfterRead[l])]
    /\ UNCHANGED <<epoch, store, lastCid, buffer, loggerDurable, durable,
                   ckpt, scan, crashes, committed, acked, pending, info, interrupted>>

\* Recovery writes what it read as the checkpoint (atomically, by rename),
\* starts a new generation of log files, and the engine serves again from
\* the epoch after the recovered one.  DirectoryRecovery.Open and
\* DirectoryRecovery.WriteCheckpoint.
RecoverInstall ==
    /\ phase = "recovering"
    /\ ckpt' = recovered
    /\ file' = [l \in Logger |-> << >>]
    /\ synced' = [l \in Logger |-> 0]
    /\ store' = recovered.rows
    /\ epoch' = recovered.epoch + 1
    /\ loggerDurable' = [l \in Logger |-> recovered.epoch]
    /\ durable' = recovered.epoch
    /\ lastCid' = [w \in Worker |-> 0]
    /\ phase' = "running"
    /\ recovered' = None
    /\ interrupted' = None
    /\ UNCHANGED <<buffer, scan, crashes, committed, acked, pending, info>>

Done ==
    /\ phase = "running" /\ committed = Txn /\ epoch >= MaxEpoch
    /\ UNCHANGED vars

Next ==
    \/ \E t \in Txn : Commit(t) \/ Acknowledge(t)
    \/ AdvanceEpoch
    \/ \E l \in Logger : Collect(l) \/ Sync(l) \/ CheckpointScan(l)
    \/ CheckpointBegin \/ CheckpointEnd
    \/ Crash \/ RecoverRead \/ RecoverInstall
    \/ Done

Spec == Init_ /\ [][Next]_vars

(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)

\* The state the engine serves, or recovery has read: rows by key.
Serving == IF phase = "running" THEN store ELSE IF phase = "recovering" THEN recovered.rows ELSE None

\* The orders S could have run in one after another.
Orders(S) == {o \in [1..Cardinality(S) -> S] : \A t \in S : \E i \in DOMAIN o : o[i] = t}

\* In the order o, the last writer of k before position i (Init: none).
WriterBefore(o, k, i) ==
    LET ws == {j \in 1..i - 1 : k \in Ops[o[j]].writes}
    IN IF ws = {} THEN Init ELSE o[Max(ws)]

\* S ran serially in the order o: each member read and overwrote what the
\* last writer before it in o wrote, and that writer is in S (S is closed
\* under dependencies).  Not necessarily in commit-id order: a transaction
\* that overwrites a row another read may take the smaller commit id (as in
\* Silo), and only writes to one row are ordered by commit id.
SerialIn(S, o) ==
    \A i \in DOMAIN o : \A k \in DOMAIN info[o[i]].from :
        /\ info[o[i]].from[k] = WriterBefore(o, k, i)
        /\ info[o[i]].from[k] \in S \cup {Init}

\* What running S in the order o leaves in each row.
SerialState(S, o) ==
    [k \in Key |-> LET v == WriterBefore(o, k, Cardinality(S) + 1)
                   IN [val |-> v, cid |-> IF v = Init THEN 0 ELSE info[v].cid]]

\* Every acknowledged transaction's writes are in the state served or
\* recovered, and that state is a serial execution of a set of committed
\* transactions closed under dependencies.
RecoveredInv ==
    Serving # None =>
        \E S \in SUBSET committed : acked \subseteq S /\
            \E o \in Orders(S) : SerialIn(S, o) /\ Serving = SerialState(S, o)

\* A recovery a crash cut short, run again, reads the same state.
RecoveryIdempotentInv == phase = "recovering" /\ interrupted # None => recovered = interrupted

\* A commit id carries its epoch (so the durable epoch orders with commit ids).
CommitIdEpochInv == \A t \in committed : info[t].cid \div Scale = info[t].epoch

\* Reachability: the model does reach a crash after an acknowledgement, and
\* a recovery a crash interrupted.
AckedThenRecoveredReachable == ~(phase = "running" /\ crashes > 0 /\ acked # {})
InterruptedRecoveryReachable == ~(phase = "recovering" /\ interrupted # None)
CheckpointedReachable == ~(ckpt.epoch > 0 /\ committed # {})
=============================================================================
