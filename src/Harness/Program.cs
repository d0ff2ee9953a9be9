using System.CommandLine;
using System.Globalization;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Harness;
using Contend.Harness.Studies;
using Contend.Harness.Workloads;
using Spectre.Console;

// contend: runs the engine's protocols over its workloads (../../shared/DESIGN.md, "Runner").
// Exit codes: 0 done, 1 a check failed, 2 bad input (one line naming the problem).

var protocol = new Option<string>("--protocol") { Description = $"one of {string.Join(", ", ProtocolRegistry.Names)}, Chiller (on the simulated cluster of contend cluster), or ReactDB (workload smartmart)", Required = true };
var workloadName = new Option<string>("--workload") { Description = "ycsb, stealdb, tpcc, or smartmart (ReactDB's)", DefaultValueFactory = _ => "ycsb" };
var threads = new Option<int>("--threads") { Description = "worker threads, one pinned per core", DefaultValueFactory = _ => 2 };
var seconds = new Option<double>("--seconds") { Description = "measured seconds", DefaultValueFactory = _ => 5 };
var warmup = new Option<double>("--warmup") { Description = "seconds run before measuring", DefaultValueFactory = _ => 1 };
var check = new Option<bool>("--check") { Description = "record the history and check it is serializable" };
var output = new Option<string?>("--out") { Description = "write PREFIX.csv and PREFIX.json" };
var seed = new Option<ulong>("--seed") { Description = "workload seed: the same seed gives the same transactions", DefaultValueFactory = _ => 1 };
var noPin = new Option<bool>("--no-pin") { Description = "do not pin workers to cores" };
var knobs = new WorkloadKnobs();
var protocolKnobs = new ProtocolKnobOptions();
var deployment = new Option<string>("--deployment") { Description = "ReactDB: sync (one container, an executor per thread) or async (a container per store section)", DefaultValueFactory = _ => "async" };
var beside = new Option<string?>("--beside") { Description = "another protocol through its front door (ContendEngine) on the same work in the same process, the two in turn in slices of 0.1 s, and their ratio: with --callers, or under ReactDB's ycsb run (the knobs are --protocol's; e.g. --protocol ReactDB --workload ycsb --beside Silo)" };
var callers = new Option<int>("--callers") { Description = "run through ContendEngine.ExecuteAsync, a service's front door, with this many async callers (0: the worker pool)", DefaultValueFactory = _ => 0 };

