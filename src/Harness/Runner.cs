using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Json;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Harness;

/// <summary>Bad input: exit code 2 and one line naming the problem.</summary>
internal sealed class UsageException(string message) : Exception(message);

internal sealed record RunRow(string Protocol, string Workload, string Config, int Threads, double Seconds, long Commits,
                            double Throughput, double AbortRate, long UserAborts, IReadOnlyDictionary<string, long> AbortsByReason,
                            double P50Micros, double P99Micros, int CheckedTransactions, int Anomalies, string? FirstAnomaly,
                            IReadOnlyList<string> Warnings, long TableBytes, IReadOnlyDictionary<string, double> Shares, string? Detail);

/// <summary>Runs one protocol over one freshly loaded workload, and checks its history when asked.</summary>
internal static class Runner
{
    static UsageException UnknownProtocol(string name) => new(ProtocolRegistry.Unknown(name));

    /// <summary>The protocol <c>--protocol</c> and <c>--beside</c> name, spelled as the engine
    /// spells it: any case matches, as it always did for ReactDB and Chiller. A name no protocol
    /// has comes back as given, for the error that lists the known ones.</summary>
    public static string ProtocolSpelling(string name) =>
        ProtocolRegistry.Descriptors.Select(d => d.Name).Append(ReactDbRunner.Protocol).Append(ClusterCommand.Chiller)
            .FirstOrDefault(known => known.Equals(name, StringComparison.OrdinalIgnoreCase)) ?? name;

    /// <param name="protocolOptions">the protocol's knobs (<see cref="ProtocolDescriptor.OptionsType"/>); null: its defaults</param>
    public static RunRow RunOne(string protocolName, Func<IWorkload> makeWorkload, RunOptions options, Action<double>? progress = null,
                                ProtocolOptions? protocolOptions = null)
    {
        if (!ProtocolRegistry.TryFind(protocolName, out var descriptor))
            throw UnknownProtocol(protocolName);
        var workload = makeWorkload();
        using var db = new Database();
        workload.Load(db);
        var protocol = descriptor.Create(new ProtocolSetup(db, options.Threads, protocolOptions));
        var result = WorkerPool.Run(protocol, workload, options, progress);
        SerializabilityChecker.Report? report = result.History is null ? null : SerializabilityChecker.Check(result.History);
        // The protocol was built for this run: what it counted is the run's, warm-up included.
        var protocolReport = descriptor.Report(protocol, options.Threads * (options.WarmupSeconds + result.MeasuredSeconds));
        return new RunRow(protocol.Name, workload.Name, workload.Describe(), options.Threads, result.MeasuredSeconds, result.Total.Commits,
                          result.Throughput, result.AbortRate, result.Total.UserAborts, ByReason(result.Total.Aborts),
                          result.Total.LatencyPercentileMicros(50), result.Total.LatencyPercentileMicros(99),
                          report?.Transactions ?? -1, report?.Anomalies.Count ?? -1, FirstAnomaly(report),
                          Warnings(result.Warnings, result.Total.Aborts), db.MemoryBytes, protocolReport.Shares, protocolReport.Detail);
    }

    /// <summary>A run's conflict aborts by reason, the reasons that occurred.</summary>
    internal static Dictionary<string, long> ByReason(long[] aborts) =>
        Enum.GetValues<AbortReason>().Where(r => r != AbortReason.None && aborts[(int)r] > 0).ToDictionary(r => r.ToString(), r => aborts[(int)r]);

    /// <summary>The run's warnings, and one when inserts found a table full.</summary>
    static List<string> Warnings(IEnumerable<string> run, long[] aborts)
    {
        var warnings = run.ToList();
        if (aborts[(int)AbortReason.TableFull] > 0) warnings.Add("inserts found a table full: raise the workload's insert capacity");
        return warnings;
    }

    internal static string? FirstAnomaly(SerializabilityChecker.Report? report) =>
        report?.Anomalies.FirstOrDefault() is { } a ? $"{a.Kind}: {a.Description}" : null;

