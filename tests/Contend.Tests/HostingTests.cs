using System.Collections.Concurrent;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Contend.Tests;

/// <summary>
/// The engine in a generic host: options bound from configuration and checked at start-up, the
/// engine and the programs as services, the host's stop draining the engine and checking its
/// history, the host's logger receiving what the engine says.
/// </summary>
public class HostingTests
{
    sealed record BankPrograms(TxnProgram Transfer, TxnProgram Audit);

    sealed class Collect : ILoggerProvider
    {
        public readonly ConcurrentQueue<(string Category, LogLevel Level, string Message)> Entries = new();
        public ILogger CreateLogger(string categoryName) => new Scoped(this, categoryName);
        public void Dispose() { }

        sealed class Scoped(Collect into, string category) : ILogger
        {
            public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
            public bool IsEnabled(LogLevel logLevel) => true;
            public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
                into.Entries.Enqueue((category, logLevel, formatter(state, exception)));
        }
    }

    /// <summary>A host with these settings and this log, its engine registered by <paramref name="register"/>.</summary>
    static IHost Host(Dictionary<string, string?> settings, Collect log, Action<IServiceCollection> register)
    {
        var builder = Microsoft.Extensions.Hosting.Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        builder.Configuration.AddInMemoryCollection(settings);
        builder.Logging.AddProvider(log);
        register(builder.Services);
        return builder.Build();
    }

    static IHost Host(Dictionary<string, string?> settings, Collect log) =>
        Host(settings, log, services => services.AddContend((db, _) =>
        {
            var (transfer, audit) = ContendEngineTests.OpenAccounts(db);
            return new BankPrograms(transfer, audit);
        }));

    [Fact]
    public async Task TheHostStartsTheEngineFromConfigurationAndDrainsItOnStop()
    {
        var log = new Collect();
        using var host = Host(new()
        {
            ["Contend:Protocol"] = "Silo",
            ["Contend:Workers"] = "2",
            ["Contend:Pin"] = "false",
            ["Contend:RecordHistory"] = "true",
            ["Contend:Name"] = "hosted",
        }, log);
        await host.StartAsync();
        var engine = host.Services.GetRequiredService<ContendEngine>();
        var bank = host.Services.GetRequiredService<BankPrograms>();
        Assert.Equal("Silo", engine.Options.Protocol);
        var transfers = Enumerable.Range(0, 200).Select(i => engine.ExecuteAsync(bank.Transfer, [i % 3, 3 + i % 3, 1]).AsTask()).ToArray();
        await host.StopAsync();
        Assert.All(await Task.WhenAll(transfers), o => Assert.True(o.Committed)); // accepted before the stop, all ran
        await Assert.ThrowsAsync<EngineClosedException>(() => engine.ExecuteAsync(bank.Transfer, [0, 1, 1]).AsTask());
        var entries = log.Entries.ToArray();
        Assert.Contains(entries, e => e.Category == typeof(ContendEngine).FullName && e.Message.Contains("engine 'hosted' started: protocol Silo, 2 workers"));
        Assert.Contains(entries, e => e.Message.Contains("engine 'hosted' stopped: 200 committed"));
        Assert.Contains(entries, e => e.Level == LogLevel.Information && e.Message.Contains("history of 200 committed transactions checked: serializable"));
    }

    [Fact]
    public async Task OptionsOutOfRangeStopTheHostAtStartNamingTheOption()
    {
        using var host = Host(new() { ["Contend:Workers"] = "0" }, new Collect());
        var refused = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());
        Assert.Contains("EngineOptions.Workers 0: must be 1..255", refused.Message);
    }

    static IHost ReactDbHost(Dictionary<string, string?> settings, Collect log) =>
        Host(settings, log, services => services.AddReactDb((db, _) => ReactDB.ReactDbTests.Bank(4, 2, db)));

    [Fact]
    public async Task TheHostStartsAReactDbEngineFromConfigurationAndDrainsItOnStop()
    {
        var log = new Collect();
        using var host = ReactDbHost(new()
        {
            ["ReactDB:ExecutorsPerContainer"] = "2",
            ["ReactDB:MaxRootsInFlight"] = "128", // every root below has a slot at once: none waits for one when the stop comes
            ["ReactDB:RecordHistory"] = "true",
            ["ReactDB:Name"] = "mart",
        }, log);
        await host.StartAsync();
        var engine = host.Services.GetRequiredService<ReactDbEngine>();
        var deployment = host.Services.GetRequiredService<ReactorDeployment>();
        Assert.Same(engine.Deployment, deployment);
        Assert.Equal(2, engine.Options.ExecutorsPerContainer);
        var transfer = ReactDB.ReactDbTests.Transfer(deployment);
        // From acct i to acct i+1 (the other container): a root and a queued sub-transaction each.
        var roots = Enumerable.Range(0, 100).Select(i =>
            engine.ExecuteAsync(deployment.Reactors[i % 4], transfer, new long[] { i % 2, 1, (i + 1) % 4, i % 2 }).AsTask()).ToArray();
        await host.StopAsync();
        Assert.All(await Task.WhenAll(roots), r => Assert.True(r.Outcome.Committed)); // accepted before the stop, all ran
        await Assert.ThrowsAsync<EngineClosedException>(() => engine.ExecuteAsync(deployment.Reactors[0], transfer, new long[] { 0, 1, 1, 0 }).AsTask());
        var entries = log.Entries.ToArray();
        Assert.Contains(entries, e => e.Category == typeof(ReactDbEngine).FullName && e.Message.Contains("ReactDB engine 'mart' started: 2 containers of 2 executors each, 4 reactors"));
        Assert.Contains(entries, e => e.Message.Contains("engine 'mart' stopped: 100 committed"));
        // One entry per container a root committed in: 2 each.
        Assert.Contains(entries, e => e.Level == LogLevel.Information && e.Message.Contains("engine 'mart': history of 200 committed transactions checked: serializable"));
    }

    [Fact]
    public async Task ReactDbOptionsOutOfRangeStopTheHostAtStartNamingTheOption()
    {
        using var host = ReactDbHost(new() { ["ReactDB:ExecutorsPerContainer"] = "0" }, new Collect());
        var refused = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());
        Assert.Contains("ReactDbOptions.ExecutorsPerContainer = 0: outside 1..64", refused.Message);
    }

    [Fact]
    public void OneReactDbEnginePerHostBesideAContendEngine()
    {
        var services = new ServiceCollection();
        services.AddContend((db, _) => ContendEngineTests.OpenAccounts(db).Transfer);
        services.AddReactDb((db, _) => ReactDB.ReactDbTests.Bank(2, 1, db));
        var twice = Assert.Throws<InvalidOperationException>(() => services.AddReactDb((db, _) => ReactDB.ReactDbTests.Bank(2, 1, db)));
        Assert.Contains("a ReactDB engine is registered already", twice.Message);
    }

    [Fact]
    public void OneEnginePerHost()
    {
        var services = new ServiceCollection();
        services.AddContend((db, _) => ContendEngineTests.OpenAccounts(db).Transfer);
        var twice = Assert.Throws<InvalidOperationException>(() => services.AddContend((db, _) => ContendEngineTests.OpenAccounts(db).Transfer));
        Assert.Contains("an engine is registered already", twice.Message);
    }
}
