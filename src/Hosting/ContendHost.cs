using System.Diagnostics.Metrics;
using Contend.Engine.History;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Contend.Hosting;

/// <summary>
/// The engine's life in a host. The engine is made when first resolved: by the host's start, or
/// by a request that comes first (a web server may start before this service does). Stopping
/// drains it: every transaction accepted ends, later ones are refused
/// (<see cref="EngineClosedException"/>), then the database is freed. An engine that records its
/// history has it checked then, and the verdict logged.
/// </summary>
internal sealed partial class ContendHost<TSchema> : IHostedService where TSchema : class
{
    readonly ILogger _log;
    readonly EngineOptions _options;

    public ContendEngine Engine { get; }
    public TSchema Schema { get; }

    public ContendHost(IServiceProvider services, Func<Database, IServiceProvider, TSchema> load)
    {
        _options = services.GetRequiredService<IOptions<EngineOptions>>().Value;
        var logs = services.GetService<ILoggerFactory>();
        _log = logs?.CreateLogger("Contend.Hosting") ?? Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance;
        var db = new Database();
        try
        {
            Schema = load(db, services) ?? throw new InvalidOperationException($"AddContend: the load function returned no {typeof(TSchema).Name}");
            Engine = new ContendEngine(db, _options, logs?.CreateLogger<ContendEngine>(), services.GetService<IMeterFactory>());
        }
        catch
        {
            db.Dispose();
            throw;
        }
    }

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask; // started when made

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        try
        {
            await Engine.DisposeAsync().AsTask().WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            DrainCutShort(_log, _options.Name);
            return;
        }
        if (!_options.RecordHistory) return;
        var report = SerializabilityChecker.Check(Engine.History());
        if (report.Serializable) HistorySerializable(_log, _options.Name, report.Transactions);
        else HistoryNotSerializable(_log, _options.Name, report.Transactions, report.Anomalies.Count, report.Anomalies[0].Description);
    }

    [LoggerMessage(1, LogLevel.Warning, "Contend engine '{Engine}': the host's stop timed out before the engine drained; transactions still running end on their own")]
    static partial void DrainCutShort(ILogger logger, string engine);

    [LoggerMessage(2, LogLevel.Information, "Contend engine '{Engine}': history of {Transactions} committed transactions checked: serializable")]
    static partial void HistorySerializable(ILogger logger, string engine, int transactions);

    [LoggerMessage(3, LogLevel.Error, "Contend engine '{Engine}': history of {Transactions} committed transactions checked: NOT serializable, {Anomalies} anomalies; first: {First}")]
    static partial void HistoryNotSerializable(ILogger logger, string engine, int transactions, int anomalies, string first);
}
