using System.Buffers.Binary;
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

    /// <summary>The async callers of a YCSB run unless told otherwise (the study's and <c>contend run</c>'s).</summary>
    public const int YcsbCallers = 4;

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
            MaxRootsInFlight = Math.Min(mart.Carts, 256 / containers), ContextRows = mart.RowsPerContext, Name = "smartmart",
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

    /// <summary>SmartMart's two roots on a cart's reactor.</summary>
    sealed class Driver(ReactDbEngine engine, Mart deployed) : IMartDriver
    {
        public async ValueTask<MartOutcome> AddItemsAsync(int cart, long[] order)
        {
            var r = await engine.ExecuteAsync(deployed.Cart(cart), deployed.AddItems, order).ConfigureAwait(false);
            return new(r.Outcome.Outcome, r.Outcome.Reason);
        }

        public async ValueTask<MartOutcome> CheckoutAsync(int cart)
        {
            var r = await engine.ExecuteAsync(deployed.Cart(cart), deployed.Checkout, default).ConfigureAwait(false);
            return new(r.Outcome.Outcome, r.Outcome.Reason);
        }
    }

    static RunRow Measure(ReactDbEngine engine, SmartMart mart, Mart deployed, SmartMartDeployment deployment, int executors, RunOptions options, long tableBytes)
    {
        var run = MartInteractions.Measure(mart, options, new Driver(engine, deployed), engine.ConflictAbortsByReason);
        var total = run.Total;
        long[] aborts = run.After.Zip(run.Before, (a, b) => a - b).ToArray();
        long conflicts = aborts.Sum();
        SerializabilityChecker.Report? report = options.RecordHistory ? SerializabilityChecker.Check(engine.History()) : null;
        double commit = engine.MeanCommitMicros();
        var shares = new Dictionary<string, double>(run.Latencies) { [CommitMicrosName] = commit };
        return new RunRow(Protocol, "smartmart", mart.Describe(deployment, executors), options.Threads, run.Seconds, total.Commits, total.Commits / run.Seconds,
                          conflicts / (double)Math.Max(1, total.Commits + total.UserAborts + conflicts), total.UserAborts, Runner.ByReason(aborts),
                          total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99),
                          report?.Transactions ?? -1, report?.Anomalies.Count ?? -1,
                          Runner.FirstAnomaly(report),
                          [], tableBytes, shares, string.Create(CultureInfo.InvariantCulture, $"{run.Detail}; commit protocol {commit:F1} us per attempt"));
    }

    /// <summary>The share name of a run's mean commit protocol time, in microseconds, per root attempt.</summary>
    public const string CommitMicrosName = "commit_us";

    /// <summary>
    /// YCSB's transactions (the same stream <see cref="Ycsb"/> draws for every protocol) as a
    /// function of one reactor that owns the table, in the sync deployment: one container with
    /// an executor per worker thread. <paramref name="callers"/> async callers each await one
    /// root at a time, as <see cref="Runner.RunEmbedded"/>'s do against <see cref="ContendEngine"/>:
    /// the same work through each engine's front door, so that what ReactDB adds to Silo shows.
    /// </summary>
    /// <param name="seat">its place in an <see cref="InTurn"/> measurement; null: measured alone</param>
    public static RunRow RunYcsb(long rows, int requests, double readFraction, double theta, int callers, RunOptions options, InTurn.Seat? seat = null)
    {
        var ycsb = new Ycsb(rows, requests, readFraction, theta, table: "ycsb.usertable");
        var db = new Database(); // the engine disposes it
        ycsb.Load(db);
        long tableBytes = db.MemoryBytes;
        var deployment = new ReactorDeployment(db, 1);
        var reactor = deployment.Add("ycsb", 0, "usertable");
        var usertable = reactor.Relation("usertable");
        var function = new ReactorFunction("ycsb", (call, args) =>
        {
            var a = args.Span;
            int count = (int)a[0];
            long sum = 0;
            for (int i = 0; i < count; i++)
                sum += a[1 + requests + i] != 0 ? call.Write(usertable, a[1 + i], IncrementFirst) : call.Read(usertable, a[1 + i], ReadFirst);
            return ValueTask.FromResult(sum);
        });
        var engine = new ReactDbEngine(deployment, new ReactDbOptions
        {
            ExecutorsPerContainer = options.Threads, RecordHistory = options.RecordHistory, PinExecutors = options.Pin,
            MaxRootsInFlight = Math.Min(callers, 256), Name = "ycsb",
        });
        try
        {
            var (total, measured, before, after) = Runner.MeasureCallers(callers, options, c =>
            {
                var scratch = new TxnContext(c, recorder: null); // where the source writes each transaction's arguments
                var source = ycsb.CreateSource(c, options.Seed);
                var args = new long[1 + 2 * requests];
                return async mine =>
                {
                    var program = source.Next(scratch);
                    int count = program.Ops.Length;
                    args[0] = count;
                    scratch.Args.AsSpan(0, count).CopyTo(args.AsSpan(1));
                    scratch.Args.AsSpan(requests, count).CopyTo(args.AsSpan(1 + requests));
                    long start = Stopwatch.GetTimestamp();
                    var result = await engine.ExecuteAsync(reactor, function, args).ConfigureAwait(false);
                    mine.Count(result.Outcome.Outcome, result.Outcome.Reason, start);
                };
            }, engine.ConflictAbortsByReason, seat: seat);
            long[] aborts = after.Zip(before, (a, b) => a - b).ToArray();
            long conflicts = aborts.Sum();
            SerializabilityChecker.Report? report = options.RecordHistory ? SerializabilityChecker.Check(engine.History()) : null;
            double commit = engine.MeanCommitMicros();
            return new RunRow(Protocol, ycsb.Name, $"{ycsb.Describe()}; ReactDB sync deployment (1 container, {options.Threads} executors), one reactor owning the table, {callers} async callers",
                              options.Threads, measured, total.Commits, total.Commits / measured,
                              conflicts / (double)Math.Max(1, total.Commits + total.UserAborts + conflicts), total.UserAborts, Runner.ByReason(aborts),
                              total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99),
                              report?.Transactions ?? -1, report?.Anomalies.Count ?? -1, Runner.FirstAnomaly(report),
                              [], tableBytes, new Dictionary<string, double> { [CommitMicrosName] = commit },
                              string.Create(CultureInfo.InvariantCulture, $"commit protocol {commit:F1} us per attempt"));
        }
        finally
        {
            engine.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }
    }

    /// <summary><see cref="RunYcsb"/> and <paramref name="protocol"/> (plain Silo, for the study)
    /// through <see cref="ContendEngine"/> on the same YCSB work, measured in turn
    /// (<see cref="InTurn"/>): both rows, and ReactDB's throughput over the other's per pair of slices
    /// in which both committed.</summary>
    public static (RunRow ReactDb, RunRow Other, double[] Ratios) RunYcsbBeside(string protocol, long rows, int requests, double readFraction, double theta,
                                                                               int callers, RunOptions options) =>
        new InTurn(InTurn.Slice, options).Run(
            seat => RunYcsb(rows, requests, readFraction, theta, callers, options, seat),
            seat => Runner.RunEmbedded(protocol, () => new Ycsb(rows, requests, readFraction, theta), options, callers, seat: seat));

    static long ReadFirst(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    static long IncrementFirst(Span<byte> row)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }
}