    /// <summary>
    /// As <see cref="RunOne"/>, through the front door a service uses: a <see cref="ContendEngine"/>
    /// with <see cref="RunOptions.Threads"/> workers, and <paramref name="callers"/> async callers
    /// on the thread pool, each drawing its workload's transactions and awaiting one at a time.
    /// Latency is the caller's: queueing included. Conflict aborts are the engine's over the
    /// measured window.
    /// </summary>
    /// <param name="seat">its place in an <see cref="InTurn"/> measurement; null: measured alone</param>
    /// <param name="durable">a durable engine, its log in this directory (which must be empty or
    /// missing), syncing once an <paramref name="epochLength"/>; null: in memory</param>
    public static RunRow RunEmbedded(string protocolName, Func<IWorkload> makeWorkload, RunOptions options, int callers,
                                     ProtocolOptions? protocolOptions = null, InTurn.Seat? seat = null, string? durable = null, TimeSpan? epochLength = null)
    {
        if (durable is not null && Directory.Exists(durable) && Directory.EnumerateFileSystemEntries(durable).Any())
            throw new UsageException($"--durable {durable}: not empty; a run starts from its load, so give an empty or new directory");
        if (!ProtocolRegistry.TryFind(protocolName, out var descriptor))
            throw UnknownProtocol(protocolName);
        if (callers is < 1 or > 4096) throw new UsageException($"--callers {callers}: must be in 1..4096");
        var workload = makeWorkload();
        var db = new Database(); // the engine disposes it
        workload.Load(db);
        long tableBytes = db.MemoryBytes;
        using var engine = new ContendEngine(db, new EngineOptions
        {
            Protocol = protocolName, Workers = options.Threads, Pin = options.Pin, ProtocolOptions = protocolOptions,
            RecordHistory = options.RecordHistory, Name = workload.Name, QueueCapacity = Math.Max(1024, callers),
            Durability = durable is null ? DurabilityMode.None : DurabilityMode.Durable, DataDirectory = durable,
            EpochLength = epochLength ?? TimeSpan.FromMilliseconds(20),
        });
        var (total, measured, before, after) = MeasureCallers(callers, options, c =>
        {
            var scratch = new TxnContext(c, recorder: null); // where the source writes each transaction's arguments
            var source = workload.CreateSource(c, options.Seed);
            return async mine =>
            {
                var program = source.Next(scratch);
                long start = Stopwatch.GetTimestamp();
                var outcome = await engine.ExecuteAsync(program, scratch.Args.AsSpan(0, program.ArgCount)).ConfigureAwait(false);
                mine.Count(outcome.Outcome, outcome.Reason, start);
            };
        }, engine.Totals, seat: seat);
        long conflicts = after.TotalAborts - before.TotalAborts;
        long[] aborts = after.Aborts.Zip(before.Aborts, (a, b) => a - b).ToArray(); // the measured window's
        SerializabilityChecker.Report? report = options.RecordHistory ? SerializabilityChecker.Check(engine.History()) : null;
        var protocolReport = descriptor.Report(engine.Protocol, options.Threads * (options.WarmupSeconds + measured));
        string mode = durable is null ? "" : $", durable (epoch {(epochLength ?? TimeSpan.FromMilliseconds(20)).TotalMilliseconds} ms, log in {durable})";
        return new RunRow(engine.Protocol.Name + (durable is null ? "" : " durable"), workload.Name, $"{workload.Describe()}; through ContendEngine, {callers} async callers{mode}",
                          options.Threads, measured, total.Commits, total.Commits / measured,
                          conflicts / (double)Math.Max(1, total.Commits + total.UserAborts + conflicts), total.UserAborts, ByReason(aborts),
                          total.LatencyPercentileMicros(50), total.LatencyPercentileMicros(99),
                          report?.Transactions ?? -1, report?.Anomalies.Count ?? -1, FirstAnomaly(report),
                          Warnings([], aborts), tableBytes, protocolReport.Shares, protocolReport.Detail);
    }

    /// <summary>Opens a durable run's directory again on a fresh load of its workload, as a restart
    /// does, and says what recovery took: its time, and its rate against the log's size.</summary>
    public static string Recover(Func<IWorkload> makeWorkload, string directory, int threads)
    {
        long logBytes = Directory.EnumerateFiles(directory, "log-*").Sum(f => new FileInfo(f).Length);
        long checkpointBytes = new FileInfo(Path.Combine(directory, "checkpoint")).Length;
        var db = new Database();
        var load = Stopwatch.StartNew();
        makeWorkload().Load(db);
        var loaded = load.Elapsed;
        using var engine = new ContendEngine(db, new EngineOptions
        {
            Workers = threads, Protocol = "NoWait", Durability = DurabilityMode.Durable, DataDirectory = directory, Name = "recovery",
        });
        var r = engine.Recovery!;
        double seconds = r.Elapsed.TotalSeconds;
        return $"recovery: the checkpoint ({checkpointBytes / 1e6:F1} MB) and {r.Transactions:N0} commits of the log ({logBytes / 1e6:F1} MB) to epoch {r.Epoch}, " +
               $"then a checkpoint of {r.Rows:N0} rows, in {seconds:F2} s ({r.Transactions / seconds:N0} commits/s, {(logBytes + checkpointBytes) / 1e6 / seconds:F0} MB/s read); the load before it took {loaded.TotalSeconds:F2} s";
    }

