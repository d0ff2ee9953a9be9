----------------------------- MODULE MCReactDB -----------------------------
(***************************************************************************)
(* Workloads for ReactDB.tla, and its mutants.                             *)
(***************************************************************************)
EXTENDS ReactDB, TLC
CONSTANTS tR, a, b, c, uR, u1, u2, vR,    \* (sub-)transactions
          RA, RB, RB2, C1, C2              \* reactors and containers

R(k) == [op |-> "r", key |-> k]
W(k) == [op |-> "w", key |-> k]
CallOp(m) == [op |-> "call", sub |-> m]

\* Reactor RA (key x) is on container C1; RB (key w) and RB2 (key y) on C2.
Reactors == {RA, RB, RB2}
ReactorContainer == (RA :> C1) @@ (RB :> C2) @@ (RB2 :> C2)
Keys == {"x", "w", "y"}
Owner == ("x" :> RA) @@ ("w" :> RB) @@ ("y" :> RB2)
Order == <<C1, C2>>

\* T (root tR on C1) reads x and calls a and b asynchronously, both on C2,
\* so they share T's context there: a writes w blindly; b calls c on RB2,
\* synchronously (same container), which updates y.
TOps == (tR :> << R("x"), CallOp(a), CallOp(b) >>) @@ (a :> << W("w") >>) @@
        (b :> << CallOp(c) >>) @@ (c :> << R("y"), W("y") >>)
TRootOf == (tR :> tR) @@ (a :> tR) @@ (b :> tR) @@ (c :> tR)
TReactorOf == (tR :> RA) @@ (a :> RB) @@ (b :> RB) @@ (c :> RB2)
TwoRoots == {tR, uR}

\* Workload "children": U (root uR on C2) writes w and calls u2 on RB2
\* synchronously to write y: it conflicts with both of T's children.
ChildrenNodes == {tR, a, b, c, uR, u2}
ChildrenRootOf == TRootOf @@ (uR :> uR) @@ (u2 :> uR)
ChildrenReactorOf == TReactorOf @@ (uR :> RB) @@ (u2 :> RB2)
ChildrenOps == TOps @@ (uR :> << W("w"), CallOp(u2) >>) @@ (u2 :> << W("y") >>)

\* Workload "blind": U writes w and calls u1 on C1 asynchronously to write
\* x: it conflicts with T's root (x, which T only reads) and with a's blind
\* write of w.
BlindNodes == {tR, a, b, c, uR, u1}
BlindRootOf == TRootOf @@ (uR :> uR) @@ (u1 :> uR)
BlindReactorOf == TReactorOf @@ (uR :> RB) @@ (u1 :> RA)
BlindOps == TOps @@ (uR :> << W("w"), CallOp(u1) >>) @@ (u1 :> << W("x") >>)

