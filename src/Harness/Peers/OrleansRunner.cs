using System.Globalization;
using System.Net;
using System.Net.Sockets;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Orleans.Serialization;
using Orleans.Storage;
using Orleans.Transactions;

namespace Contend.Harness.Peers;

/// <summary>
/// SmartMart on Orleans transactions (Microsoft.Orleans.Transactions), the peer ReactDB's study
/// runs beside its own: one silo in this process, with in-memory transactional storage and the
/// client co-hosted, and the same clients as ReactDB's (<see cref="MartInteractions"/>). The
/// storage keeps its records in Orleans' own binary form, not the memory provider's default
/// JSON: every commit writes each state it touched, a section's 2 x 1,000 counters among them,
/// and JSON ran the peer 2-3x slower (docs/measured/ReactDB.md). A
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
                                    .AddMemoryGrainStorageAsDefault(storage => storage.Configure<Serializer>((o, serializer) => o.GrainStorageSerializer = new OrleansGrainStorageSerializer(serializer)))
                                    .UseTransactions())
            .ConfigureServices(services => services.AddSingleton(new OrleansMart(mart, options.Seed)))
            .ConfigureLogging(logging => logging.ClearProviders())
            .Build();
        host.StartAsync().GetAwaiter().GetResult();
        try
        {
            var driver = new Driver(host.Services.GetRequiredService<IGrainFactory>());
            var run = MartInteractions.Measure(mart, options, driver, () => (Aborts: Volatile.Read(ref driver.Aborts), TimedOut: Volatile.Read(ref driver.TimedOut)));
            long aborts = run.After.Aborts - run.Before.Aborts, timedOut = run.After.TimedOut - run.Before.TimedOut;
            var byReason = new Dictionary<string, long>();
            if (aborts > 0) byReason["OrleansTransactionAborted"] = aborts;
            if (timedOut > 0) byReason["OrleansResponseTimeout"] = timedOut;
            var total = run.Total;
            return new RunRow(Series, "smartmart", $"SmartMart on Orleans transactions: {mart.Sections} sections x {mart.ItemsPerSection:N0} items, {mart.Carts} carts, " +
                              string.Create(CultureInfo.InvariantCulture, $"orders of {mart.OrderItems} items over {mart.OrderSections} sections, delay {mart.DelayMicros} us per item; one silo in this process, in-memory transactional storage"),
                              Environment.ProcessorCount, run.Seconds, total.Commits, total.Commits / run.Seconds,
                              aborts / (double)Math.Max(1, total.Commits + aborts), 0,
                              byReason,
                              total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99), -1, -1, null,
                              timedOut > 0 ? [$"{timedOut} Orleans calls had no response in time and were tried again, their outcome in doubt"] : [], 0,
                              run.Latencies, run.Detail);
        }
        finally
        {
            host.StopAsync().GetAwaiter().GetResult();
        }
    }

    /// <summary>Runs each transaction until it commits. A call that Orleans answers with a
    /// <see cref="TimeoutException"/> (no response in its 30 s) ended in doubt: it is counted apart
    /// from the aborts and tried again, so that one stalled call costs the run its seconds
    /// instead of ending the study; the peer's state is not checked, so a checkout that did
    /// commit and runs twice changes only its inventory's figures.</summary>
    sealed class Driver(IGrainFactory grains) : IMartDriver
    {
        public long Aborts, TimedOut;

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
                catch (TimeoutException)
                {
                    Interlocked.Increment(ref TimedOut);
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
                catch (TimeoutException)
                {
                    Interlocked.Increment(ref TimedOut);
                }
            }
        }
    }
}
