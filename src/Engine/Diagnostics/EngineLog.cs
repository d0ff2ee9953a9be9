using Microsoft.Extensions.Logging;

namespace Contend.Engine.Diagnostics;

/// <summary>What an engine tells its host's log: its start and stop, and what went wrong that
/// its callers see only one at a time. Source-generated, so a disabled level costs a check.</summary>
internal static partial class EngineLog
{
    [LoggerMessage(1, LogLevel.Information, "Contend engine '{Engine}' started: protocol {Protocol}, {Workers} workers, queue of {QueueCapacity}")]
    public static partial void Started(ILogger logger, string engine, string protocol, int workers, int queueCapacity);

    [LoggerMessage(2, LogLevel.Information, "Contend engine '{Engine}' stopped: {Committed} committed, {UserAborted} ended by their programs, {ConflictAborts} conflict aborts retried")]
    public static partial void Stopped(ILogger logger, string engine, long committed, long userAborted, long conflictAborts);

    [LoggerMessage(3, LogLevel.Warning, "Contend engine '{Engine}': program {Program} threw; its transaction failed and was undone, the engine goes on")]
    public static partial void TransactionFailed(ILogger logger, Exception error, string engine, string program);

    [LoggerMessage(4, LogLevel.Error, "Contend engine '{Engine}' failed and refuses every transaction from now on")]
    public static partial void EngineFailed(ILogger logger, Exception error, string engine);

    [LoggerMessage(6, LogLevel.Information, "Contend ReactDB engine '{Engine}' started: {Containers} containers of {Executors} executors each, {Reactors} reactors, {MaxRoots} roots in flight at most")]
    public static partial void ReactDbStarted(ILogger logger, string engine, int containers, int executors, int reactors, int maxRoots);

    [LoggerMessage(5, LogLevel.Warning, "Contend engine '{Engine}', worker {Worker}: {Reason}")]
    public static partial void NotPinned(ILogger logger, string engine, int worker, string reason);

    [LoggerMessage(7, LogLevel.Warning, "Contend engine '{Engine}': {Reason}")]
    public static partial void Oversubscribed(ILogger logger, string engine, string reason);

    [LoggerMessage(9, LogLevel.Information, "Contend engine '{Engine}' opened {Directory}: recovered {Transactions} commits from its log, durable epoch {Epoch}, {Rows} rows checkpointed, in {Milliseconds} ms")]
    public static partial void Recovered(ILogger logger, string engine, string directory, long transactions, long epoch, long rows, long milliseconds);

    [LoggerMessage(10, LogLevel.Warning, "Contend engine '{Engine}' opened {Directory}: {Where}")]
    public static partial void RecoveryStopped(ILogger logger, string engine, string directory, string where);

    [LoggerMessage(8, LogLevel.Critical, "Contend ReactDB engine '{Engine}': an executor thread of container {Container} failed; the engine refuses every root from now on")]
    public static partial void ExecutorFailed(ILogger logger, Exception error, string engine, int container);
}
