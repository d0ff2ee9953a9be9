using System.Diagnostics.Metrics;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Contend.Hosting;

/// <summary>
/// A <see cref="ReactDbEngine"/>'s life in a host, as <see cref="ContendHost{TSchema}"/> is a
/// ContendEngine's: made when first resolved, drained by the host's stop (every root accepted
/// ends, later ones are refused), its history checked then when it recorded one.
/// </summary>
internal sealed class ReactDbHost : IHostedService
{
    readonly ILogger _log;
    readonly ReactDbOptions _options;

    public ReactDbEngine Engine { get; }

    public ReactDbHost(IServiceProvider services, Func<Database, IServiceProvider, ReactorDeployment> deploy)
    {
        _options = services.GetRequiredService<IOptions<ReactDbOptions>>().Value;
        var logs = services.GetService<ILoggerFactory>();
        _log = logs?.CreateLogger("Contend.Hosting") ?? Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance;
        Engine = HostedEngine.OnNewDatabase(db =>
        {
            var deployment = deploy(db, services) ?? throw new InvalidOperationException("AddReactDb: the deploy function returned no deployment");
            if (deployment.Database != db)
                throw new InvalidOperationException("AddReactDb: the deploy function returned a deployment of another database than the one it was given");
            return new ReactDbEngine(deployment, _options, logs?.CreateLogger<ReactDbEngine>(), services.GetService<IMeterFactory>());
        });
    }

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask; // started when made

    public Task StopAsync(CancellationToken cancellationToken) =>
        HostedEngine.DrainAndCheckAsync(Engine.DisposeAsync, _options.RecordHistory ? Engine.History : null, _log, _options.Name, cancellationToken);
}