var durable = new Option<string?>("--durable") { Description = "with --callers: the engine logs every commit to this directory (empty or new) and answers a call once its epoch is synced; an engine --beside stays in memory (--protocol X --durable DIR --beside X measures what durability costs)" };
var recover = new Option<bool>("--recover") { Description = "with --durable: after the run, open its directory again on a fresh load and report recovery's time" };
var epochLength = new Option<double>("--epoch-length") { Description = "with --durable: milliseconds between the log's syncs", DefaultValueFactory = _ => 20 };
var run = new Command("run", "run one protocol on one workload and print a summary") { protocol, workloadName, threads, seconds, warmup, check, output, seed, noPin, callers, deployment, beside, durable, epochLength, recover };
protocolKnobs.AddTo(run);
knobs.AddTo(run);
run.SetAction(parse =>
{
    string name = Runner.ProtocolSpelling(parse.GetValue(protocol)!);
    if (name == ClusterCommand.Chiller) return ClusterCommand.RunChillerFor(parse);
    string? prefix = parse.GetValue(output);
    if (prefix is not null) Runner.CheckWritable(prefix);
    var options = Options(parse.GetValue(threads), parse.GetValue(seconds), parse.GetValue(warmup), parse.GetValue(check), !parse.GetValue(noPin), parse.GetValue(seed));
    if (name == ReactDbRunner.Protocol) return RunReactDb(parse, options, prefix);
    if (parse.GetResult(deployment) is { Implicit: false }) throw new UsageException($"--deployment is a ReactDB knob; this run's protocol is {name}");
    var make = knobs.Factory(parse.GetValue(workloadName)!, parse);
    var protocolOptions = protocolKnobs.For(ProtocolRegistry.TryFind(name, out var descriptor) ? descriptor : null, name, parse);
    protocolOptions?.Validate(options.Threads); // bad knobs fail here, before any load
    RunRow row;
    int front = parse.GetValue(callers);
    string? logDirectory = parse.GetValue(durable);
    var epoch = TimeSpan.FromMilliseconds(parse.GetValue(epochLength));
    if (logDirectory is not null && front is 0) throw new UsageException($"{durable.Name} runs through the front door: give --callers");
    if (parse.GetValue(beside) is { } other)
    {
        if (front is 0) throw new UsageException($"{beside.Name} runs both protocols through their front doors: give --callers");
        string otherName = BesideProtocol(other);
        return PrintInTurn(new InTurn(InTurn.Slice, options).Run(seat => Runner.RunEmbedded(name, make, options, front, protocolOptions, seat, logDirectory, epoch),
                                                                 seat => Runner.RunEmbedded(otherName, make, options, front, seat: seat)),
                           options, prefix);
    }
    if (parse.GetValue(recover) && (logDirectory is null || parse.GetValue(beside) is not null))
        throw new UsageException($"{recover.Name} reopens a --durable run's directory (without --beside)");
    if (front is not 0) row = Runner.RunEmbedded(name, make, options, front, protocolOptions, durable: logDirectory, epochLength: epoch);
    else if (options.WarmupSeconds + options.Seconds > 3 && !Console.IsOutputRedirected)
    {
        RunRow? done = null;
        AnsiConsole.Progress().Start(p =>
        {
            var task = p.AddTask($"{name} on {parse.GetValue(workloadName)}", maxValue: 1);
            done = Runner.RunOne(name, make, options, f => task.Value = f, protocolOptions);
            task.Value = 1;
        });
        row = done!;
    }
    else row = Runner.RunOne(name, make, options, protocolOptions: protocolOptions);
    Print([row]);
    if (row.Detail is not null) Console.WriteLine(row.Detail);
    Console.WriteLine($"{row.Config}\ntables and indexes: {row.TableBytes / (1024.0 * 1024 * 1024):F2} GiB");
    if (parse.GetValue(recover)) Console.WriteLine(Runner.Recover(make, logDirectory!, options.Threads));
    if (prefix is not null) Runner.Write(prefix, [row], Runner.Metadata(Environment.CommandLine, options.Seed));
    return row.Anomalies > 0 ? 1 : 0;
});

var demoSeconds = new Option<double>("--seconds") { Description = "measured seconds per protocol", DefaultValueFactory = _ => 1 };
var demo = new Command("demo", "a short high-contention YCSB run of every protocol with the history checker on, and the checker's broken control")
{ demoSeconds, threads };
demo.SetAction(parse =>
{
    var options = Options(parse.GetValue(threads), parse.GetValue(demoSeconds), 0.2, true, true, 1);
    Func<IWorkload> make = () => new Ycsb(rows: 1_000_000, requests: 16, readFraction: 0.5, theta: 0.9);
    Console.WriteLine($"{make().Describe()}; {options.Threads} workers, {options.Seconds} s each, history checked\n");
    var rows = new List<RunRow>();
    foreach (string name in ProtocolRegistry.Names.Append(ProtocolRegistry.BrokenControl))
    {
        rows.Add(Runner.RunOne(name, make, options));
        Console.Error.WriteLine($"  {name}: {rows[^1].Throughput:N0} txn/s, {rows[^1].Anomalies} anomalies");
    }
    Print(rows);
    var broken = rows.Where(r => r.Protocol != ProtocolRegistry.BrokenControl && r.Anomalies != 0).ToList();
    var control = rows.Single(r => r.Protocol == ProtocolRegistry.BrokenControl);
    foreach (var r in broken) Console.WriteLine($"FAIL {r.Protocol}: {r.FirstAnomaly}");
    Console.WriteLine(control.Anomalies > 0
        ? $"control {control.Protocol}: the checker found {control.Anomalies} anomalies, as it must; first: {control.FirstAnomaly}"
        : $"FAIL control {control.Protocol}: the checker found no anomaly in a protocol that is not serializable");
    return broken.Count == 0 && control.Anomalies > 0 ? 0 : 1;
});

