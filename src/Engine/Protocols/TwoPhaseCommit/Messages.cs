namespace Contend.Engine.Protocols.TwoPhaseCommit;

// The messages of two-phase commit over the transport. Every one names its transaction
// attempt (a ClusterTxnId), so a late or doubled copy is recognised and answered or dropped.
// A program travels by name: a node finds it in its own catalogue, as a separate process would.

/// <summary>Coordinator to a partition's primary: run op <paramref name="Op"/> of the attempt
/// on key <paramref name="Key"/>. Carries everything the op needs: the program, the arguments,
/// the results so far, and the age WaitDie compares.</summary>
internal sealed record OpRequest(long Txn, int Partition, long Timestamp, string Program, int Op, long Key, long[] Args, long[] Results);

/// <summary>Primary to coordinator: the op ran (<paramref name="Reason"/> None, its result), or
/// the attempt must abort for <paramref name="Reason"/>; <paramref name="Failure"/> is set when a
/// body threw (a program bug: the transaction is not retried).</summary>
internal sealed record OpReply(long Txn, int Partition, int Op, long Result, AbortReason Reason, string? Failure);

/// <summary>Coordinator to participant: every op has run; vote.</summary>
internal sealed record PrepareRequest(long Txn, int Partition);

/// <summary>Participant to coordinator: yes (<paramref name="Reason"/> None) or no, and why;
/// <paramref name="Failure"/> is set when an insert body threw at prepare.</summary>
internal sealed record VoteReply(long Txn, int Partition, AbortReason Reason, string? Failure = null);

/// <summary>Coordinator to participant: the outcome. Sent until acknowledged.</summary>
internal sealed record DecisionRequest(long Txn, int Partition, bool Commit);

/// <summary>Participant to coordinator: the outcome is applied (or was already).</summary>
internal sealed record DecisionAck(long Txn, int Partition);
