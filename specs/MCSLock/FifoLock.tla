------------------------------ MODULE FifoLock ------------------------------
(***************************************************************************)
(* A FIFO lock: requesters join a queue, the head of the queue acquires   *)
(* when the lock is free, and the owner's release removes it from the     *)
(* head.  This is the lock the MCS queue lock (MCSLock.tla) refines, and   *)
(* the lock the StealDB spec uses per record in place of MCS pointers.    *)
(***************************************************************************)
EXTENDS Naturals, Sequences
CONSTANTS
    Proc,   \* the processes (lock contexts) that may request the lock
    None    \* model value: no owner

ASSUME None \notin Proc

VARIABLES
    queue,  \* requesters in arrival order; the head is the owner or the next owner
    owner   \* the process holding the lock, or None

vars == <<queue, owner>>

InQueue(p) == \E i \in 1..Len(queue) : queue[i] = p

TypeOK ==
    /\ queue \in Seq(Proc)
    /\ owner \in Proc \cup {None}

Init == queue = <<>> /\ owner = None

Request(p) ==
    /\ ~InQueue(p)
    /\ queue' = Append(queue, p)
    /\ UNCHANGED owner

Acquire(p) ==
    /\ owner = None
    /\ queue # <<>> /\ Head(queue) = p
    /\ owner' = p
    /\ UNCHANGED queue

Release(p) ==
    /\ owner = p
    /\ owner' = None
    /\ queue' = Tail(queue)

Next == \E p \in Proc : Request(p) \/ Acquire(p) \/ Release(p)

Spec == Init /\ [][Next]_vars
=============================================================================
