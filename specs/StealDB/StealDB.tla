------------------------------ MODULE StealDB ------------------------------
(***************************************************************************)
(* StealDB: queue-stealing two-phase locking (seed 000/001, Section 3,     *)
(* Algorithms 1-4).  A transaction is a DAG of operations, each touching   *)
(* one record under an exclusive queue lock.  A transaction blocked on a   *)
(* lock does not idle: it takes the steal context of its predecessor in    *)
(* that lock's queue and runs one of the lock holder's runnable ops, and   *)
(* hands the rest of the context down the chain of waiters.                *)
(*                                                                         *)
(* Two protocols live here, sharing every step but six:                    *)
(*   PaperSpec  the paper's Algorithms 1-4 as written.                     *)
(*   Spec       the corrected protocol the engine implements.              *)
(* What TLC found about PaperSpec, and why each change was made, is in     *)
(* proofs/StealDB.md; the counterexamples are the StealDBPaper* models.    *)
(*   C1  STEALOP takes the predecessor's steal context with one atomic     *)
(*       exchange (the 64-bit word, swapped with null) instead of reading  *)
(*       it (Alg. 3 line 1) and clearing it later (line 5).                *)
(*   C2  Deadlock handling by timeout: a waiter may give up (WaiterTimeout)*)
(*       which aborts its transaction.  The paper's Section 5 says sorted  *)
(*       lock acquisition is broken by stealing and that its code aborts   *)
(*       on a lock-wait threshold; its algorithms show neither.            *)
(*   C3  A waiter may take back the context it handed down itself          *)
(*       (WaiterStealBack), so a chain of one waiter keeps stealing.       *)
(*   C4  The abort path waits until no op of the transaction is in         *)
(*       flight before it releases.  Alg. 1 lines 5-11 wait for the ops    *)
(*       in order and return at the first aborted one, while a later op    *)
(*       may still run on another thread: it then locks or executes        *)
(*       after the release (PaperOwnerDecide, StealDBPaperEarlyAbort).     *)
(*   and OwnerCloseOp, a step the engine needs and the paper does not:     *)
(*       the owner of a doomed transaction skips the ops nobody claimed    *)
(*       before it decides, because the engine reuses their words.         *)
(*                                                                         *)
(* The steal policy is a constant, so the paper's baselines are the same   *)
(* spec: "queue" (StealDB), "basic" (every waiter steals from the lock     *)
(* holder's one runnable queue by CAS on its index, Section 2.2), "none"   *)
(* (vanilla 2PL over MCS locks).                                           *)
(*                                                                         *)
(* Decisions where the paper is silent (each also noted at its step):      *)
(*  - One worker thread per transaction, named by it.  A worker runs a     *)
(*    stack of RUNOP frames: a stolen op runs nested inside the wait loop  *)
(*    of the op that blocked, exactly as Alg. 2 line 9 calls Alg. 3,       *)
(*    which calls Alg. 2.                                                  *)
(*  - Locks are FIFO queues of transactions per record (FifoLock.tla,      *)
(*    which MCSLock.tla is checked to implement).  TRYLOCK appends and     *)
(*    returns the previous tail, which is what STEALOP follows.  A         *)
(*    transaction touches a record at most once (ASSUME below): a second   *)
(*    lock context on a lock its transaction holds would wait on itself.   *)
(*  - Reader-writer locks (the paper's locks are exclusive and             *)
(*    Section 6 leaves shared ones as future work): with SharedReads, an   *)
(*    op that does not write locks its record shared, and a shared lock    *)
(*    context is granted when every context ahead of it is shared          *)
(*    (RWFifoLock.tla, which RWMCSLock.tla refines).  STEALOP needs no     *)
(*    change: a waiter still takes the context of the transaction queued   *)
(*    just ahead of it, whose ops it may run whatever that transaction     *)
(*    waits for.  What changes is the wait's second exit (WaiterProceed):  *)
(*    "the predecessor no longer runs" no longer means "the lock is ours", *)
(*    since a writer queued behind two readers waits for both and follows  *)
(*    only the second (MutantProceedWhenPredEnds breaks mutual exclusion). *)
(*    With SharedReads the wait ends on CHECKACQUIRED alone, as the        *)
(*    engine's always has.                                                 *)
(*  - Writes are buffered and installed at commit (Alg. 1 line 12); each   *)
(*    op reads its record and, if it writes, writes the value naming its   *)
(*    transaction (see Serializable.tla).                                  *)
(*  - The thread that finishes an op inserts the ops it made runnable and  *)
(*    publishes the transaction's steal context <<t, last index>>.  Alg.   *)
(*    1 line 3 has only the owner insert, after its own RUNOP returns,     *)
(*    which loses the dependents of an op that was stolen and still runs.  *)
(*    An op's dependencies are satisfied when they have finished.          *)
(*  - A transaction with an aborted op is doomed: in Spec its ops not yet  *)
(*    locked are skipped instead of run (the paper runs them and throws    *)
(*    the results away, and PaperSpec does; skipping takes fewer locks     *)
(*    and changes no committed result), and its owner may decide as soon   *)
(*    as no op is in flight (C4).                                          *)
(*  - Release ("release locks held by all ops") releases every lock        *)
(*    context the transaction has queued.  A context still waiting (left   *)
(*    by a waiter that gave up) is released when it reaches the head:      *)
(*    MCS locks cannot leave the queue, so the engine needs no abortable   *)
(*    lock, and the predecessor of a waiter ends only after handing over.  *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets
CONSTANTS
    Txn,          \* transaction ids; one worker thread per transaction
    Rec,          \* records, each with one exclusive queue lock
    Prog,         \* Prog[t][i] = [rec, deps, write, mayAbort]: op i of t's DAG
    StealPolicy,  \* "queue" (StealDB), "basic" (basic work stealing), "none" (vanilla 2PL)
    SharedReads,  \* TRUE: an op that does not write locks its record shared; FALSE: every lock exclusive (the paper)
    Bot,          \* model value: the null tid / empty steal context / no predecessor
    InitVal,      \* model value: every record's value before any commit
    NoVal         \* model value: "not read"

OpFields == [rec : Rec, deps : SUBSET Nat, write : BOOLEAN, mayAbort : BOOLEAN]
ASSUME /\ \A t \in Txn : Prog[t] \in Seq(OpFields)
       /\ \A t \in Txn : \A i \in 1..Len(Prog[t]) : Prog[t][i].deps \subseteq 1..(i - 1)
       /\ \A t \in Txn : \A i, j \in 1..Len(Prog[t]) : i # j => Prog[t][i].rec # Prog[t][j].rec
       /\ StealPolicy \in {"queue", "basic", "none"}
       /\ SharedReads \in BOOLEAN
       /\ {Bot, InitVal, NoVal} \cap Txn = {}

Ops(t) == 1..Len(Prog[t])
OpId == UNION {{<<t, i>> : i \in Ops(t)} : t \in Txn}
Owner(o) == o[1]
RecOf(o) == Prog[o[1]][o[2]].rec
Val == Txn \cup {InitVal}
Token == Txn \X (Nat \ {0})  \* a steal context <<tid_s, i_op>>; i_op names an rq position, from 1

VARIABLES
    opTid,      \* opTid[o]: op.tid, its transaction until claimed by the CAS of Alg. 2 line 1, then Bot
    opStatus,   \* opStatus[o] \in {"none", "ok", "aborted"}: op.status once executed (Alg. 2 lines 10-14)
    rq,         \* rq[t]: t.runnable_queue, indices of t's ops in insertion order
    cursor,     \* cursor[t]: the next rq[t] position t's own worker runs (Alg. 1 line 1)
    stealCtx,   \* stealCtx[t]: t.stealCtx, one word: a Token or Bot
    lockQ,      \* lockQ[r]: the transactions queued on r's lock; the head holds it, and so does a shared context with only shared ones ahead
    stack,      \* stack[w]: worker w's RUNOP frames, innermost last
    phase,      \* phase[t] \in {"run", "commitRel", "abortRel", "committed", "aborted"}
    store,      \* store[r]: committed value of record r
    reads,      \* reads[t][r]: the value t's op on r read (NoVal if none)
    execCount,  \* ghost: how many times op o has executed
    released,   \* ghost: t has released a lock (2PL's shrinking phase)
    gen         \* ghost: gen[t] counts writes to stealCtx[t], naming each context taken

vars == <<opTid, opStatus, rq, cursor, stealCtx, lockQ, stack, phase, store, reads,
          execCount, released, gen>>

\* Where a RUNOP frame is.  "stealClear" exists only in PaperSpec (between
\* Alg. 3 lines 1 and 5), "claim" only in mutant (b) (between test and set).
Labels == {"check", "claim", "lock", "wait", "stealClear", "steal", "exec"}
Frame == [op : OpId, pc : Labels, pred : Txn \cup {Bot},
          hand : [from : Txn, gen : Nat, tok : Token] \cup {Bot}]
Decided == {"committed", "aborted"}

TypeOK ==
    /\ opTid \in [OpId -> Txn \cup {Bot}]
    /\ opStatus \in [OpId -> {"none", "ok", "aborted"}]
    /\ rq \in [Txn -> Seq(Nat)]
    /\ cursor \in [Txn -> Nat]
    /\ stealCtx \in [Txn -> Token \cup {Bot}]
    /\ lockQ \in [Rec -> Seq(Txn)]
    /\ stack \in [Txn -> Seq(Frame)]
    /\ phase \in [Txn -> {"run", "commitRel", "abortRel"} \cup Decided]
    /\ store \in [Rec -> Val]
    /\ reads \in [Txn -> [Rec -> Val \cup {NoVal}]]
    /\ execCount \in [OpId -> Nat]
    /\ released \in [Txn -> BOOLEAN]
    /\ gen \in [Txn -> Nat]

\* The set S of op indices as a sequence in increasing order.
Sorted(S) == [k \in 1..Cardinality(S) |-> CHOOSE i \in S : Cardinality({j \in S : j < i}) = k - 1]

\* The runnable queue starts with the ops that depend on nothing.  They are
\* not published for stealing: only ops made runnable later are (see
\* RunOpExecute), and the owner runs its roots first anyway.
Roots(t) == Sorted({i \in Ops(t) : Prog[t][i].deps = {}})

Init ==
    /\ opTid = [o \in OpId |-> Owner(o)]
    /\ opStatus = [o \in OpId |-> "none"]
    /\ rq = [t \in Txn |-> Roots(t)]
    /\ cursor = [t \in Txn |-> 1]
    /\ stealCtx = [t \in Txn |-> Bot]
    /\ lockQ = [r \in Rec |-> <<>>]
    /\ stack = [w \in Txn |-> <<>>]
    /\ phase = [t \in Txn |-> "run"]
    /\ store = [r \in Rec |-> InitVal]
    /\ reads = [t \in Txn |-> [r \in Rec |-> NoVal]]
    /\ execCount = [o \in OpId |-> 0]
    /\ released = [t \in Txn |-> FALSE]
    /\ gen = [t \in Txn |-> 0]

-----------------------------------------------------------------------------
(* Helpers                                                                 *)

InQueue(t, q) == \E i \in 1..Len(q) : q[i] = t
Finished(o) == opStatus[o] # "none"
InFlight(o) == opTid[o] = Bot /\ ~Finished(o)         \* claimed, not yet finished
Doomed(t) == \E i \in Ops(t) : opStatus[<<t, i>>] = "aborted"
IsRunning(t) == phase[t] \notin Decided               \* ISRUNNING: T.status not yet set
\* t's lock context on r is shared: t only reads r (one op per record, ASSUME above).
Shared(t, r) == SharedReads /\ ~\E i \in Ops(t) : Prog[t][i].rec = r /\ Prog[t][i].write
SharedCtx == {p \in Txn \X Rec : Shared(p[1], p[2])}
\* t's context in queue q of r is granted: the head, or shared with only shared ones ahead.
GrantedIn(t, r, q) == \E k \in 1..Len(q) : q[k] = t /\ (k = 1 \/ \A j \in 1..k : Shared(q[j], r))
Granted(t, r) == GrantedIn(t, r, lockQ[r])
Acquired(o) == Granted(Owner(o), RecOf(o))   \* CHECKACQUIRED

Top(w) == stack[w][Len(stack[w])]
Busy(w) == stack[w] # <<>>
NewFrame(o) == [op |-> o, pc |-> "check", pred |-> Bot, hand |-> Bot]
SetTop(w, f) == stack' = [stack EXCEPT ![w] = [@ EXCEPT ![Len(@)] = f]]
PopTop(w) == stack' = [stack EXCEPT ![w] = SubSeq(@, 1, Len(@) - 1)]
SetTopAndPush(w, f, g) == stack' = [stack EXCEPT ![w] = Append([@ EXCEPT ![Len(@)] = f], g)]
Goto(w, l) == SetTop(w, [Top(w) EXCEPT !.pc = l])

\* Writing a steal context is a store to the one word; gen names each store.
WriteCtx(t, v) == /\ stealCtx' = [stealCtx EXCEPT ![t] = v]
                  /\ gen' = [gen EXCEPT ![t] = @ + 1]

-----------------------------------------------------------------------------
(* Algorithm 1, RUNTRANSACTION, by the owner's worker w = t.               *)

\* Lines 1-2: run the next op of the runnable queue.
OwnerRunNext(w) ==
    /\ phase[w] = "run" /\ ~Busy(w)
    /\ cursor[w] <= Len(rq[w])
    /\ stack' = [stack EXCEPT ![w] = <<NewFrame(<<w, rq[w][cursor[w]]>>)>>]
    /\ cursor' = [cursor EXCEPT ![w] = @ + 1]
    /\ UNCHANGED <<opTid, opStatus, rq, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* Not in the paper: the owner of a doomed transaction closes each op nobody
\* has claimed, by running it itself; the claim succeeds and the doomed branch
\* of RunOpTryLock skips it.  The engine reuses a transaction's op words for
\* the worker's next transaction, so it must know, before it decides, that no
\* thread can still claim one (a claim compares the whole tid, but the
\* claimer would then count itself in the words of the next transaction).
OwnerCloseOp(w, i) ==
    /\ phase[w] = "run" /\ ~Busy(w)
    /\ cursor[w] > Len(rq[w])
    /\ Doomed(w)
    /\ opTid[<<w, i>>] = w
    /\ \A j \in 1..(i - 1) : opTid[<<w, j>>] # w      \* in index order, as the engine scans
    /\ stack' = [stack EXCEPT ![w] = <<NewFrame(<<w, i>>)>>]
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* Line 12: install t's buffered writes.
InstallWrites(w) ==
    store' = [r \in Rec |-> IF \E i \in Ops(w) : Prog[w][i].rec = r /\ Prog[w][i].write
                            THEN w ELSE store[r]]

\* Lines 5-12: wait for every op to finish (only for ops in flight once the
\* transaction is doomed), then commit, installing the buffered writes, or abort.
OwnerDecide(w) ==
    /\ phase[w] = "run" /\ ~Busy(w)
    /\ cursor[w] > Len(rq[w])
    /\ IF Doomed(w) THEN \A i \in Ops(w) : ~InFlight(<<w, i>>)
                    ELSE \A i \in Ops(w) : Finished(<<w, i>>)
    /\ IF Doomed(w)
         THEN /\ phase' = [phase EXCEPT ![w] = "abortRel"]
              /\ UNCHANGED store
         ELSE /\ phase' = [phase EXCEPT ![w] = "commitRel"]
              /\ InstallWrites(w)
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, stack, reads, execCount, released, gen>>

\* The paper's lines 5-14 as written: wait for each op in order; at the
\* first aborted one (every op before it finished "ok") abort, whatever
\* later op is still in flight; commit when all are "ok".  The waits read
\* final statuses, so the loop is one step.
PaperOwnerDecide(w) ==
    /\ phase[w] = "run" /\ ~Busy(w)
    /\ cursor[w] > Len(rq[w])
    /\ \/ /\ \A i \in Ops(w) : opStatus[<<w, i>>] = "ok"
          /\ phase' = [phase EXCEPT ![w] = "commitRel"]
          /\ InstallWrites(w)
       \/ /\ \E i \in Ops(w) : /\ opStatus[<<w, i>>] = "aborted"
                               /\ \A j \in 1..(i - 1) : opStatus[<<w, j>>] = "ok"
          /\ phase' = [phase EXCEPT ![w] = "abortRel"]
          /\ UNCHANGED store
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, stack, reads, execCount, released, gen>>

\* Lines 9 and 13: UNLOCK each lock context t has queued, as it is granted.
OwnerRelease(w) ==
    /\ phase[w] \in {"commitRel", "abortRel"}
    /\ \E r \in Rec :
         /\ Granted(w, r)
         /\ lockQ' = [lockQ EXCEPT ![r] = SelectSeq(@, LAMBDA x : x # w)]
    /\ released' = [released EXCEPT ![w] = TRUE]
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, stack, phase, store, reads, execCount, gen>>

\* Lines 10 and 14: T.status is set after every lock is released.
OwnerFinish(w) ==
    /\ phase[w] \in {"commitRel", "abortRel"}
    /\ \A r \in Rec : ~InQueue(w, lockQ[r])
    /\ phase' = [phase EXCEPT ![w] = IF @ = "commitRel" THEN "committed" ELSE "aborted"]
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, stack, store, reads, execCount, released, gen>>

-----------------------------------------------------------------------------
(* Algorithm 2, RUNOP(op, tid), as the top frame of worker w.              *)
(* The frame runs op o on behalf of tid = Owner(o), whoever's worker it is. *)

\* Check phase, lines 1-2: CAS(&op.tid, tid, Bot); return if someone else has it.
RunOpClaim(w) ==
    LET f == Top(w) IN LET o == f.op IN
    /\ Busy(w) /\ f.pc = "check"
    /\ IF opTid[o] = Owner(o)
         THEN /\ opTid' = [opTid EXCEPT ![o] = Bot]
              /\ Goto(w, "lock")
         ELSE /\ PopTop(w)
              /\ UNCHANGED opTid
    /\ UNCHANGED <<opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* TRYLOCK (Alg. 4) for the top frame's op: append its transaction to the
\* record's queue; the previous tail, if any, is the predecessor it waits on
\* (a reader behind readers only is granted at once).
EnqueueLock(w) ==
    LET f == Top(w) IN LET r == RecOf(f.op) IN LET t == Owner(f.op) IN
    /\ lockQ' = [lockQ EXCEPT ![r] = Append(@, t)]
    /\ SetTop(w, [f EXCEPT !.pc = IF GrantedIn(t, r, Append(lockQ[r], t)) THEN "exec" ELSE "wait",
                           !.pred = IF lockQ[r] = <<>> THEN Bot ELSE lockQ[r][Len(lockQ[r])]])

\* Lock phase, lines 3-6 with TRYLOCK (Alg. 4): append the lock context and
\* remember the previous tail.  A doomed transaction's op is skipped here.
RunOpTryLock(w) ==
    LET o == Top(w).op IN
    /\ Busy(w) /\ Top(w).pc = "lock"
    /\ IF Doomed(Owner(o))
         THEN /\ opStatus' = [opStatus EXCEPT ![o] = "aborted"]
              /\ PopTop(w)
              /\ UNCHANGED lockQ
         ELSE /\ EnqueueLock(w)
              /\ UNCHANGED opStatus
    /\ UNCHANGED <<opTid, rq, cursor, stealCtx, phase, store, reads, execCount, released, gen>>

\* The paper's lines 3-6: every claimed op locks, doomed or not.
PaperRunOpTryLock(w) ==
    /\ Busy(w) /\ Top(w).pc = "lock"
    /\ EnqueueLock(w)
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, phase, store, reads, execCount, released, gen>>

\* Lines 8-9, the loop's exit: CHECKACQUIRED, or the predecessor is no longer
\* running.  The second is safe only because a transaction's status is set
\* after it has released every lock context (OwnerFinish), the last of which
\* hands this lock on; with shared locks it is not (header), and is left out.
PredEndedExit(f) == ~IsRunning(f.pred)
WaiterProceed(w) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "wait"
    /\ Acquired(f.op) \/ (~SharedReads /\ PredEndedExit(f))
    /\ Goto(w, "exec")
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* C2: the lock wait exceeded its threshold (any time, as far as the model
\* knows).  The op aborts, dooming its transaction; its lock context stays
\* queued and is released by the owner when it reaches the head.
WaiterTimeout(w) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "wait"
    /\ ~Acquired(f.op)
    /\ opStatus' = [opStatus EXCEPT ![f.op] = "aborted"]
    /\ PopTop(w)
    /\ UNCHANGED <<opTid, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* Execute phase, lines 10-14.  The op reads its record, buffers its write,
\* and may hit a user abort.  Then (our decision, see header) this thread
\* inserts the ops whose dependencies are now all finished and publishes
\* the new steal context <<tid, last index>>.
ExecuteOp(w) ==
    LET f == Top(w) IN LET o == f.op IN LET t == Owner(o) IN LET r == RecOf(o) IN
    /\ Busy(w) /\ f.pc = "exec"
    /\ \E ok \in IF Prog[t][o[2]].mayAbort THEN BOOLEAN ELSE {TRUE} :
         LET status == [opStatus EXCEPT ![o] = IF ok THEN "ok" ELSE "aborted"]
             ready == {j \in Ops(t) : /\ Prog[t][j].deps # {}
                                      /\ o[2] \in Prog[t][j].deps
                                      /\ \A d \in Prog[t][j].deps : status[<<t, d>>] # "none"}
         IN /\ opStatus' = status
            /\ rq' = [rq EXCEPT ![t] = @ \o Sorted(ready)]
            /\ IF ready # {} THEN WriteCtx(t, <<t, Len(rq'[t])>>)
                             ELSE UNCHANGED <<stealCtx, gen>>
    /\ reads' = [reads EXCEPT ![t][r] = store[r]]
    /\ execCount' = [execCount EXCEPT ![o] = @ + 1]
    /\ PopTop(w)
    /\ UNCHANGED <<opTid, cursor, phase, store>>

RunOpExecute(w) == ExecuteOp(w) /\ UNCHANGED <<lockQ, released>>

-----------------------------------------------------------------------------
(* Algorithm 3, STEALOP(T, Tp), inside the wait loop of the top frame.     *)
(* T is the frame's transaction tid, which is not always w's own: a thread *)
(* running a stolen op steals on behalf of that op's transaction.          *)

CanSteal(w) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "wait" /\ f.hand = Bot
    /\ ~Acquired(f.op) /\ IsRunning(f.pred)

\* Lines 1-4: a non-empty Tp.stealCtx, read into the frame's hand, which
\* remembers which store to the word it read (gen).
ReadPredCtx(w, nextPc) ==
    LET f == Top(w) IN
    /\ StealPolicy = "queue" /\ CanSteal(w)
    /\ stealCtx[f.pred] # Bot
    /\ SetTop(w, [f EXCEPT !.pc = nextPc,
                           !.hand = [from |-> f.pred, gen |-> gen[f.pred], tok |-> stealCtx[f.pred]]])

\* C1, lines 1-5 as one atomic exchange of Tp's steal-context word with Bot.
WaiterStealSwap(w) ==
    /\ ReadPredCtx(w, "steal")
    /\ WriteCtx(Top(w).pred, Bot)
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, lockQ, phase, store, reads, execCount, released>>

\* The paper's lines 1-4: read Tp.stealCtx ...
PaperStealRead(w) ==
    /\ ReadPredCtx(w, "stealClear")
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, stealCtx, lockQ, phase, store, reads, execCount, released, gen>>

\* ... and line 5, later: Tp.stealCtx = Bot.
PaperStealClear(w) ==
    LET f == Top(w) IN
    /\ Busy(w) /\ f.pc = "stealClear"
    /\ Goto(w, "steal")
    /\ WriteCtx(f.hand.from, Bot)
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, lockQ, phase, store, reads, execCount, released>>

\* How the corrected protocol takes a context; a mutant swaps in the paper's two steps.
StealTake(w) == WaiterStealSwap(w)

\* C3 (proofs/StealDB.md section 4.4): a waiter also takes, by the same exchange,
\* the context in its own transaction's word, which it handed down itself
\* (line 10), when its lock context is the queue's tail: no successor exists
\* to take it.  Section 2.3 lets the holder steal "from the tail of the
\* chain"; Algorithms 1-3 give each waiter one op per context the holder
\* publishes, so a chain of one waiter (two threads) would run one of the
\* holder's ops and wait out the rest.  The engine reads the lock's tail
\* word, then exchanges: a successor that enqueues in between changes only
\* lockQ, so the two steps commute to this one.
WaiterStealBack(w) ==
    LET f == Top(w) IN LET t == Owner(f.op) IN LET q == lockQ[RecOf(f.op)] IN
    /\ StealPolicy = "queue" /\ CanSteal(w)
    /\ q[Len(q)] = t
    /\ stealCtx[t] # Bot
    /\ SetTop(w, [f EXCEPT !.pc = "steal",
                           !.hand = [from |-> t, gen |-> gen[t], tok |-> stealCtx[t]]])
    /\ WriteCtx(t, Bot)
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, lockQ, phase, store, reads, execCount, released>>

\* Lines 6-11: if Ts still runs, pass <<Ts, i_op - 1>> down in T's own word
\* and run Ts's op i_op as a nested frame.
WaiterStealRun(w) ==
    LET f == Top(w) IN LET ts == f.hand.tok[1] IN LET i == f.hand.tok[2] IN
    LET t == Owner(f.op) IN
    /\ Busy(w) /\ f.pc = "steal"
    /\ IF IsRunning(ts)
         THEN /\ SetTopAndPush(w, [f EXCEPT !.pc = "wait", !.hand = Bot], NewFrame(<<ts, rq[ts][i]>>))
              /\ IF i > 1 THEN WriteCtx(t, <<ts, i - 1>>) ELSE UNCHANGED <<stealCtx, gen>>
         ELSE /\ SetTop(w, [f EXCEPT !.pc = "wait", !.hand = Bot])
              /\ UNCHANGED <<stealCtx, gen>>
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, lockQ, phase, store, reads, execCount, released>>

\* Basic work stealing (Section 2.2): every waiter takes the holder's last
\* published op by CAS on the holder's own index word.
WaiterStealBasic(w) ==
    LET f == Top(w) IN LET h == Head(lockQ[RecOf(f.op)]) IN
    /\ StealPolicy = "basic" /\ CanSteal(w)
    /\ IsRunning(h) /\ stealCtx[h] # Bot
    /\ LET i == stealCtx[h][2] IN
         /\ WriteCtx(h, IF i > 1 THEN <<h, i - 1>> ELSE Bot)
         /\ SetTopAndPush(w, f, NewFrame(<<h, rq[h][i]>>))
    /\ UNCHANGED <<opTid, opStatus, rq, cursor, lockQ, phase, store, reads, execCount, released>>

-----------------------------------------------------------------------------
(* The two protocols.                                                      *)

Done == /\ \A t \in Txn : phase[t] \in Decided     \* every transaction decided: stutter
        /\ UNCHANGED vars

CommonStep(w) ==
    \/ OwnerRunNext(w) \/ OwnerRelease(w) \/ OwnerFinish(w)
    \/ RunOpClaim(w) \/ WaiterProceed(w) \/ RunOpExecute(w)
    \/ WaiterStealRun(w) \/ WaiterStealBasic(w)

PaperStep(w) == CommonStep(w) \/ PaperOwnerDecide(w) \/ PaperRunOpTryLock(w)
                \/ PaperStealRead(w) \/ PaperStealClear(w)
WorkerStep(w) == CommonStep(w) \/ OwnerDecide(w) \/ RunOpTryLock(w)
                 \/ StealTake(w) \/ WaiterStealBack(w) \/ WaiterTimeout(w)
                 \/ \E i \in Ops(w) : OwnerCloseOp(w, i)

PaperNext == (\E w \in Txn : PaperStep(w)) \/ Done
Next == (\E w \in Txn : WorkerStep(w)) \/ Done

\* Each worker thread keeps running.  Fairness on the whole worker makes a
\* waiter with nothing else to do eventually time out.
PaperSpec == Init /\ [][PaperNext]_vars /\ \A w \in Txn : WF_vars(PaperStep(w))
Spec == Init /\ [][Next]_vars /\ \A w \in Txn : WF_vars(WorkerStep(w))

-----------------------------------------------------------------------------
(* Properties                                                              *)

Frames == UNION {{<<w, k>> : k \in 1..Len(stack[w])} : w \in Txn}   \* <<worker, depth>>
FrameAt(x) == stack[x[1]][x[2]]

\* Every op runs at most once, and every op of a committed transaction ran.
ExactlyOnceInv ==
    /\ \A o \in OpId : execCount[o] <= 1
    /\ \A t \in Txn : phase[t] \in {"commitRel", "committed"} =>
                        \A i \in Ops(t) : execCount[<<t, i>>] = 1

\* A transaction uses a record while one of its ops executes on it, or has
\* executed on it and the transaction has not released it.  At most one
\* transaction uses a record at a time, unless every user holds it shared.
Uses(t, r) ==
    \/ \E x \in Frames : FrameAt(x).pc = "exec" /\ Owner(FrameAt(x).op) = t /\ RecOf(FrameAt(x).op) = r
    \/ \E i \in Ops(t) : Prog[t][i].rec = r /\ execCount[<<t, i>>] > 0 /\ InQueue(t, lockQ[r])
MutualExclusionInv ==
    \A r \in Rec : LET U == {t \in Txn : Uses(t, r)} IN
        Cardinality(U) <= 1 \/ \A t \in U : Shared(t, r)

\* Each steal context a stealer takes was taken by no other stealer: a
\* context is handed down the chain, never copied.
StealTokenTakenOnceInv ==
    \A x, y \in Frames :
        (x # y /\ FrameAt(x).hand # Bot /\ FrameAt(y).hand # Bot) =>
            ~(FrameAt(x).hand.from = FrameAt(y).hand.from /\ FrameAt(x).hand.gen = FrameAt(y).hand.gen)

\* Two-phase locking: once a transaction has released a lock it requests no
\* lock and executes no op.  (A waiting context of an aborting transaction is
\* granted after other releases, and released at once without use.)
TwoPhaseProp ==
    [][\A t \in Txn : released[t] =>
         /\ \A r \in Rec : InQueue(t, lockQ'[r]) => InQueue(t, lockQ[r])
         /\ \A i \in Ops(t) : execCount'[<<t, i>>] = execCount[<<t, i>>]]_vars

\* Every transaction ends, committed or aborted.
TerminationProp == \A t \in Txn : <>(phase[t] \in Decided)

\* Refinement of the serial reference: a transaction serializes at its
\* commit step (OwnerDecide), reading what it read under its locks.
Ser == INSTANCE Serializable WITH
         Key <- Rec,
         ReadSet <- [t \in Txn |-> {Prog[t][i].rec : i \in Ops(t)}],
         WriteSet <- [t \in Txn |-> {Prog[t][i].rec : i \in {j \in Ops(t) : Prog[t][j].write}}],
         status <- [t \in Txn |-> CASE phase[t] \in {"commitRel", "committed"} -> "committed"
                                    [] phase[t] \in {"abortRel", "aborted"} -> "aborted"
                                    [] OTHER -> "pending"],
         readVal <- [t \in Txn |-> IF phase[t] \in {"commitRel", "committed"} THEN reads[t]
                                   ELSE [r \in Rec |-> NoVal]]
SerializableRefinementProp == Ser!Spec

\* Refinement of the core (StealDBCore.tla), whose invariants are checked to
\* be inductive: each op's place in claim / lock / execute, read off the
\* frames working on it.
CoreSt(o) ==
    LET pcs == {FrameAt(x).pc : x \in {y \in Frames : FrameAt(y).op = o}} IN
    CASE opStatus[o] = "ok" -> "done"
      [] opStatus[o] = "aborted" -> "aborted"
      [] opTid[o] = Owner(o) -> "idle"
      [] "exec" \in pcs -> "exec"
      [] pcs \cap {"wait", "stealClear", "steal"} # {} -> "queued"
      [] OTHER -> "claimed"
Core == INSTANCE StealDBCore WITH st <- [o \in OpId |-> CoreSt(o)], rel <- released
CoreRefinementProp == Core!Spec
-----------------------------------------------------------------------------
(* Non-vacuity.  A protocol that does nothing passes every safety          *)
(* property, so each operator below says that a step never happens, and    *)
(* every model expected to pass lists in specs/models.json ("reaches") the *)
(* ones it must violate: specs/check checks each alone and fails if TLC    *)
(* does not find the step.                                                 *)

\* A steal context in a transaction's word is replaced, before any stealer
\* took it, by one of the other kind: a publish (ExecuteOp, the finishing
\* thread's plain store of <<t, last index>>) over a context handed down
\* (WaiterStealRun, Alg. 3 line 10), or the reverse.  The word has two
\* writers and no CAS between them (proofs/StealDB.md, 3.5): as an action
\* property this says it never happens, and StealDBOppositeCtxOverwrite
\* must find that it does, in a workload where TerminationProp holds.
OwnCtx(t, v) == v # Bot /\ v[1] = t
CtxOverwriteReachable ==
    [][\A t \in Txn : ~(/\ stealCtx[t] # Bot /\ stealCtx'[t] # Bot
                        /\ OwnCtx(t, stealCtx[t]) # OwnCtx(t, stealCtx'[t]))]_vars

\* A transaction commits; one aborts.
CommitReachable == ~\E t \in Txn : phase[t] = "committed"
AbortReachable == ~\E t \in Txn : phase[t] = "aborted"
\* A worker runs another transaction's op (a stolen op reaches its execute step).
StealReachable == ~\E w \in Txn : \E k \in 1..Len(stack[w]) : Owner(stack[w][k].op) # w /\ stack[w][k].pc = "exec"
\* The owner closes an op nobody claimed (OwnerCloseOp): it is skipped, never inserted.
CloseReachable == ~\E o \in OpId : opStatus[o] = "aborted" /\ \A k \in 1..Len(rq[Owner(o)]) : rq[Owner(o)][k] # o[2]
\* A waiter takes back the context it handed down (WaiterStealBack).
StealBackReachable == ~\E w \in Txn : \E k \in 1..Len(stack[w]) :
                          stack[w][k].hand # Bot /\ stack[w][k].hand.from = Owner(stack[w][k].op)
\* Two transactions use a record at once, both holding it shared.
SharedUseReachable == ~\E r \in Rec : Cardinality({t \in Txn : Uses(t, r)}) > 1
\* A waiter steals from a predecessor that holds its record shared.
StealFromReaderReachable == ~\E w \in Txn : \E k \in 1..Len(stack[w]) :
                                LET f == stack[w][k] IN
                                f.pc = "steal" /\ f.pred # Bot /\ Shared(f.pred, RecOf(f.op))
=============================================================================
