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
        const int Warmup = 0, Measuring = 1, Stop = 2;
        int phase = options.WarmupSeconds > 0 ? Warmup : Measuring;
        var stats = new WorkerStats[mart.Carts];
        var interactions = new long[mart.Carts];
        var clients = Enumerable.Range(0, mart.Carts).Select(k => Task.Run(async () =>
        {
            var client = mart.CreateClient(k, options.Seed);
            var cart = deployed.Cart(k);
            var mine = stats[k] = new WorkerStats();
            bool measuring = false;
            while (Volatile.Read(ref phase) != Stop)
            {
                if (!measuring && Volatile.Read(ref phase) == Measuring)
                {
                    mine.Reset();
                    interactions[k] = 0;
                    measuring = true;
                }
                long start = Stopwatch.GetTimestamp();
                var added = await engine.ExecuteAsync(cart, deployed.AddItems, client.NextOrder()).ConfigureAwait(false);
                mine.Count(added.Outcome.Outcome, added.Outcome.Reason, start);
                if (!added.Outcome.Committed) continue;
                start = Stopwatch.GetTimestamp();
                var bought = await engine.ExecuteAsync(cart, deployed.Checkout, default).ConfigureAwait(false);
                mine.Count(bought.Outcome.Outcome, bought.Outcome.Reason, start);
                if (bought.Outcome.Committed) interactions[k]++;
            }
        })).ToArray();
        if (options.WarmupSeconds > 0)
        {
            Thread.Sleep(TimeSpan.FromSeconds(options.WarmupSeconds));
            Volatile.Write(ref phase, Measuring);
        }
        var before = engine.ConflictAbortsByReason();
        var clock = Stopwatch.StartNew();
        Thread.Sleep(TimeSpan.FromSeconds(options.Seconds));
        var after = engine.ConflictAbortsByReason();
        double measured = clock.Elapsed.TotalSeconds;
        Volatile.Write(ref phase, Stop);
        Task.WaitAll(clients);
        var total = new WorkerStats();
        foreach (var s in stats) total.Add(s);
        long[] aborts = after.Zip(before, (a, b) => a - b).ToArray();
        long conflicts = aborts.Sum();
        SerializabilityChecker.Report? report = options.RecordHistory ? SerializabilityChecker.Check(engine.History()) : null;
        var byReason = Enum.GetValues<AbortReason>().Where(r => aborts[(int)r] > 0).ToDictionary(r => r.ToString(), r => aborts[(int)r]);
        string detail = string.Create(CultureInfo.InvariantCulture, $"interactions (add_items, then checkout): {interactions.Sum() / measured:N0}/s");
        return new RunRow(Protocol, "smartmart", mart.Describe(deployment, executors), options.Threads, measured, total.Commits, total.Commits / measured,
                          conflicts / (double)Math.Max(1, total.Commits + total.UserAborts + conflicts), total.UserAborts, byReason,
                          total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99),
                          report?.Transactions ?? -1, report?.Anomalies.Count ?? -1,
                          report?.Anomalies.FirstOrDefault() is { } a ? $"{a.Kind}: {a.Description}" : null,
                          [], tableBytes, new Dictionary<string, double>(), detail);
    }
}
