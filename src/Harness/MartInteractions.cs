using System.Diagnostics;
using System.Globalization;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;

namespace Contend.Harness;

/// <summary>What one SmartMart transaction of a cart came to, as an engine reports it.</summary>
internal readonly record struct MartOutcome(Outcome Outcome, AbortReason Reason)
{
    public bool Committed => Outcome == Outcome.Committed;
}

/// <summary>An engine that runs SmartMart's two transactions for a cart: ReactDB's reactors, or a peer's.</summary>
internal interface IMartDriver
{
    ValueTask<MartOutcome> AddItemsAsync(int cart, long[] order);
    ValueTask<MartOutcome> CheckoutAsync(int cart);
}

/// <summary>
/// SmartMart's clients (seed 004, Section 4.1.4): a client per cart runs interactions, add_items
/// and, once it commits, checkout, awaiting each, for the warm-up and then the measured seconds
/// (<see cref="Runner.MeasureCallers"/>). Besides every transaction's latency, each function's
/// own is kept, and the interactions completed.
/// </summary>
internal static class MartInteractions
{
    public const string AddItemsP50 = "add_items_p50_us", AddItemsP99 = "add_items_p99_us", CheckoutP50 = "checkout_p50_us", CheckoutP99 = "checkout_p99_us";

    public sealed record Measured<T>(WorkerStats Total, double Seconds, T Before, T After, double InteractionsPerSecond,
                                     Dictionary<string, double> Latencies)
    {
        public string Detail => string.Create(CultureInfo.InvariantCulture,
            $"interactions (add_items, then checkout): {InteractionsPerSecond:N0}/s; add_items p50 {Latencies[AddItemsP50]:F0} us, p99 {Latencies[AddItemsP99]:F0} us; " +
            $"checkout p50 {Latencies[CheckoutP50]:F0} us, p99 {Latencies[CheckoutP99]:F0} us");
    }

    public static Measured<T> Measure<T>(SmartMart mart, RunOptions options, IMartDriver driver, Func<T> snapshot)
    {
        var interactions = new long[mart.Carts];
        var adds = new WorkerStats[mart.Carts];
        var checkouts = new WorkerStats[mart.Carts];
        var (total, measured, before, after) = Runner.MeasureCallers(mart.Carts, options, k =>
        {
            var client = mart.CreateClient(k, options.Seed);
            var add = adds[k] = new WorkerStats();
            var checkout = checkouts[k] = new WorkerStats();
            return async mine =>
            {
                long start = Stopwatch.GetTimestamp();
                var added = await driver.AddItemsAsync(k, client.NextOrder()).ConfigureAwait(false);
                mine.Count(added.Outcome, added.Reason, start);
                add.Count(added.Outcome, added.Reason, start);
                if (!added.Committed) return;
                start = Stopwatch.GetTimestamp();
                var bought = await driver.CheckoutAsync(k).ConfigureAwait(false);
                mine.Count(bought.Outcome, bought.Reason, start);
                checkout.Count(bought.Outcome, bought.Reason, start);
                if (bought.Committed) interactions[k]++;
            };
        }, snapshot, reset: k =>
        {
            interactions[k] = 0;
            adds[k].Reset();
            checkouts[k].Reset();
        });
        var addTotal = new WorkerStats();
        var checkoutTotal = new WorkerStats();
        foreach (var s in adds) addTotal.Add(s);
        foreach (var s in checkouts) checkoutTotal.Add(s);
        var latencies = new Dictionary<string, double>
        {
            [AddItemsP50] = addTotal.LatencyPercentileMicros(50), [AddItemsP99] = addTotal.LatencyPercentileMicros(99),
            [CheckoutP50] = checkoutTotal.LatencyPercentileMicros(50), [CheckoutP99] = checkoutTotal.LatencyPercentileMicros(99),
        };
        return new Measured<T>(total, measured, before, after, interactions.Sum() / measured, latencies);
    }
}
