using System.Diagnostics;
using System.Globalization;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness.Workloads;

namespace Contend.Harness;

/// <summary>Runs ReactDB over SmartMart: a client per cart, each running interactions (add_items,
/// then checkout once it commits) through the engine's front door, awaiting one at a time.</summary>
internal static class ReactDbRunner
{
    public const string Protocol = "ReactDB";

    public static RunRow Run(SmartMart mart, SmartMartDeployment deployment, RunOptions options)
    {
        var db = new Database(); // the engine disposes it
        var deployed = mart.Deploy(db, deployment, options.Seed);
        long tableBytes = db.MemoryBytes;
        int containers = deployed.Deployment.Containers;
        int executors = deployment == SmartMartDeployment.Sync ? options.Threads : 1;
        var engine = new ReactDbEngine(deployed.Deployment, new ReactDbOptions
        {
            ExecutorsPerContainer = executors, RecordHistory = options.RecordHistory, PinExecutors = options.Pin,
            MaxRootsInFlight = Math.Min(mart.Carts, 256 / containers), Name = "smartmart",
        });
        try
        {
            return Measure(engine, mart, deployed, deployment, executors, options, tableBytes);
        }
        finally
        {
            engine.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }
    }

    static RunRow Measure(ReactDbEngine engine, SmartMart mart, Mart deployed, SmartMartDeployment deployment, int executors, RunOptions options, long tableBytes)
    {
        var interactions = new long[mart.Carts];
        var (total, measured, before, after) = Runner.MeasureCallers(mart.Carts, options, k =>
        {
            var client = mart.CreateClient(k, options.Seed);
            var cart = deployed.Cart(k);
            return async mine =>
            {
                long start = Stopwatch.GetTimestamp();
                var added = await engine.ExecuteAsync(cart, deployed.AddItems, client.NextOrder()).ConfigureAwait(false);
                mine.Count(added.Outcome.Outcome, added.Outcome.Reason, start);
                if (!added.Outcome.Committed) return;
                start = Stopwatch.GetTimestamp();
                var bought = await engine.ExecuteAsync(cart, deployed.Checkout, default).ConfigureAwait(false);
                mine.Count(bought.Outcome.Outcome, bought.Outcome.Reason, start);
                if (bought.Outcome.Committed) interactions[k]++;
            };
        }, engine.ConflictAbortsByReason, reset: k => interactions[k] = 0);
        long[] aborts = after.Zip(before, (a, b) => a - b).ToArray();
        long conflicts = aborts.Sum();
        SerializabilityChecker.Report? report = options.RecordHistory ? SerializabilityChecker.Check(engine.History()) : null;
        string detail = string.Create(CultureInfo.InvariantCulture, $"interactions (add_items, then checkout): {interactions.Sum() / measured:N0}/s");
        return new RunRow(Protocol, "smartmart", mart.Describe(deployment, executors), options.Threads, measured, total.Commits, total.Commits / measured,
                          conflicts / (double)Math.Max(1, total.Commits + total.UserAborts + conflicts), total.UserAborts, Runner.ByReason(aborts),
                          total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99),
                          report?.Transactions ?? -1, report?.Anomalies.Count ?? -1,
                          Runner.FirstAnomaly(report),
                          [], tableBytes, new Dictionary<string, double>(), detail);
    }
}
