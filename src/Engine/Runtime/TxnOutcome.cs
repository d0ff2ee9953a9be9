using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>What one transaction came to: committed, or aborted by its program's logic.</summary>
/// <param name="Outcome"><see cref="Protocols.Outcome.Committed"/> or <see cref="Protocols.Outcome.UserAborted"/></param>
/// <param name="Reason">for an abort, why: its logic (<see cref="AbortReason.User"/>), a key in no
/// row (<see cref="AbortReason.KeyNotFound"/>), or a
/// duplicate insert (<see cref="AbortReason.DuplicateKey"/>); None for a commit</param>
/// <param name="Attempts">attempts made, the conflict aborts retried included</param>
/// <param name="Duplicate">for <see cref="AbortReason.DuplicateKey"/>, the insert refused: its program, op, table and key</param>
public readonly record struct TxnOutcome(Outcome Outcome, AbortReason Reason, int Attempts, DuplicateKey? Duplicate = null)
{
    /// <summary>What a transaction on <paramref name="ctx"/> came to, its last attempt having ended so.</summary>
    internal static TxnOutcome Of(TxnContext ctx, Outcome outcome, AbortReason reason, int attempts) =>
        outcome == Outcome.Committed ? new(outcome, AbortReason.None, attempts) : new(outcome, reason, attempts, ctx.Duplicate);

    /// <summary>True for a commit.</summary>
    public bool Committed => Outcome == Outcome.Committed;
}

/// <summary>What an engine has done so far (<see cref="ContendEngine.Counts"/>, <see cref="Protocols.ReactDB.ReactDbEngine.Counts"/>).</summary>
/// <param name="Committed">transactions committed</param>
/// <param name="UserAborted">transactions ended by their program's logic or input: a body's
/// abort, a missing key, a full table, a duplicate key (never retried)</param>
/// <param name="ConflictAborts">attempts aborted by a conflict with another transaction and
/// retried (one transaction may count several)</param>
public readonly record struct EngineCounts(long Committed, long UserAborted, long ConflictAborts);
