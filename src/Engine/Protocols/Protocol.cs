using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols;

/// <summary>How a transaction, or one attempt of it, ended.</summary>
public enum Outcome : byte
{
    /// <summary>It committed: its writes are in place and visible.</summary>
    Committed,
    /// <summary>Its program's logic or input ended it (<see cref="AbortReason"/> says which): nothing of it was written, and a retry would end the same way.</summary>
    UserAborted,
    /// <summary>An attempt lost a conflict with another transaction, and the engine retries it;
    /// as a transaction's outcome, it gave up: its deadline passed (<see cref="AbortReason.Deadline"/>)
    /// or its attempts ran out (<see cref="Runtime.EngineOptions.MaxAttempts"/>; the reason is
    /// its last conflict's). Nothing of it was written; the caller may try again.</summary>
    Aborted,
}

/// <summary>Why an attempt aborted. The counters and the run summary use these names.</summary>
public enum AbortReason : byte
{
    /// <summary>No abort: the attempt committed.</summary>
    None,
    /// <summary>NoWait: the lock was held (and Silo's prepare across partitions, which does not wait for one).</summary>
    LockBusy,
    /// <summary>WaitDie: younger than a holder.</summary>
    Die,
    /// <summary>WaitsFor: the waits-for graph had a cycle through this transaction.</summary>
    Deadlock,
    /// <summary>Mcs: a lock wait passed its threshold.</summary>
    WaitTimeout,
    /// <summary>Silo: a read changed before commit; Mcs: a row read shared changed before the
    /// attempt's write of it held it exclusive.</summary>
    Validation,
    /// <summary>The program's logic aborted: a body returned <see cref="Programs.TxnProgram.UserAbort"/>
    /// (or a ReactDB function called <see cref="ReactDB.ReactorCall.AbortRoot"/>).</summary>
    User,
    /// <summary>An insert found its table full.</summary>
    TableFull,
    /// <summary>An insert's key was already in its table (<see cref="Runtime.TxnOutcome.Duplicate"/> names it).</summary>
    DuplicateKey,
    /// <summary>Across partitions: a participant's answer did not reach the coordinator in time
    /// (a message lost, a link cut, or a lock wait longer than the coordinator waits).</summary>
    NoReply,
    /// <summary>The transaction gave up: its deadline (<see cref="Runtime.EngineOptions.Deadline"/>)
    /// passed while it waited for a lock, was queued, or was about to retry; or its caller
    /// cancelled during a lock wait (the call then ends with <see cref="OperationCanceledException"/>).</summary>
    Deadline,
    /// <summary>ReactDB: a sub-transaction reached a container where another (sub-)transaction of
    /// its root held the root's database context (the paper's conservative abort), and the whole
    /// root aborted; a retry may find the context free.</summary>
    SharedContext,
    /// <summary>An op's key is in no row of its table (a read, a write, a ReactDB access): the
    /// caller's input named a row that does not exist, which a service answers as "not found".</summary>
    KeyNotFound,
}

internal static class AbortReasons
{
    /// <summary>True for an abort the program's logic or its input caused, which a retry would
    /// meet again: the transaction ends <see cref="Outcome.UserAborted"/>, not retried.</summary>
    public static bool IsFinal(this AbortReason reason) =>
        reason is AbortReason.User or AbortReason.KeyNotFound or AbortReason.TableFull or AbortReason.DuplicateKey;

    /// <summary>What an attempt that aborted for <paramref name="reason"/> comes to.</summary>
    public static Outcome OutcomeOf(AbortReason reason) => reason.IsFinal() ? Outcome.UserAborted : Outcome.Aborted;
}

/// <param name="Program">the transaction's program</param>
/// <param name="Op">the insert op</param>
/// <param name="Table">the table</param>
/// <param name="Key">the key already there</param>
/// <summary>An insert refused because its key is in the table already: ordinary bad input, which
/// ends the transaction <see cref="Outcome.UserAborted"/> with nothing of it written.</summary>
public sealed record DuplicateKey(string Program, string Op, string Table, long Key)
{
    /// <summary>The earlier op of the same transaction that inserts the key too (the two inserts
    /// collide with each other); null when the key was in the table, or claimed by another transaction.</summary>
    public string? InsertedBy { get; init; }

    /// <summary>The insert refused, in words.</summary>
    public override string ToString() => InsertedBy is null
        ? $"program {Program}, op {Op}: key {Key} is already in table {Table}"
        : $"program {Program}: ops {InsertedBy} and {Op} both insert key {Key} into table {Table}";
}

/// <summary>A duplicate key that could not end as an abort: what the insert met, and why it was
/// raised instead.</summary>
public sealed class DuplicateKeyException : ContendException
{
    internal DuplicateKeyException(DuplicateKey duplicate, string why) : base($"{duplicate}: {why}")
    {
        Duplicate = duplicate;
    }

    /// <summary>The insert refused.</summary>
    public DuplicateKey Duplicate { get; }

    /// <inheritdoc/>
    public override bool Retryable => false;
}

/// <summary>A participant's answer to prepare: yes (it can commit whatever the others do, and
/// keeps what it holds until told), or no with the reason, and then it has undone nothing yet:
/// the coordinator's abort does that.</summary>
internal readonly record struct Vote(AbortReason Reason)
{
    public static Vote Yes => default;
    public bool IsYes => Reason == AbortReason.None;
}

/// <summary>What every protocol is: a name the registry knows it by. A protocol is either
/// an <see cref="ITransactionProtocol"/> or an <see cref="IBatchProtocol"/>.</summary>
internal interface IProtocol
{
    string Name { get; }
}

/// <summary>
/// A per-transaction protocol: runs one program instance to commit or abort on the calling
/// worker. One instance serves every worker of a run; per-worker state lives in the
/// <see cref="TxnContext"/>.
/// </summary>
internal interface ITransactionProtocol : IProtocol
{
    Outcome Run(TxnContext ctx, out AbortReason reason);
}

/// <summary>
/// A batch protocol (Strife): the worker pool calls <see cref="Work"/> on each of its
/// workers, and the protocol draws transactions into batches, schedules them over the
/// workers, and returns when the run ends (<see cref="BatchWorker.CanDraw"/> says no more).
/// Every worker may return at a different time: the protocol must finish any batch it has
/// started with whichever workers are left.
/// </summary>
internal interface IBatchProtocol : IProtocol
{
    void Work(BatchWorker worker);

    /// <summary>After a worker failed (<see cref="BatchWorker.Failed"/>) and every worker has
    /// returned from <see cref="Work"/>: the <see cref="TxnContext.Tag"/>s of the transactions it
    /// drew that never ended, so that whoever submitted them hears of it.</summary>
    IEnumerable<object> Unfinished();
}

/// <summary>What a protocol is built from.</summary>
/// <param name="Options">the protocol's knobs, of its descriptor's <see cref="ProtocolDescriptor.OptionsType"/>; null: its defaults</param>
internal sealed record ProtocolSetup(Database Database, int Workers, ProtocolOptions? Options = null)
{
    /// <summary>Broken protocol steps, for the tests that must catch them: a value of the
    /// protocol's own mutants enum or of <see cref="OpByOpMutants"/> (test builds only: see <see cref="MutantFlag"/>).</summary>
    internal Enum? Mutants { get; init; }

    public static ProtocolSetup For(Database db, int workers) => new(db, workers);
}
