namespace Contend.Engine.Protocols.Chiller;

// Chiller's messages over the transport, each named after the spec action that sends it
// (specs/Chiller/Chiller.tla). Every one names its transaction attempt (a ClusterTxnId, whose
// node is the coordinator's), so a doubled copy is recognised by its receiver's state (the
// spec's D1) and answered or dropped. A program travels by name, found in each node's catalogue.

/// <summary>CoordLockOuter: the coordinator asks a partition's primary to lock op
/// <paramref name="Op"/>'s row (NO_WAIT), and, unless <paramref name="Deferred"/>, to run its body.
/// <paramref name="Host"/> is the inner region's partition: where the share asks for the outcome
/// if the coordinator fails (<see cref="AskOutcome"/>).</summary>
internal sealed record LockOuter(long Txn, int Partition, int Host, long Timestamp, string Program, int Op, long Key, bool Deferred, long[] Args, long[] Results);

/// <summary>The primary's answer: locked (<paramref name="Reason"/> None, the body's result) or
/// denied (CoordLockDenied), and why; <paramref name="Failure"/> when a body threw.</summary>
internal sealed record OuterLocked(long Txn, int Partition, int Op, long Result, AbortReason Reason, string? Failure);

/// <summary>The end of step 3 on an outer partition that has inserts: claim their keys (an
/// insert's lock), the last thing there that can refuse the transaction.</summary>
internal sealed record PrepareOuter(long Txn, int Partition);

/// <summary>The claims' answer: yes (<paramref name="Reason"/> None), or no and why (CoordLockDenied);
/// <paramref name="Failure"/> when an insert's body threw.</summary>
internal sealed record OuterPrepared(long Txn, int Partition, AbortReason Reason, string? Failure);

/// <summary>CoordDelegate: the inner region to its host, with everything it needs: the outer
/// region's results, which ops are inner, and which outer ops the host holds locked for a body
/// that reads the inner region (they commit with it).</summary>
internal sealed record Delegate(long Txn, int Partition, long Timestamp, string Program, long[] Args, long[] Results, ulong Inner, ulong HostDeferred);

/// <summary>One row as a replication message carries it: its after-image, or a new row.</summary>
internal sealed record RowImage(int Table, long Key, bool Inserted, byte[] Payload);

/// <summary>What a log entry records.</summary>
internal enum EntryKind : byte
{
    /// <summary>An inner region (InnerExecute's replication message): its rows, its results for
    /// the coordinator, its accesses for the history.</summary>
    Inner,
    /// <summary>An outer share's locks and step-3 writes, before delegation (D3): a copy that
    /// takes over holds the same locks.</summary>
    OuterPrepared,
    /// <summary>An outer share's commit: its rows.</summary>
    OuterCommit,
    /// <summary>An outer share released (aborted).</summary>
    OuterRelease,
}

/// <summary>An outer share as its log entry keeps it, enough for a copy that takes over to hold
/// it again: the program, the inner region's partition, the inputs, the ops locked here with their keys (inserts among
/// them, claimed at prepare), which of them are deferred, and the rows written so far.</summary>
internal sealed record ShareImage(string Program, int Host, long Timestamp, long[] Args, long[] Results, int[] Ops, long[] Keys, ulong Deferred, RowImage[] Written);

/// <summary>The partition's log entry <paramref name="Seq"/> to one of its replicas.</summary>
internal sealed record Replicate(long Txn, int Partition, int Copy, long Seq, EntryKind Kind, RowImage[] Rows,
                                 long[]? InnerResults = null, ShareImage? Share = null, History.Access[]? Accesses = null, string? Program = null);

/// <summary>GatherPending, from the candidate copy of a partition whose primary was cut off to
/// another survivor: every entry you hold from <paramref name="FromSeq"/> on.</summary>
internal sealed record GatherRequest(int Partition, long Epoch, int Candidate, long FromSeq);

/// <summary>The survivor's entries from the asked number on, and the last number it applied.</summary>
internal sealed record GatherReply(int Partition, long Epoch, int Copy, long Applied, Replicate[] Entries);

/// <summary>The entries the survivor lacked; once it holds them it applies everything it holds in
/// sequence order, skipping the numbers nobody received (D5: their sender is cut off).</summary>
internal sealed record GatherFill(int Partition, long Epoch, int Copy, Replicate[] Entries);

/// <summary>The survivor holds and has applied every gathered entry (D9).</summary>
internal sealed record GatherDone(int Partition, long Epoch, int Copy);

/// <summary>ElectPrimary's word to the coordinators: copy <paramref name="Copy"/> serves partition
/// <paramref name="Partition"/>, and of the transactions delegated to its crashed primary, those
/// in <paramref name="CommittedInner"/> commit (a survivor received them); any other aborted.</summary>
internal sealed record Elected(int Partition, long Epoch, int Copy, IReadOnlySet<long> CommittedInner);

/// <summary>ReplicaReceive's acknowledgement, to the primary: the entry is held (the NIC's ack
/// of the paper's RDMA write).</summary>
internal sealed record ReplicaAck(long Txn, int Partition, int Copy, long Seq);

/// <summary>ReplicaApply's notification to the coordinator (or InnerCommit's, from a host with no
/// replica): the inner region is applied at copy <paramref name="Copy"/>, with its results.</summary>
internal sealed record InnerNotify(long Txn, int Partition, int Copy, long[] Results);

/// <summary>InnerReject's notice to the coordinator: the inner region aborted, and why.</summary>
internal sealed record InnerAborted(long Txn, int Partition, AbortReason Reason, string? Failure);

/// <summary>OuterCommit or OuterRelease: the coordinator's outcome to an outer partition, with
/// every result the deferred bodies may read.</summary>
internal sealed record OuterDecision(long Txn, int Partition, bool Commit, long[] Results);

/// <summary>RecoverCoordinator's question: the coordinator of <paramref name="Txn"/> is cut off,
/// and partition <paramref name="Asker"/> holds a share of it; the primary of the inner region's
/// partition <paramref name="Partition"/>, the node Section 5.2 names as the new coordinator (the
/// inner host, or the copy that took over from it), answers from its own log with an
/// <see cref="OuterDecision"/>: commit if it committed the inner region, abort if it rejected it
/// or never received it.</summary>
internal sealed record AskOutcome(long Txn, int Partition, int Asker);

/// <summary>The outer partition has applied the outcome (its writes on every copy first).</summary>
internal sealed record OuterDone(long Txn, int Partition);