    /// <summary>
    /// Runs <paramref name="callers"/> async callers on the thread pool, each repeating its step
    /// (made by <paramref name="caller"/> for its index) until the run stops: for the warm-up, then
    /// for the measured seconds, its stats reset when that window opens (and <paramref name="reset"/>
    /// called, on the caller's own flow, for what else it counts). Returns the callers' stats of
    /// the window, its length, and <paramref name="snapshot"/> taken as it opened and closed.
    /// With a <paramref name="seat"/>, the callers work only in the run's slices of an
    /// <see cref="InTurn"/> measurement, which opens the window and says its length.
    /// </summary>
    internal static (WorkerStats Total, double Seconds, T Before, T After) MeasureCallers<T>(
        int callers, RunOptions options, Func<int, Func<WorkerStats, Task>> caller, Func<T> snapshot, Action<int>? reset = null,
        InTurn.Seat? seat = null)
    {
        if (seat is not null && reset is not null) throw new ArgumentException("a run measured in turn resets its callers' stats between slices, not on their flows", nameof(reset));
        const int Warmup = 0, Measure = 1, Stop = 2;
        int phase = options.WarmupSeconds > 0 ? Warmup : Measure;
        var stats = Enumerable.Range(0, callers).Select(_ => new WorkerStats()).ToArray();
        var work = Enumerable.Range(0, callers).Select(c => Task.Run(async () =>
        {
            var step = caller(c);
            var mine = stats[c];
            if (seat is not null)
            {
                while (!seat.Stopped)
                {
                    if (!seat.TryEnter())
                    {
                        await seat.Opened.ConfigureAwait(false);
                        continue;
                    }
                    try
                    {
                        await step(mine).ConfigureAwait(false);
                    }
                    finally
                    {
                        seat.Leave();
                    }
                }
                return;
            }
            bool measuring = false;
            while (Volatile.Read(ref phase) != Stop)
            {
                if (!measuring && Volatile.Read(ref phase) == Measure)
                {
                    mine.Reset();
                    reset?.Invoke(c);
                    measuring = true;
                }
                await step(mine).ConfigureAwait(false);
            }
        })).ToArray();
        var total = new WorkerStats();
        if (seat is not null)
        {
            seat.Join(() => stats.Sum(s => s.Commits), () => Array.ForEach(stats, s => s.Reset()), () => snapshot()!);
            Task.WaitAll(work);
            foreach (var s in stats) total.Add(s);
            // A run stopped before any measured slice (the other run failed) has no window.
            return (total, seat.Seconds, seat.Before is T opened ? opened : default!, seat.After is T closed ? closed : default!);
        }
        if (options.WarmupSeconds > 0)
        {
            Thread.Sleep(TimeSpan.FromSeconds(options.WarmupSeconds));
            Volatile.Write(ref phase, Measure);
        }
        var before = snapshot();
        var clock = Stopwatch.StartNew();
        Thread.Sleep(TimeSpan.FromSeconds(options.Seconds));
        var after = snapshot();
        double measured = clock.Elapsed.TotalSeconds;
        Volatile.Write(ref phase, Stop);
        Task.WaitAll(work);
        foreach (var s in stats) total.Add(s);
        return (total, measured, before, after);
    }

    public static string Table(IReadOnlyList<RunRow> rows)
    {
        var sb = new StringBuilder();
        sb.AppendLine($"{"protocol",-20} {"txn/s",12} {"abort rate",10} {"p50 us",8} {"p99 us",9} {"checked txns",13} {"anomalies",9}  aborts by reason");
        foreach (var r in rows)
        {
            string check = r.Anomalies < 0 ? "-" : r.Anomalies.ToString(CultureInfo.InvariantCulture);
            string checkedTxns = r.CheckedTransactions < 0 ? "off" : r.CheckedTransactions.ToString("N0", CultureInfo.InvariantCulture);
            string reasons = string.Join(", ", r.AbortsByReason.Select(kv => $"{kv.Key} {kv.Value:N0}"));
            sb.AppendLine(CultureInfo.InvariantCulture,
                $"{r.Protocol,-20} {r.Throughput,12:N0} {r.AbortRate,10:P1} {r.P50Micros,8:N1} {r.P99Micros,9:N1} {checkedTxns,13} {check,9}  {reasons}");
        }
        return sb.ToString();
    }