\* Workload "overwritten" (the spec's review): T writes x on C1 and calls
\* a on C2 to write w; U, also on C1, reads and writes x.  T installs x on C1
\* and unlocks it before it installs w on C2, so U can overwrite x while T is
\* still in its write phase: the state in which SerializableInv once counted
\* T as still installing x and raised a false alarm.
OverwrittenNodes == {tR, a, uR}
OverwrittenRootOf == (tR :> tR) @@ (a :> tR) @@ (uR :> uR)
OverwrittenReactorOf == (tR :> RA) @@ (a :> RB) @@ (uR :> RA)
OverwrittenOps == (tR :> << W("x"), CallOp(a) >>) @@ (a :> << W("w") >>) @@ (uR :> << R("x"), W("x") >>)

\* Larger, for manual runs: the children workload and a third root V on
\* RB2 that updates y.
ThreeNodes == ChildrenNodes \cup {vR}
ThreeRoots == TwoRoots \cup {vR}
ThreeRootOf == ChildrenRootOf @@ (vR :> vR)
ThreeReactorOf == ChildrenReactorOf @@ (vR :> RB2)
ThreeOps == ChildrenOps @@ (vR :> << R("y"), W("y") >>)

\* Mutant: the root commits without waiting for its sub-transactions.
MutantSubTxnsDone(n) == IF n \in Root THEN TRUE ELSE \A m \in Children(n) : status[m] \in {"idle", "done"}

\* Mutant: remote containers are not validated.
MutantValidates(r, cont) ==
    IF cont # Cont(r) THEN TRUE
    ELSE IF Validation = "linear" THEN LocksFree(r, cont) /\ ReadsValid(r, cont) ELSE ReadsValid(r, cont)

\* Mutant: a thread takes a context another thread is using.
MutantContextFree(r, cont) == TRUE

\* Mutant: a dequeue that leaves the sub-transaction in the queue (a lost
\* pop), so another thread runs it again.
MutantDequeue(cont) ==
    \E n \in queue[cont] :
        LET r == RootOf[n] IN
        /\ starts' = [starts EXCEPT ![n] = @ + 1]
        /\ holder' = [holder EXCEPT ![r][cont] = n]
        /\ spans' = [spans EXCEPT ![r] = @ \cup {cont}]
        /\ status' = [status EXCEPT ![n] = "running"]
        /\ UNCHANGED <<queue, failed, pc, loaded, buf, rs, ws, phase, step, lock, store, written>>

\* Mutant: the write phase stops after the source container.
MutantWriteStep(r) ==
    LET cont == At(r) IN
    /\ phase[r] = "writing"
    /\ store' = [k \in Key |-> IF k \in ws[r][cont] THEN r ELSE store[k]]
    /\ lock' = [k \in Key |-> IF lock[k] = r THEN None ELSE lock[k]]
    /\ written' = [written EXCEPT ![r] = @ \cup {cont}]
    /\ phase' = [phase EXCEPT ![r] = "committed"]
    /\ status' = [status EXCEPT ![r] = "done"]
    /\ holder' = [holder EXCEPT ![r][Cont(r)] = None]
    /\ UNCHANGED <<pc, loaded, buf, queue, spans, rs, ws, failed, step, starts>>
\* Mutant: commitOrAbort is called only when execution succeeded, so a
\* root hit by the conservative abort never finishes.
MutantBeginCommit(r) ==
    /\ status[r] = "waiting" /\ phase[r] = "exec" /\ SubTxnsDone(r) /\ ~failed[r]
    /\ phase' = [phase EXCEPT ![r] = IF Validation = "linear" THEN "validating" ELSE "locking"]
    /\ UNCHANGED <<status, pc, loaded, buf, queue, holder, spans, rs, ws, failed, step,
                   lock, store, written, starts>>

\* Mutant: a call into the caller's own container is enqueued like any
\* other (Alg. 2 lines 10-12 dropped), so the callee finds its caller
\* holding the context and takes the conservative abort.
MutantCall(n) ==
    LET m == CurOp(n).sub IN
    /\ Busy(n) /\ CurOp(n).op = "call" /\ status[m] = "idle"
    /\ status' = [status EXCEPT ![m] = "queued"]
    /\ queue' = [queue EXCEPT ![Cont(m)] = @ \cup {m}]
    /\ pc' = [pc EXCEPT ![n] = @ + 1]
    /\ UNCHANGED <<loaded, buf, holder, spans, rs, ws, failed, phase, step,
                   lock, store, written, starts>>

\* Mutant: read validation checks the value but not another root's lock.
MutantReadsValid(r, cont) ==
    \A k \in Key : (KeyCont(k) = cont /\ rs[r][k] # NoVal) => store[k] = rs[r][k]

\* Mutant: a container's writes are installed when it is validated, not in
\* the write phase (lockFirst).
MutantValidateStep(r) ==
    /\ phase[r] = "validating"
    /\ IF Validates(r, At(r))
       THEN /\ store' = [k \in Key |-> IF k \in ws[r][At(r)] THEN r ELSE store[k]]
            /\ phase' = [phase EXCEPT ![r] = IF Last(r) THEN "writing" ELSE @]
            /\ step' = [step EXCEPT ![r] = IF Last(r) THEN 1 ELSE @ + 1]
       ELSE /\ phase' = [phase EXCEPT ![r] = "aborting"]
            /\ UNCHANGED <<store, step>>
    /\ UNCHANGED <<status, pc, loaded, buf, queue, holder, spans, rs, ws, failed,
                   lock, written, starts>>

\* Mutant (TypeOK's twin): an abort hands each lock back to the string
\* "none" rather than the model value None.
MutantAbortAll(r) ==
    /\ phase[r] = "aborting"
    /\ lock' = [k \in Key |-> IF lock[k] = r THEN "none" ELSE lock[k]]
    /\ phase' = [phase EXCEPT ![r] = "aborted"]
    /\ status' = [status EXCEPT ![r] = "done"]
    /\ holder' = [holder EXCEPT ![r][Cont(r)] = None]
    /\ UNCHANGED <<pc, loaded, buf, queue, spans, rs, ws, failed, step, store, written, starts>>

\* The paper's executors: a fixed pool of threads per container (D1).  A
\* thread stays with its (sub-)transaction while it is blocked on a future.
PoolOf1(cont) == Cardinality(ThreadsOf(cont)) < 1
PoolOf2(cont) == Cardinality(ThreadsOf(cont)) < 2
=============================================================================
