using System.Diagnostics.Metrics;
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
internal sealed class ContendHost<TSchema> : IHostedService where TSchema : class
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
        (Schema, Engine) = HostedEngine.OnNewDatabase(db =>
        {
            var schema = load(db, services) ?? throw new InvalidOperationException($"AddContend: the load function returned no {typeof(TSchema).Name}");
            return (schema, new ContendEngine(db, _options, logs?.CreateLogger<ContendEngine>(), services.GetService<IMeterFactory>()));
        });
    }

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask; // started when made

    public Task StopAsync(CancellationToken cancellationToken) =>
        HostedEngine.DrainAndCheckAsync(Engine.DisposeAsync, _options.RecordHistory ? Engine.History : null, _log, _options.Name, cancellationToken);
}
