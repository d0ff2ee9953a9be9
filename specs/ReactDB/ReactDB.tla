------------------------------ MODULE ReactDB ------------------------------
(***************************************************************************)
(* ReactDB's asynchronous nested sub-transactions and its commit protocol  *)
(* (seed 004, Sections 2.2 and 3, Algorithms 1-3).                         *)
(*                                                                         *)
(* Each root transaction is a static tree of (sub-)transactions: node n    *)
(* runs on reactor ReactorOf[n], in that reactor's container, and its      *)
(* logic Ops[n] reads and writes keys of its own reactor and calls other   *)
(* nodes.  A call into the caller's container runs synchronously, on the   *)
(* caller's thread and in the caller's database context (Alg. 2 lines      *)
(* 10-12); any other is enqueued on the destination container's executor   *)
(* (Alg. 2 line 15) and later dequeued by one of its threads (Alg. 1).     *)
(* A (sub-)transaction completes only when its logic is done and all the   *)
(* sub-transactions it called have completed, recursively (Alg. 1 line     *)
(* 16); a sub-transaction then dispatches its result to its parent (line   *)
(* 20), and a root starts the commit protocol (line 18, Alg. 3).           *)
(*                                                                         *)
(* Concurrency control is Silo's OCC, one database context per root and    *)
(* container (`rs`, `ws`): reads record the value read (values name their  *)
(* writer, so a value identifies a version), writes are buffered.          *)
(*                                                                         *)
(* Decisions where the paper is silent or vague (proofs/ReactDB.md, 3):    *)
(* D1 Threads: by default every dequeued (sub-)transaction gets its own    *)
(*    thread (ThreadFree is TRUE).  The paper's executor is a fixed pool   *)
(*    of threads whose scheduler caps ACTIVE ones; a BLOCKED thread lets   *)
(*    another run but keeps its (sub-)transaction until it completes.  A   *)
(*    cap or a pool only removes interleavings, so safety here implies     *)
(*    safety with them; termination does not carry over.  MCReactDB's      *)
(*    PoolOf1/PoolOf2 override ThreadFree: with one thread per container   *)
(*    two roots that call into each other's container deadlock             *)
(*    (ReactDBPaperPoolOf1).  The engine's obligation: a container never   *)
(*    leaves its queue non-empty while every thread of its pool is         *)
(*    BLOCKED on a future, i.e. it admits at most pool-1 (sub-)            *)
(*    transactions that can block at once, or adds a thread when all are   *)
(*    blocked (proofs/ReactDB.md, 3).                                      *)
(* D2 A thread uses its context from dequeue until its (sub-)transaction   *)
(*    completes, waiting for children included.  A sub-transaction         *)
(*    dequeued while another thread holds its context causes the           *)
(*    conservative abort: the whole root transaction is marked failed,     *)
(*    every node still to run skips its logic, and the root aborts.        *)
(* D3 A database context is not thread-safe: adding a key to a write set   *)
(*    is a load and a store (WriteLoad, WriteStore).  This is what makes   *)
(*    "one thread per context" necessary, and the mutant that drops the    *)
(*    rule loses a write.                                                  *)
(* D4 Validation in a container (Silo's phase 1 and 2) locks that          *)
(*    container's write set and checks its read set: every value read is   *)
(*    still current and not locked by another root.  A lock held by        *)
(*    another root fails validation at once (no waiting across             *)
(*    containers, so the linear 2PC cannot deadlock).                      *)
(* D5 Validation = "linear" is Algorithm 3 as written: lock and validate   *)
(*    container by container.  TLC shows it is not serializable when a     *)
(*    later container holds a blind write (proofs/ReactDB.md, 4).          *)
(*    Validation = "lockFirst" takes every container's write locks first,  *)
(*    in the same order, then validates every read set: Silo's order of    *)
(*    phases, across containers.  It is the protocol the engine builds.    *)
(* D6 Remote containers are validated in one global order, ContainerOrder, *)
(*    not in the order Algorithm 3 line 7 finds them along the chain of    *)
(*    sub-transactions.  Validation never waits (D4), so the order decides *)
(*    only which of two conflicting roots fails, not whether a committed   *)
(*    run is serializable; a global order is what a waiting validation     *)
(*    would need against deadlock.  With two containers every order is     *)
(*    the same: a three-container chain order is not checked.              *)
(* D7 Sub-transaction logic has no user abort: a root aborts only through  *)
(*    the conservative abort (D2) or a failed validation.                  *)
(* D8 The root's thread holds its context in the source container from     *)
(*    dequeue to the end of the commit (Alg. 1 lines 5-18 run on one       *)
(*    thread), so an asynchronous call chain that comes back into the      *)
(*    root's container always takes the conservative abort.                *)
(*    ConservativeAbortInv says the abort hits no other root.              *)
(* D9 When its root fails, a running node abandons the rest of its logic   *)
(*    at its next step (Busy).  Its effects are buffered in a context the  *)
(*    abort discards, so running on would change nothing but the time it   *)
(*    takes.                                                               *)
(* D10 A container's queue is a set, and a dequeue takes any of it.  Alg.  *)
(*    1 pops in order, but with several threads per executor what one      *)
(*    popped starts (takes its context) when that thread next runs, so the *)
(*    order in which queued work starts is any order; and a root's retry   *)
(*    is a new attempt that its own thread starts at once, whatever is     *)
(*    queued.  The engine's traces (ReactDBTrace.tla) take steps in such   *)
(*    orders.  A first-in-first-out queue is one of these behaviours, so   *)
(*    every property checked here holds for it too.                        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Root,           \* root transactions; a root's id is its transaction id
    SubTxn,         \* every (sub-)transaction node, roots included
    RootOf,         \* RootOf[n]: the root of n's tree
    Reactor,        \* reactors
    Container,      \* database containers
    ContainerOf,    \* ContainerOf[r]: the container reactor r is mapped to
    ReactorOf,      \* ReactorOf[n]: the reactor node n is invoked on
    Key,            \* keys (records of the reactors' relations)
    KeyReactor,     \* KeyReactor[k]: the reactor that owns k
    Ops,            \* Ops[n]: n's logic, a sequence of [op: {"r", "w"}, key] or [op: "call", sub]
    ContainerOrder, \* a sequence of every container: the order remote containers are validated in
    Validation,     \* "linear" (Algorithm 3) or "lockFirst"
    None,           \* model value: no holder
    InitVal,        \* model value: every key's value before any commit
    NoVal           \* model value: not read

Cont(n) == ContainerOf[ReactorOf[n]]
KeyCont(k) == ContainerOf[KeyReactor[k]]
OpsAt(n) == {Ops[n][i] : i \in 1..Len(Ops[n])}
Children(n) == {o.sub : o \in {p \in OpsAt(n) : p.op = "call"}}
Val == Root \cup {InitVal}

ASSUME /\ Root \subseteq SubTxn /\ RootOf \in [SubTxn -> Root]
       /\ \A r \in Root : RootOf[r] = r
       /\ ContainerOf \in [Reactor -> Container] /\ ReactorOf \in [SubTxn -> Reactor]
       /\ KeyReactor \in [Key -> Reactor]
       /\ \A n \in SubTxn : \A o \in OpsAt(n) :
            IF o.op = "call" THEN o.sub \in SubTxn \ Root /\ RootOf[o.sub] = RootOf[n]
            ELSE o.key \in Key /\ KeyReactor[o.key] = ReactorOf[n]   \* a reactor touches only its own relation
       /\ {ContainerOrder[i] : i \in 1..Len(ContainerOrder)} = Container
       /\ Validation \in {"linear", "lockFirst"}

\* The transaction's whole program, for the serial reference.
TreeKeys(r, kind) ==
    {o.key : o \in {p \in UNION {OpsAt(n) : n \in {m \in SubTxn : RootOf[m] = r}} : p.op = kind}}
RootReads(r) == TreeKeys(r, "r")
RootWrites(r) == TreeKeys(r, "w")

VARIABLES
    status,     \* status[n] \in {"idle", "queued", "running", "waiting", "done"}
    pc,         \* pc[n]: n's next operation
    loaded,     \* loaded[n]: n is between the load and the store of a write (D3)
    buf,        \* buf[n]: the write set n loaded
    queue,      \* queue[c]: the (sub-)transactions queued on container c's executor (D10)
    holder,     \* holder[r][c]: the node whose thread uses r's context in c, or None
    spans,      \* spans[r]: containers where r has a database context
    rs,         \* rs[r][k]: the value r's context recorded reading k (NoVal: not read)
    ws,         \* ws[r][c]: the keys r's context in c has written (buffered)
    failed,     \* failed[r]: the conservative abort hit r
    phase,      \* phase[r] \in {"exec", "locking", "validating", "writing", "aborting", "committed", "aborted"}
    step,       \* step[r]: position in ValOrder(r) of the commit protocol's next container
    lock,       \* lock[k]: the root holding k's commit lock, or None
    store,      \* store[k]: k's committed value (its writer)
    written,    \* written[r]: containers where r's write phase is done
    starts      \* ghost: starts[n] counts how often n's logic was started

vars == <<status, pc, loaded, buf, queue, holder, spans, rs, ws, failed, phase, step,
          lock, store, written, starts>>

Phase == {"exec", "locking", "validating", "writing", "aborting", "committed", "aborted"}

TypeOK ==
    /\ status \in [SubTxn -> {"idle", "queued", "running", "waiting", "done"}]
    /\ pc \in [SubTxn -> Nat]
    /\ loaded \in [SubTxn -> BOOLEAN] /\ buf \in [SubTxn -> SUBSET Key]
    /\ queue \in [Container -> SUBSET SubTxn]
    /\ holder \in [Root -> [Container -> SubTxn \cup {None}]]
    /\ spans \in [Root -> SUBSET Container]
    /\ rs \in [Root -> [Key -> Val \cup {NoVal}]]
    /\ ws \in [Root -> [Container -> SUBSET Key]]
    /\ failed \in [Root -> BOOLEAN]
    /\ phase \in [Root -> Phase] /\ step \in [Root -> Nat]
    /\ lock \in [Key -> Root \cup {None}]
    /\ store \in [Key -> Val]
    /\ written \in [Root -> SUBSET Container]
    /\ starts \in [SubTxn -> Nat]

Init ==
    /\ status = [n \in SubTxn |-> "idle"]
    /\ pc = [n \in SubTxn |-> 1]
    /\ loaded = [n \in SubTxn |-> FALSE] /\ buf = [n \in SubTxn |-> {}]
    /\ queue = [c \in Container |-> {}]
    /\ holder = [r \in Root |-> [c \in Container |-> None]]
    /\ spans = [r \in Root |-> {}]
    /\ rs = [r \in Root |-> [k \in Key |-> NoVal]]
    /\ ws = [r \in Root |-> [c \in Container |-> {}]]
    /\ failed = [r \in Root |-> FALSE]
    /\ phase = [r \in Root |-> "exec"] /\ step = [r \in Root |-> 1]
    /\ lock = [k \in Key |-> None]
    /\ store = [k \in Key |-> InitVal]
    /\ written = [r \in Root |-> {}]
    /\ starts = [n \in SubTxn |-> 0]

-----------------------------------------------------------------------------
(* Executors: Algorithms 1 and 2                                           *)

\* A client submits root r to its container's executor queue.
Submit(r) ==
    /\ status[r] = "idle"
    /\ status' = [status EXCEPT ![r] = "queued"]
    /\ queue' = [queue EXCEPT ![Cont(r)] = @ \cup {r}]
    /\ UNCHANGED <<pc, loaded, buf, holder, spans, rs, ws, failed, phase, step,
                   lock, store, written, starts>>

\* The context r has in c is free for a new thread (D2).
ContextFree(r, c) == holder[r][c] = None

\* A node that runs on a thread of its own: a root, or an asynchronous
\* callee (a synchronous one runs on its caller's thread).
OwnThread(n) == n \in Root \/ Cont(n) # Cont(CHOOSE p \in SubTxn : n \in Children(p))
\* The (sub-)transactions that hold a thread of c's executor: dequeued and
\* not yet complete (a root until the end of its commit).
ThreadsOf(c) == {n \in SubTxn : OwnThread(n) /\ Cont(n) = c /\ status[n] \in {"running", "waiting"}}
\* Whether c's executor has a thread for one more dequeue (D1: always).
ThreadFree(c) == TRUE

\* Alg. 1 lines 5-14: a thread dequeues n, any of c's queued work (D10),
\* and takes its transaction's context in this container, creating it if
\* need be.  If another thread holds it, the conservative abort: r fails
\* and n runs nothing.
DequeueOne(c, n) ==
    LET r == RootOf[n] IN
    /\ n \in queue[c] /\ ThreadFree(c)
    /\ queue' = [queue EXCEPT ![c] = @ \ {n}]
    /\ starts' = [starts EXCEPT ![n] = @ + 1]
    /\ IF ~failed[r] /\ ContextFree(r, c)
       THEN /\ holder' = [holder EXCEPT ![r][c] = n]
            /\ spans' = [spans EXCEPT ![r] = @ \cup {c}]
            /\ status' = [status EXCEPT ![n] = "running"]
            /\ UNCHANGED failed
       ELSE /\ failed' = [failed EXCEPT ![r] = TRUE]
            /\ status' = [status EXCEPT ![n] = "waiting"]
            /\ UNCHANGED <<holder, spans>>
    /\ UNCHANGED <<pc, loaded, buf, rs, ws, phase, step, lock, store, written>>

Dequeue(c) == \E n \in queue[c] : DequeueOne(c, n)

CurOp(n) == Ops[n][pc[n]]
Busy(n) == status[n] = "running" /\ ~failed[RootOf[n]] /\ pc[n] <= Len(Ops[n])

ReadOp(n) ==
    LET r == RootOf[n]  k == CurOp(n).key IN
    /\ Busy(n) /\ CurOp(n).op = "r"
    \* A key r has written is read from its own write set: nothing to record.
    /\ rs' = IF k \in ws[r][Cont(n)] THEN rs ELSE [rs EXCEPT ![r][k] = store[k]]
    /\ pc' = [pc EXCEPT ![n] = @ + 1]
    /\ UNCHANGED <<status, loaded, buf, queue, holder, spans, ws, failed, phase, step,
                   lock, store, written, starts>>

\* D3: a write loads the context's write set ...
WriteLoad(n) ==
    /\ Busy(n) /\ CurOp(n).op = "w" /\ ~loaded[n]
    /\ loaded' = [loaded EXCEPT ![n] = TRUE]
    /\ buf' = [buf EXCEPT ![n] = ws[RootOf[n]][Cont(n)]]
    /\ UNCHANGED <<status, pc, queue, holder, spans, rs, ws, failed, phase, step,
                   lock, store, written, starts>>

\* ... and stores it back with the key added.
WriteStore(n) ==
    /\ Busy(n) /\ CurOp(n).op = "w" /\ loaded[n]
    /\ ws' = [ws EXCEPT ![RootOf[n]][Cont(n)] = buf[n] \cup {CurOp(n).key}]
    /\ loaded' = [loaded EXCEPT ![n] = FALSE]
    /\ pc' = [pc EXCEPT ![n] = @ + 1]
    /\ UNCHANGED <<status, buf, queue, holder, spans, rs, failed, phase, step,
                   lock, store, written, starts>>

\* Alg. 2: a call.  Into the caller's container it runs synchronously: the
\* caller's thread runs the callee's logic, in the caller's context, and
\* resumes when that logic is done (SyncReturn).  Otherwise the callee is
\* enqueued on its container's executor and the caller goes on at once.
Call(n) ==
    LET m == CurOp(n).sub IN
    /\ Busy(n) /\ CurOp(n).op = "call" /\ status[m] = "idle"
    /\ starts' = IF Cont(m) = Cont(n) THEN [starts EXCEPT ![m] = @ + 1] ELSE starts
    /\ IF Cont(m) = Cont(n)
       THEN /\ status' = [status EXCEPT ![m] = "running"]
            /\ UNCHANGED <<pc, queue>>
       ELSE /\ status' = [status EXCEPT ![m] = "queued"]
            /\ queue' = [queue EXCEPT ![Cont(m)] = @ \cup {m}]
            /\ pc' = [pc EXCEPT ![n] = @ + 1]
    /\ UNCHANGED <<loaded, buf, holder, spans, rs, ws, failed, phase, step,
                   lock, store, written>>

\* The synchronous callee's logic is done: the caller's thread resumes.
SyncReturn(n) ==
    LET m == CurOp(n).sub IN
    /\ Busy(n) /\ CurOp(n).op = "call" /\ Cont(m) = Cont(n)
    /\ status[m] \in {"waiting", "done"}
    /\ pc' = [pc EXCEPT ![n] = @ + 1]
    /\ UNCHANGED <<status, loaded, buf, queue, holder, spans, rs, ws, failed, phase, step,
                   lock, store, written, starts>>

\* Blocked in a synchronous call whose callee is still running.
InSyncCall(n) ==
    /\ pc[n] <= Len(Ops[n]) /\ CurOp(n).op = "call"
    /\ Cont(CurOp(n).sub) = Cont(n) /\ status[CurOp(n).sub] = "running"

\* Alg. 1 line 15 returns: the logic is done, or r has failed and the rest
\* of it is skipped.  The thread now waits for the sub-transactions.
FinishLogic(n) ==
    /\ status[n] = "running"
    /\ pc[n] > Len(Ops[n]) \/ failed[RootOf[n]]
    /\ ~InSyncCall(n)
    /\ status' = [status EXCEPT ![n] = "waiting"]
    /\ loaded' = [loaded EXCEPT ![n] = FALSE]
    /\ UNCHANGED <<pc, buf, queue, holder, spans, rs, ws, failed, phase, step,
                   lock, store, written, starts>>

\* Alg. 1 line 16: every sub-transaction n called has completed.
SubTxnsDone(n) == \A m \in Children(n) : status[m] \in {"idle", "done"}

\* Alg. 1 line 20: a sub-transaction completes and dispatches its result;
\* its thread gives the context back.
Complete(n) ==
    /\ n \notin Root /\ status[n] = "waiting" /\ SubTxnsDone(n)
    /\ status' = [status EXCEPT ![n] = "done"]
    /\ holder' = IF holder[RootOf[n]][Cont(n)] = n
                 THEN [holder EXCEPT ![RootOf[n]][Cont(n)] = None] ELSE holder
    /\ UNCHANGED <<pc, loaded, buf, queue, spans, rs, ws, failed, phase, step,
                   lock, store, written, starts>>

-----------------------------------------------------------------------------
(* The coordinator: Algorithm 3, a linear 2PC over OCC                     *)

\* The source container first, then the remote ones in ContainerOrder.
ValOrder(r) == <<Cont(r)>> \o SelectSeq(ContainerOrder, LAMBDA c : c \in spans[r] /\ c # Cont(r))
At(r) == ValOrder(r)[step[r]]
Last(r) == step[r] = Len(ValOrder(r))

\* Alg. 1 line 18: the root's logic and all its sub-transactions are done.
BeginCommit(r) ==
    /\ status[r] = "waiting" /\ phase[r] = "exec" /\ SubTxnsDone(r)
    /\ phase' = [phase EXCEPT ![r] = IF failed[r] THEN "aborting"
                                     ELSE IF Validation = "linear" THEN "validating" ELSE "locking"]
    /\ UNCHANGED <<status, pc, loaded, buf, queue, holder, spans, rs, ws, failed, step,
                   lock, store, written, starts>>

LocksFree(r, c) == \A k \in ws[r][c] : lock[k] \in {None, r}
ReadsValid(r, c) ==
    \A k \in Key : (KeyCont(k) = c /\ rs[r][k] # NoVal) => (store[k] = rs[r][k] /\ lock[k] \in {None, r})
TakeLocks(r, c) == lock' = [k \in Key |-> IF k \in ws[r][c] THEN r ELSE lock[k]]

\* "lockFirst": lock the write set of the next container.
LockStep(r) ==
    /\ phase[r] = "locking"
    /\ IF LocksFree(r, At(r))
       THEN /\ TakeLocks(r, At(r))
            /\ phase' = [phase EXCEPT ![r] = IF Last(r) THEN "validating" ELSE @]
            /\ step' = [step EXCEPT ![r] = IF Last(r) THEN 1 ELSE @ + 1]
       ELSE /\ phase' = [phase EXCEPT ![r] = "aborting"]
            /\ UNCHANGED <<lock, step>>
    /\ UNCHANGED <<status, pc, loaded, buf, queue, holder, spans, rs, ws, failed,
                   store, written, starts>>

\* OCC validation of r's context in container c (Alg. 3 lines 3 and 10).
\* "linear" also locks c's write set here (D4, D5).
Validates(r, c) ==
    IF Validation = "linear" THEN LocksFree(r, c) /\ ReadsValid(r, c) ELSE ReadsValid(r, c)

ValidateStep(r) ==
    /\ phase[r] = "validating"
    /\ IF Validates(r, At(r))
       THEN /\ IF Validation = "linear" THEN TakeLocks(r, At(r)) ELSE UNCHANGED lock
            /\ phase' = [phase EXCEPT ![r] = IF Last(r) THEN "writing" ELSE @]
            /\ step' = [step EXCEPT ![r] = IF Last(r) THEN 1 ELSE @ + 1]
       ELSE /\ phase' = [phase EXCEPT ![r] = "aborting"]
            /\ UNCHANGED <<lock, step>>
    /\ UNCHANGED <<status, pc, loaded, buf, queue, holder, spans, rs, ws, failed,
                   store, written, starts>>

\* Alg. 3 lines 17-19: install and unlock, container by container.
WriteStep(r) ==
    LET c == At(r) IN
    /\ phase[r] = "writing"
    /\ store' = [k \in Key |-> IF k \in ws[r][c] THEN r ELSE store[k]]
    /\ lock' = [k \in Key |-> IF k \in ws[r][c] THEN None ELSE lock[k]]
    /\ written' = [written EXCEPT ![r] = @ \cup {c}]
    /\ phase' = [phase EXCEPT ![r] = IF Last(r) THEN "committed" ELSE @]
    /\ step' = [step EXCEPT ![r] = IF Last(r) THEN @ ELSE @ + 1]
    /\ status' = IF Last(r) THEN [status EXCEPT ![r] = "done"] ELSE status
    /\ holder' = IF Last(r) THEN [holder EXCEPT ![r][Cont(r)] = None] ELSE holder
    /\ UNCHANGED <<pc, loaded, buf, queue, spans, rs, ws, failed, starts>>

\* Alg. 3 lines 22-25: abort every context; release the locks r holds.
AbortAll(r) ==
    /\ phase[r] = "aborting"
    /\ lock' = [k \in Key |-> IF lock[k] = r THEN None ELSE lock[k]]
    /\ phase' = [phase EXCEPT ![r] = "aborted"]
    /\ status' = [status EXCEPT ![r] = "done"]
    /\ holder' = [holder EXCEPT ![r][Cont(r)] = None]
    /\ UNCHANGED <<pc, loaded, buf, queue, spans, rs, ws, failed, step, store, written, starts>>

-----------------------------------------------------------------------------
(* The specification                                                       *)

Decided == {"committed", "aborted"}
Settled == \A r \in Root : phase[r] \in Decided

Done == Settled /\ UNCHANGED vars

Protocol ==
    \/ \E r \in Root : Submit(r) \/ BeginCommit(r) \/ LockStep(r) \/ ValidateStep(r)
                       \/ WriteStep(r) \/ AbortAll(r)
    \/ \E c \in Container : Dequeue(c)
    \/ \E n \in SubTxn : ReadOp(n) \/ WriteLoad(n) \/ WriteStore(n) \/ Call(n) \/ SyncReturn(n)
                         \/ FinishLogic(n) \/ Complete(n)

Next == Protocol \/ Done

\* The state graph has no cycle, so weak fairness on every step as a
\* whole drives every behaviour to a state where none is enabled.
Spec == Init /\ [][Next]_vars /\ WF_vars(Protocol)

-----------------------------------------------------------------------------
(* Properties                                                              *)

\* No sub-transaction runs twice, and one that is started is never lost:
\* by the time its root commits or aborts, it has completed.
ExactlyOnceInv ==
    /\ \A n \in SubTxn : starts[n] <= 1
    /\ \A r \in Root : phase[r] \in Decided =>
         \A n \in SubTxn : (RootOf[n] = r /\ starts[n] = 1) => status[n] = "done"

\* Every sub-transaction's result is back in its parent before the root
\* starts to commit: nothing called is still queued, running or waiting.
ResultsBeforeCommitInv ==
    \A r \in Root : phase[r] # "exec" =>
        \A n \in SubTxn \ {r} : RootOf[n] = r => status[n] \in {"idle", "done"}

\* At most one thread runs in a context: a root or asynchronous callee that
\* is running (a synchronous callee runs on its caller's thread).
OneThreadPerContextInv ==
    \A r \in Root, c \in Container :
        Cardinality({n \in SubTxn : /\ RootOf[n] = r /\ Cont(n) = c /\ OwnThread(n)
                                    /\ status[n] = "running" /\ ~InSyncCall(n)}) <= 1

\* The conservative abort hits a root only if its tree puts two threads in
\* one of its contexts: two nodes on one container that each run on a
\* thread of their own (D2, D8).  A synchronous call never does, so a
\* same-container call that is enqueued instead is caught here.
SharesContext(r) ==
    \E n, m \in SubTxn : /\ n # m /\ RootOf[n] = r /\ RootOf[m] = r
                        /\ OwnThread(n) /\ OwnThread(m) /\ Cont(n) = Cont(m)
ConservativeAbortInv == \A r \in Root : failed[r] => SharesContext(r)

\* Atomicity across containers: an aborted root wrote nothing anywhere; a
\* committed one installed its writes in every container it wrote in.
AtomicityInv ==
    \A r \in Root :
        /\ phase[r] \in {"aborting", "aborted"} => \A k \in Key : store[k] # r
        /\ phase[r] = "committed" => \A c \in Container : ws[r][c] # {} => c \in written[r]

TerminationProp == <>[]Settled

\* Serializability.  The committed roots, and the ones in their write phase
\* (decided: their writes are locked and about to be installed), run one at
\* a time in some order from the initial store, read exactly what they read
\* here and leave exactly this store.  This needs no serialization point;
\* ReactDBSerial.tla checks the step-by-step refinement of Serializable.tla,
\* which does (proofs/ReactDB.md, 2).
Committing == {r \in Root : phase[r] \in {"writing", "committed"}}
\* A root installs k while k is locked for it in a container it has not
\* written yet.  Once written there, k is unlocked and may already hold a
\* later root's value (ReactDBInstalledThenOverwritten), so it counts no more.
Installing(k) == {r \in Committing : phase[r] = "writing" /\ \E c \in Container \ written[r] : k \in ws[r][c]}
CurrentStore == [k \in Key |-> IF Installing(k) # {} THEN CHOOSE r \in Installing(k) : TRUE ELSE store[k]]
\* The committed roots' effect is their whole programs: the serial
\* reference's read and write sets (Serializable.tla).
\* Runs sequence s serially from store st: {the store after}, or {} as
\* soon as a root would read something other than what it read here.
RECURSIVE Replays(_, _)
Replays(s, st) ==
    IF s = << >> THEN {st}
    ELSE LET r == Head(s) IN
         IF /\ \A k \in RootReads(r) \ RootWrites(r) : rs[r][k] = st[k]
            /\ \A k \in RootReads(r) \cap RootWrites(r) : rs[r][k] \in {st[k], NoVal}
         THEN Replays(Tail(s), [k \in Key |-> IF k \in RootWrites(r) THEN r ELSE st[k]])
         ELSE {}
Orders(S) == {f \in [1..Cardinality(S) -> S] : \A i, j \in DOMAIN f : i # j => f[i] # f[j]}
SerializableInv ==
    \E o \in Orders(Committing) : Replays(o, [k \in Key |-> InitVal]) = {CurrentStore}
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety          *)
(* property, so each operator below says that a step never happens, and    *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* A root commits; one commits with writes installed in two containers.
CommitReachable == ~\E r \in Root : phase[r] = "committed"
CrossContainerCommitReachable == ~\E r \in Root : phase[r] = "committed" /\ Cardinality(written[r]) > 1
\* An asynchronous sub-transaction (on another container than its root's) completes.
AsyncSubTxnReachable == ~\E n \in SubTxn \ Root : Cont(n) # Cont(RootOf[n]) /\ status[n] = "done"
=============================================================================
