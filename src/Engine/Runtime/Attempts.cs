using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>What the loop of <see cref="Attempts.RunToEnd"/> asks its caller: where an attempt
/// is counted, and whether a conflict abort is retried. A struct, so that the loop is compiled
/// once per caller with no call through an interface.</summary>
internal interface IAttemptGate
{
    /// <summary>Counts one attempt's outcome.</summary>
    void Count(Outcome outcome, AbortReason reason);

    /// <summary>After a conflict abort: true to retry after a back-off; false to leave the
    /// transaction unfinished (the run is over). May throw (the caller cancelled).</summary>
    bool Retry(TxnContext ctx);
}

/// <summary>The one loop that runs a transaction to its end, for the worker pool, the
/// requests of <see cref="ContendEngine"/> and Strife's residuals alike.</summary>
internal static class Attempts
{
    /// <summary>Runs the transaction started on <paramref name="ctx"/> until it commits or its
    /// logic aborts it, retrying each conflict abort after a randomized back-off
    /// (<see cref="Spin.Backoff"/>) while the gate says so. <see cref="TxnContext.ConflictRetries"/>
    /// holds the attempt's number of conflict aborts before it.</summary>
    /// <param name="attempts">the attempts run, the last included</param>
    /// <returns>the last attempt's outcome: <see cref="Outcome.Aborted"/> only when the gate gave up</returns>
    public static Outcome RunToEnd<TGate>(ITransactionProtocol protocol, TxnContext ctx, ref ulong rng, ref TGate gate,
                                          out AbortReason reason, out int attempts) where TGate : struct, IAttemptGate
    {
        for (int retries = 0; ; retries++)
        {
            ctx.ConflictRetries = retries;
            var outcome = protocol.Run(ctx, out reason);
            gate.Count(outcome, reason);
            attempts = retries + 1;
            if (outcome != Outcome.Aborted || !gate.Retry(ctx)) return outcome;
            Spin.Backoff(retries, ref rng);
        }
    }
}