var studyName = new Argument<string>("name") { Description = "the study: stealdb, strife or reactdb" };
var studySeconds = new Option<double>("--seconds") { Description = "measured seconds per run", DefaultValueFactory = _ => 2 };
var studyWarmup = new Option<double>("--warmup") { Description = "seconds run before measuring, per run", DefaultValueFactory = _ => 0.5 };
var repeats = new Option<int>("--repeats") { Description = "runs per point and protocol; the median is reported", DefaultValueFactory = _ => 3 };
var studyOut = new Option<string>("--out") { Description = "directory for the CSVs, PNGs and summary.md (created)", DefaultValueFactory = _ => "study-results" };
var small = new Option<bool>("--small") { Description = "small tables and two points per figure: checks the study runs, measures nothing" };
var studyFigures = new Option<string[]>("--figure")
{
    Description = "run only this figure (repeatable; e.g. hotset), and leave out the verdict, which reads every figure",
    AllowMultipleArgumentsPerToken = true,
};
var studyData = new Option<string?>("--data") { Description = "also append every run of the study's CSVs to DIR/study-NAME.ndjson (the project keeps them in docs/measured/data)" };
var study = new Command("study", "a paper's throughput study: CSV, PNG per figure, and a summary against the paper") { studyName, studySeconds, studyWarmup, repeats, threads, studyOut, seed, small, studyFigures, studyData };
study.SetAction(parse =>
{
    var options = new StudyOptions(parse.GetValue(threads), parse.GetValue(studySeconds), parse.GetValue(studyWarmup), parse.GetValue(repeats),
                                   parse.GetValue(seed), parse.GetValue(small), parse.GetValue(studyFigures));
    string name = parse.GetValue(studyName)!, dir = Path.Combine(parse.GetValue(studyOut)!, name);
    Func<int> runStudy = name switch
    {
        "stealdb" => () => StealDbStudy.Run(options, dir, Environment.CommandLine, Console.Out),
        "strife" => () => StrifeStudy.Run(options, dir, Environment.CommandLine, Console.Out),
        "reactdb" => () => ReactDbStudy.Run(options, dir, Environment.CommandLine, Console.Out),
        var other => throw new UsageException($"unknown study '{other}' (known: stealdb, strife, reactdb)"),
    };
    var started = DateTime.UtcNow;
    int code = runStudy();
    if (parse.GetValue(studyData) is { } data)
        Console.WriteLine($"{StudyData.Append(name, dir, started, data)} runs appended to {Path.Combine(data, $"study-{name}.ndjson")}");
    return code;
});

var root = new RootCommand("contend: Contend's protocols on its workloads") { run, demo, study, ClusterCommand.Create(), CrashCommand.Create() };
try
{
    var parsed = root.Parse(args);
    if (parsed.Errors.Count > 0)
    {
        Console.Error.WriteLine($"contend: {parsed.Errors[0].Message}");
        return 2;
    }
    // Bad input must reach the handler below (exit 2, one line), not the library's own.
    return parsed.Invoke(new InvocationConfiguration { EnableDefaultExceptionHandler = false });
}
catch (Exception e) when (e is UsageException or ArgumentOutOfRangeException or ArgumentException)
{
    string message = e is ArgumentOutOfRangeException a ? a.Message.Split(" (Parameter")[0] : e.Message;
    Console.Error.WriteLine($"contend: {message}");
    return 2;
}

static RunOptions Options(int threads, double seconds, double warmup, bool check, bool pin, ulong seed)
{
    if (threads is < 1 or > 255) throw new UsageException($"--threads {threads}: must be in 1..255");
    if (!(seconds > 0) || seconds > 86_400) throw new UsageException($"--seconds {seconds.ToString(CultureInfo.InvariantCulture)}: must be in (0, 86400]");
    if (!(warmup >= 0) || warmup > 86_400) throw new UsageException($"--warmup {warmup.ToString(CultureInfo.InvariantCulture)}: must be in [0, 86400]");
    return new RunOptions(threads, seconds, warmup, check, pin, seed);
}

