----------------------------- MODULE RWFifoLock -----------------------------
(***************************************************************************)
(* A reader-writer FIFO lock: requests join one queue in arrival order,   *)
(* and only the head of the queue is granted.  A reader at the head is    *)
(* granted while no writer holds, so readers queued one after another are *)
(* admitted together; a writer at the head waits until nobody holds.  A   *)
(* reader that arrives behind a queued writer waits for it.  This is the  *)
(* lock RWMCSLock.tla refines ("readers admitted together, FIFO           *)
(* otherwise").  A queued request may be given up (Cancel).               *)
(***************************************************************************)
EXTENDS Naturals, Sequences
CONSTANTS
    Proc    \* the processes that may request the lock

VARIABLES
    queue,   \* waiting requests in arrival order; the head is the next granted
    holders, \* the processes holding the lock
    mode     \* mode[p]: the mode of p's current (or last) request, "R" or "W"

vars == <<queue, holders, mode>>

Modes == {"R", "W"}

InQueue(p) == \E i \in 1..Len(queue) : queue[i] = p

WriterHolds == \E h \in holders : mode[h] = "W"

TypeOK ==
    /\ queue \in Seq(Proc)
    /\ holders \subseteq Proc
    /\ mode \in [Proc -> Modes]

Init == queue = <<>> /\ holders = {} /\ mode = [p \in Proc |-> "R"]

\* p asks for the lock in mode m and joins the queue.
Request(p, m) ==
    /\ ~InQueue(p) /\ p \notin holders
    /\ queue' = Append(queue, p)
    /\ mode' = [mode EXCEPT ![p] = m]
    /\ UNCHANGED holders

\* A request that finds nobody queued is granted as it asks, a reader if no
\* writer holds, a writer if nobody holds: Request and Acquire in one step
\* (the MCS fast paths, where the request is never queued).
RequestGranted(p, m) ==
    /\ ~InQueue(p) /\ p \notin holders
    /\ queue = <<>>
    /\ IF m = "W" THEN holders = {} ELSE ~WriterHolds
    /\ holders' = holders \cup {p}
    /\ mode' = [mode EXCEPT ![p] = m]
    /\ UNCHANGED queue

\* The head is granted: a reader while no writer holds, a writer when nobody holds.
Acquire(p) ==
    /\ queue # <<>> /\ Head(queue) = p
    /\ IF mode[p] = "W" THEN holders = {} ELSE ~WriterHolds
    /\ holders' = holders \cup {p}
    /\ queue' = Tail(queue)
    /\ UNCHANGED mode

\* A queued request given up (a waiter chosen to abort, or one past its
\* wait threshold): it leaves the queue without ever holding.
Cancel(p) ==
    /\ InQueue(p)
    /\ queue' = SelectSeq(queue, LAMBDA q : q # p)
    /\ UNCHANGED <<holders, mode>>

Release(p) ==
    /\ p \in holders
    /\ holders' = holders \ {p}
    /\ UNCHANGED <<queue, mode>>

Next == \E p \in Proc : \/ \E m \in Modes : Request(p, m) \/ RequestGranted(p, m)
                        \/ Acquire(p) \/ Cancel(p) \/ Release(p)

Spec == Init /\ [][Next]_vars
=============================================================================