    /// <summary>Run metadata every result file carries.</summary>
    public static Dictionary<string, string> Metadata(string commandLine, ulong seed) => new()
    {
        ["command"] = commandLine,
        ["seed"] = seed.ToString(CultureInfo.InvariantCulture),
        ["commit"] = GitCommit(),
        ["machine"] = $"{Environment.MachineName}, {Environment.ProcessorCount} cores, {System.Runtime.InteropServices.RuntimeInformation.OSDescription}, .NET {Environment.Version}",
        ["date"] = DateTime.UtcNow.ToString("yyyy-MM-ddTHH:mm:ssZ", CultureInfo.InvariantCulture),
    };

    /// <summary>The checkout's commit, with "-dirty" when it has local changes: then the
    /// binary that produced a result need not be that commit's code.</summary>
    static string GitCommit()
    {
        try
        {
            using var git = Process.Start(new ProcessStartInfo("git", "describe --always --dirty --abbrev=7")
            { RedirectStandardOutput = true, RedirectStandardError = true, WorkingDirectory = AppContext.BaseDirectory })!;
            string output = git.StandardOutput.ReadToEnd().Trim();
            git.WaitForExit();
            return git.ExitCode == 0 ? output : "unknown";
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return "unknown (git not found)";
        }
    }

    /// <summary>Checks up front that <paramref name="prefix"/>.csv and .json can be written, so a
    /// long run does not end in a lost result.</summary>
    public static void CheckWritable(string prefix)
    {
        string dir = Path.GetDirectoryName(Path.GetFullPath(prefix))!;
        if (!Directory.Exists(dir)) throw new UsageException($"--out {prefix}: directory {dir} does not exist");
        string probe = Path.Combine(dir, $".contend-probe-{Environment.ProcessId}");
        try
        {
            File.WriteAllText(probe, "");
            File.Delete(probe);
        }
        catch (Exception e) when (e is UnauthorizedAccessException or IOException)
        {
            throw new UsageException($"--out {prefix}: cannot write in {dir}: {e.Message}");
        }
    }

    /// <summary>Writes prefix.csv and prefix.json whole or not at all (temporary file, then rename).</summary>
    public static void Write(string prefix, IReadOnlyList<RunRow> rows, Dictionary<string, string> metadata)
    {
        var csv = new StringBuilder();
        csv.AppendLine("protocol,workload,threads,seconds,commits,txn_per_s,abort_rate,user_aborts,aborts_by_reason,p50_us,p99_us,checked_txns,anomalies,config,command,seed,commit,machine,date");
        foreach (var r in rows)
        {
            csv.AppendLine(string.Join(",", new[]
            {
                r.Protocol, r.Workload, Inv(r.Threads), Inv(r.Seconds), Inv(r.Commits), Inv(r.Throughput), Inv(r.AbortRate), Inv(r.UserAborts),
                string.Join(";", r.AbortsByReason.Select(kv => $"{kv.Key}={kv.Value}")), Inv(r.P50Micros), Inv(r.P99Micros),
                Inv(r.CheckedTransactions), Inv(r.Anomalies), r.Config, metadata["command"], metadata["seed"], metadata["commit"], metadata["machine"], metadata["date"],
            }.Select(Quote)));
        }
        string json = JsonSerializer.Serialize(new { metadata, runs = rows }, new JsonSerializerOptions { WriteIndented = true });
        Atomic(prefix + ".csv", csv.ToString());
        Atomic(prefix + ".json", json);
    }

    // Shared with the studies' result files.
    internal static string Inv(IFormattable v) => v.ToString(null, CultureInfo.InvariantCulture);

    internal static string Quote(string s) => s.IndexOfAny([',', '"', '\n']) >= 0 ? $"\"{s.Replace("\"", "\"\"")}\"" : s;

    internal static void Atomic(string path, string content)
    {
        string temp = path + ".tmp";
        File.WriteAllText(temp, content);
        File.Move(temp, path, overwrite: true);
    }
}