int RunReactDb(ParseResult parse, RunOptions options, string? prefix)
{
    string workload = parse.GetValue(workloadName)!;
    if (workload is not ("smartmart" or "ycsb"))
        throw new UsageException($"--protocol ReactDB runs workload smartmart (reactors) or ycsb (one reactor's function over the table); this run's is {workload}");
    protocolKnobs.For(null, ReactDbRunner.Protocol, parse); // refuses every knob of the engine's protocols
    var shape = parse.GetValue(deployment) switch
    {
        "sync" => SmartMartDeployment.Sync,
        "async" => SmartMartDeployment.Async,
        var other => throw new UsageException($"--deployment {other}: sync or async"),
    };
    RunRow row;
    if (workload == "ycsb")
    {
        // The study's comparison with plain Silo, as a command: the same front door, one container.
        if (parse.GetResult(deployment) is { Implicit: false } && shape != SmartMartDeployment.Sync)
            throw new UsageException("--deployment async: ReactDB's ycsb run is one reactor in one container, the sync deployment");
        if (parse.GetValue(callers) < 0) throw new UsageException($"--callers {parse.GetValue(callers)}: must not be negative (0: {ReactDbRunner.YcsbCallers}, the default)");
        var (rows, requests, reads, theta) = knobs.ReactDbYcsb(parse);
        int front = parse.GetValue(callers) is 0 ? ReactDbRunner.YcsbCallers : parse.GetValue(callers);
        if (parse.GetValue(beside) is { } other)
            return PrintInTurn(ReactDbRunner.RunYcsbBeside(BesideProtocol(other), rows, requests, reads, theta, front, options), options, prefix);
        row = ReactDbRunner.RunYcsb(rows, requests, reads, theta, front, options);
    }
    else
    {
        if (parse.GetValue(beside) is not null) throw new UsageException($"{beside.Name} is a knob of ReactDB's ycsb run, not of smartmart");
        if (parse.GetResult(callers) is { Implicit: false }) throw new UsageException($"{callers.Name} is not a knob of ReactDB's smartmart run: each cart is a caller (--carts)");
        row = ReactDbRunner.Run(knobs.SmartMart(parse), shape, options);
    }
    Print([row]);
    Console.WriteLine($"{row.Detail}\n{row.Config}\ntables and indexes: {row.TableBytes / (1024.0 * 1024 * 1024):F2} GiB");
    if (prefix is not null) Runner.Write(prefix, [row], Runner.Metadata(Environment.CommandLine, options.Seed));
    return row.Anomalies > 0 ? 1 : 0;
}

// The protocol --beside names: one that runs behind ContendEngine's front door.
static string BesideProtocol(string name)
{
    name = Runner.ProtocolSpelling(name);
    if (name == ReactDbRunner.Protocol || name == ClusterCommand.Chiller)
        throw new UsageException($"--beside {name}: the protocol beside runs through ContendEngine's front door, which {name} does not");
    if (!ProtocolRegistry.TryFind(name, out var descriptor)) throw new UsageException(ProtocolRegistry.Unknown(name));
    return descriptor.Name;
}

// Two runs measured in turn (InTurn): both rows, and the first's throughput over the second's per pair of slices.
static int PrintInTurn((RunRow First, RunRow Second, double[] Ratios) pair, RunOptions options, string? prefix)
{
    var (first, second, ratios) = pair;
    Print([first, second]);
    Array.Sort(ratios);
    double Quantile(double q) => ratios[(int)Math.Round(q * (ratios.Length - 1))];
    string of = $"{first.Protocol} / {second.Protocol}";
    Console.WriteLine(ratios.Length == 0
        ? $"in turn: no pair of slices in which both {first.Protocol} and {second.Protocol} committed something"
        : string.Create(CultureInfo.InvariantCulture,
            $"in turn, {ratios.Length} of {InTurn.Pairs(options, InTurn.Slice)} pairs of {InTurn.Slice} s slices with commits on both sides: {of} median {Quantile(0.5):F3} (quartiles {Quantile(0.25):F3}-{Quantile(0.75):F3}), of the totals {first.Throughput / second.Throughput:F3}"));
    Console.WriteLine($"{first.Config}\n{second.Config}");
    if (prefix is not null) Runner.Write(prefix, [first, second], Runner.Metadata(Environment.CommandLine, options.Seed));
    return first.Anomalies > 0 || second.Anomalies > 0 ? 1 : 0;
}

static void Print(IReadOnlyList<RunRow> rows)
{
    Console.WriteLine(Runner.Table(rows));
    foreach (var w in rows.SelectMany(r => r.Warnings).Distinct()) Console.WriteLine($"warning: {w}");
    foreach (var r in rows.Where(r => r.Anomalies > 0 && r.Protocol != ProtocolRegistry.BrokenControl))
        Console.WriteLine($"ANOMALY in {r.Protocol}: {r.FirstAnomaly}");
}
