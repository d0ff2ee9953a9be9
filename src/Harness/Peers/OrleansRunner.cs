using System.Globalization;
using System.Net;
using System.Net.Sockets;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Orleans.Transactions;

namespace Contend.Harness.Peers;

/// <summary>
/// SmartMart on Orleans transactions (Microsoft.Orleans.Transactions), the peer ReactDB's study
/// runs beside its own: one silo in this process, with in-memory transactional storage and the
/// client co-hosted, and the same clients as ReactDB's (<see cref="MartInteractions"/>). A
/// transaction Orleans aborts (a lock conflict, a timeout) is retried at once, as ReactDB
/// retries its conflicts, and counted; its latency runs from the first try.
/// </summary>
/// <remarks>Orleans schedules its grains on the .NET thread pool, so the run's thread count does
/// not bind it: it has every core of the machine, as ReactDB's async deployment has.</remarks>
internal static class OrleansRunner
{
    public const string Series = "Orleans";

    static int FreeLoopbackPort()
    {
        using var probe = new TcpListener(IPAddress.Loopback, 0);
        probe.Start();
        return ((IPEndPoint)probe.LocalEndpoint).Port;
    }

    public static RunRow Run(SmartMart mart, RunOptions options)
    {
        if (options.RecordHistory) throw new UsageException("the Orleans peer records no history for the checker: run it without --check");
        using var host = Host.CreateDefaultBuilder()
            // Ports the OS has free now, not Orleans' defaults (11111, 30000): another silo on the
            // machine, or a second study at once, would take those and stop this one starting.
            .UseOrleans(silo => silo.UseLocalhostClustering(siloPort: FreeLoopbackPort(), gatewayPort: FreeLoopbackPort())
                                    .AddMemoryGrainStorageAsDefault().UseTransactions())
            .ConfigureServices(services => services.AddSingleton(new OrleansMart(mart, options.Seed)))
            .ConfigureLogging(logging => logging.ClearProviders())
            .Build();
        host.StartAsync().GetAwaiter().GetResult();
        try
        {
            var driver = new Driver(host.Services.GetRequiredService<IGrainFactory>());
            var run = MartInteractions.Measure(mart, options, driver, () => Volatile.Read(ref driver.Aborts));
            long aborts = run.After - run.Before;
            var total = run.Total;
            return new RunRow(Series, "smartmart", $"SmartMart on Orleans transactions: {mart.Sections} sections x {mart.ItemsPerSection:N0} items, {mart.Carts} carts, " +
                              string.Create(CultureInfo.InvariantCulture, $"orders of {mart.OrderItems} items over {mart.OrderSections} sections, delay {mart.DelayMicros} us per item; one silo in this process, in-memory transactional storage"),
                              Environment.ProcessorCount, run.Seconds, total.Commits, total.Commits / run.Seconds,
                              aborts / (double)Math.Max(1, total.Commits + aborts), 0,
                              aborts > 0 ? new Dictionary<string, long> { ["OrleansTransactionAborted"] = aborts } : new Dictionary<string, long>(),
                              total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99), -1, -1, null, [], 0,
                              run.Latencies, run.Detail);
        }
        finally
        {
            host.StopAsync().GetAwaiter().GetResult();
        }
    }

    sealed class Driver(IGrainFactory grains) : IMartDriver
    {
        public long Aborts;

        public async ValueTask<MartOutcome> AddItemsAsync(int cart, long[] order)
        {
            long customer = order[0];
            long[] items = order[2..];
            var grain = grains.GetGrain<IMartCart>(cart);
            while (true)
            {
                try
                {
                    await grain.AddItems(customer, items).ConfigureAwait(false);
                    return new(Outcome.Committed, AbortReason.None);
                }
                catch (OrleansTransactionException)
                {
                    Interlocked.Increment(ref Aborts);
                }
            }
        }

        public async ValueTask<MartOutcome> CheckoutAsync(int cart)
        {
            var grain = grains.GetGrain<IMartCart>(cart);
            while (true)
            {
                try
                {
                    await grain.Checkout().ConfigureAwait(false);
                    return new(Outcome.Committed, AbortReason.None);
                }
                catch (OrleansTransactionException)
                {
                    Interlocked.Increment(ref Aborts);
                }
            }
        }
    }
}
