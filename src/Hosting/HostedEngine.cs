using Contend.Engine.History;
using Contend.Engine.Storage;
using Microsoft.Extensions.Logging;

namespace Contend.Hosting;

/// <summary>What a host does with either engine: make it on a new database, and on the host's
/// stop drain it within the shutdown timeout, then, when it recorded its history, check it and
/// log the verdict.</summary>
internal static partial class HostedEngine
{
    /// <summary>Runs <paramref name="make"/> on a new database, which it loads and hands to the
    /// engine it makes; the database is disposed if that throws.</summary>
    public static T OnNewDatabase<T>(Func<Database, T> make)
    {
        var db = new Database();
        try
        {
            return make(db);
        }
        catch
        {
            db.Dispose();
            throw;
        }
    }

    /// <param name="dispose">drains the engine and frees its database</param>
    /// <param name="history">the drained engine's history; null when it recorded none</param>
    /// <param name="log">the host's log for the verdict</param>
    /// <param name="engine">the engine's name</param>
    /// <param name="cancellationToken">the host's shutdown timeout: past it, the drain is left to finish on its own</param>
    public static async Task DrainAndCheckAsync(Func<ValueTask> dispose, Func<IReadOnlyList<CommittedTxn>>? history,
                                                ILogger log, string engine, CancellationToken cancellationToken)
    {
        try
        {
            await dispose().AsTask().WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            DrainCutShort(log, engine);
            return;
        }
        if (history is null) return;
        var report = SerializabilityChecker.Check(history());
        if (report.Serializable) HistorySerializable(log, engine, report.Transactions);
        else HistoryNotSerializable(log, engine, report.Transactions, report.Anomalies.Count, report.Anomalies[0].Description);
    }

    [LoggerMessage(1, LogLevel.Warning, "Contend engine '{Engine}': the host's stop timed out before the engine drained; transactions still running end on their own")]
    static partial void DrainCutShort(ILogger logger, string engine);

    [LoggerMessage(2, LogLevel.Information, "Contend engine '{Engine}': history of {Transactions} committed transactions checked: serializable")]
    static partial void HistorySerializable(ILogger logger, string engine, int transactions);

    [LoggerMessage(3, LogLevel.Error, "Contend engine '{Engine}': history of {Transactions} committed transactions checked: NOT serializable, {Anomalies} anomalies; first: {First}")]
    static partial void HistoryNotSerializable(ILogger logger, string engine, int transactions, int anomalies, string first);
}
