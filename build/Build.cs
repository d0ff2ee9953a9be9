// Contend's one entry point, a .NET file-based app: `dotnet run build/Build.cs -- <verb> [args]`
// (build.ps1 forwards to it). Written in C# rather than PowerShell because PowerShell does not
// restore as a dotnet tool from this project's NuGet copy (docs/toolchain.md); this needs only
// the .NET SDK the project already requires.
//
// Verbs: build, test, specs, models, coyote, traces, fuzz, bench, run, study, demo, pack, sample. `test` runs every suite
// and ends with one line "N passed, N failed" over all of them.
using System.Diagnostics;
using System.Text.RegularExpressions;

string root = Path.GetFullPath(Path.Combine(AppContext.GetData("EntryPointFileDirectoryPath") as string ?? Directory.GetCurrentDirectory(), ".."));
if (!File.Exists(Path.Combine(root, "Contend.slnx"))) root = Directory.GetCurrentDirectory();
if (!File.Exists(Path.Combine(root, "Contend.slnx")))
{
    Console.Error.WriteLine("build: run from the repository root (no Contend.slnx here)");
    return 2;
}

// TLC: a user's TLA2TOOLS_JAR wins; otherwise the jar ../shared/tools carries on machines
// without Maven Central; otherwise specs/check fetches TLC with Maven.
string sharedJar = Path.GetFullPath(Path.Combine(root, "..", "shared", "tools", "tla2tools.jar"));
if (string.IsNullOrEmpty(Environment.GetEnvironmentVariable("TLA2TOOLS_JAR")) && File.Exists(sharedJar))
    Environment.SetEnvironmentVariable("TLA2TOOLS_JAR", sharedJar);

string verb = args.Length > 0 ? args[0] : "help";
string[] rest = args.Skip(1).ToArray();
string contend = Path.Combine(root, "src", "Harness", "bin", "Release", "net10.0", "contend.dll");
string coyote = Path.Combine(root, "tests", "Contend.Coyote", "bin", "Release", "net8.0", "Contend.Coyote.dll");
// The core the Coyote lane of `test` runs its commands on; null: any core.
var laneCore = new AsyncLocal<int?>();

return verb switch
{
    "build" => Build(),
    "test" => Test(),
    "specs" => Run("specs/check", rest).Code,
    "models" => Models(rest).Code,
    "coyote" => Chain(Build, () => Coyote(rest).Code),
    "traces" => Chain(Build, () => Traces(rest).Code),
    "fuzz" => Chain(Build, () => Fuzz(rest)),
    "docs" => Chain(Build, Docs),
    "bench" => Run("dotnet", ["run", "-c", "Release", "--project", "bench/Contend.Benchmarks", "--", .. rest]).Code,
    "run" => Chain(Build, () => Run("dotnet", [contend, "run", .. rest]).Code),
    "demo" => Chain(Build, () => Run("dotnet", [contend, "demo", .. rest]).Code),
    // A study's runs are kept as data, in the folder the project commits (not a --small run's, which measures nothing).
    "study" => Chain(Build, () => Run("dotnet", [contend, "study", .. rest,
                                                 .. rest.Contains("--small") || rest.Contains("--data") ? [] : new[] { "--data", Path.Combine(root, "docs", "measured", "data") }]).Code),
    "pack" => Chain(Build, Pack),
    "sample" => Chain(Build, () => Sample(rest)),
    _ => Help(),
};

int Help()
{
    Console.Error.WriteLine("usage: dotnet run build/Build.cs -- <verb> [args]\n" +
        "  build            build the solution (Release)\n" +
        "  test             every test: unit and stress, Coyote, P models, the runner's tests, the TLC models, trace validation\n" +
        "  specs [models]   model-check the TLA+ specs (specs/check)\n" +
        "  models [filter]  check the P models (models/check)\n" +
        "  coyote [filter]  the Coyote systematic tests\n" +
        "  traces [--runs N] StealDB's and Chiller's trace validation: record engine runs, check them against the specs with TLC\n" +
        "  fuzz [seconds]   the front door's fuzzer sampling cases for that long (default 600), shrinking what fails;\n" +
        "                   its result is appended to docs/measured/data/fuzz.ndjson\n" +
        "  docs             write the pages made from the sources and data: docs/mutants.md, and every table\n" +
        "                   a page makes from docs/measured/data\n" +
        "  bench [args]     BenchmarkDotNet benchmarks\n" +
        "  run [args]       contend run (see: run --help)\n" +
        "  study <name>     a paper's throughput study: stealdb, strife or reactdb (study --help lists its options)\n" +
        "  demo             a short high-contention YCSB run of every protocol, history checked\n" +
        "  pack             the NuGet packages Contend.Engine and Contend.Hosting, into artifacts/packages\n" +
        "  sample [mart] [args]  a sample service: the bank (samples/Bank) or, with mart, the store on ReactDB\n" +
        "                   (samples/Mart), e.g. sample --urls http://127.0.0.1:5080");
    return verb == "help" ? 0 : 2;
}

int Build() => Run("dotnet", ["build", "Contend.slnx", "-c", "Release", "-nologo", "-v", "q"]).Code;

// The packages, from the Release build just made: every public member documented (a missing
// comment fails that build), the public API as PublicAPI.*.txt lists it.
int Pack()
{
    string output = Path.Combine(root, "artifacts", "packages");
    foreach (var project in new[] { "src/Engine/Contend.Engine.csproj", "src/Hosting/Contend.Hosting.csproj" })
    {
        int code = Run("dotnet", ["pack", project, "-c", "Release", "--no-build", "-nologo", "-o", output]).Code;
        if (code != 0) return code;
    }
    Console.WriteLine($"packages in {output}");
    return 0;
}

int Chain(Func<int> first, Func<int> then)
{
    int code = first();
    return code != 0 ? code : then();
}

(int Code, string Output) Coyote(string[] filter) =>
    Run("dotnet", [coyote, .. filter], ("DOTNET_ROLL_FORWARD", "Major"));

// Trace validation: the Coyote build records StealDB's, Chiller's and ReactDB's runs as TLA+
// modules into .cache/traces, then specs/check checks each against specs/StealDB/StealDBTrace.tla,
// specs/Chiller/ChillerTrace.tla or specs/ReactDB/ReactDBTrace.tla. A recording that fails (no seed shows what a case is about)
// fails the suite. `traces --runs N` (by hand) also records every StealDB workload on seeds 1..N.
(int Code, string Output) Traces(string[] options, string? tag = null)
{
    string dir = Path.Combine(root, ".cache", "traces");
    if (Directory.Exists(dir)) Directory.Delete(dir, recursive: true);
    var record = RunTagged(tag, "dotnet", [coyote, "traces", "--out", dir, .. options], ("DOTNET_ROLL_FORWARD", "Major"));
    if (record.Code != 0) return (record.Code, record.Output + "\n0 passed, 1 failed\n");
    return RunTagged(tag, "specs/check", ["--manifest", Path.Combine(dir, "manifest.json")]);
}

// The front door's long fuzz run: CsCheck samples cases through ContendEngine's front door for
// the given seconds (the CI run is a fixed set of seeds in the xunit suite), and shrinks the first
// that fails; the run's result, with the commit and machine, is appended to docs/measured/data/fuzz.ndjson.
int Fuzz(string[] args)
{
    int seconds = args.Length > 0 && int.TryParse(args[0], out int s) && s > 0 ? s : 600;
    string commit = Run("git", ["rev-parse", "--short", "HEAD"]).Output.Trim(); // the code built, not what HEAD is by the end
    var clock = Stopwatch.StartNew();
    var run = Run("dotnet", ["test", "tests/Contend.Tests", "-c", "Release", "--no-build", "--nologo", "--filter", "Category=FuzzLong",
                             "--logger", "console;verbosity=detailed"], ("CONTEND_FUZZ_SECONDS", seconds.ToString()));
    var cases = Regex.Match(run.Output, @"long run: (\d+) cases");
    var seed = Regex.Match(run.Output, @"seed[:= ""]+([A-Za-z0-9_-]{8,})");
    static string Text(string? value) => value is null ? "null" : $"\"{System.Text.Json.JsonEncodedText.Encode(value)}\"";
    string line = $"{{\"date\":{Text(DateTime.UtcNow.ToString("yyyy-MM-dd"))},\"commit\":{Text(commit)},\"machine\":{Text($"{Environment.ProcessorCount} cores")}," +
                  $"\"command\":{Text($"dotnet run build/Build.cs -- fuzz {seconds}")},\"seconds\":{Math.Round(clock.Elapsed.TotalSeconds)}," +
                  $"\"cases\":{(cases.Success ? cases.Groups[1].Value : "null")},\"failed\":{(run.Code != 0 ? "true" : "false")}," +
                  $"\"seed\":{Text(run.Code != 0 && seed.Success ? seed.Groups[1].Value : null)}}}";
    string data = Path.Combine(root, "docs", "measured", "data");
    Directory.CreateDirectory(data);
    File.AppendAllText(Path.Combine(data, "fuzz.ndjson"), line + "\n");
    Console.WriteLine(line);
    return run.Code;
}

// The pages made from the sources and data: the house rules' tests that hold them, told to write them.
int Docs() => Run("dotnet", ["test", "tests/Contend.Tests", "-c", "Release", "--no-build", "--nologo", "--filter",
                             "FullyQualifiedName~TheMutantMatrixIsCurrent|FullyQualifiedName~EveryDataTableIsItsData"],
                  ("CONTEND_WRITE_DOCS", "1")).Code;

// The sample services: samples/Bank, or samples/Mart when the first argument is "mart".
int Sample(string[] args)
{
    string name = args.FirstOrDefault() == "mart" ? "Mart" : "Bank";
    string[] rest = name == "Mart" ? args[1..] : args;
    return Run("dotnet", [Path.Combine(root, "samples", name, "bin", "Release", "net10.0", $"{name}.dll"), .. rest]).Code;
}

// P models: models/check compiles each project and runs every test case of models/models.json.
(int Code, string Output) Models(string[] filter) => Run("models/check", filter);

int Test()
{
    var clock = Stopwatch.StartNew();
    string commit = Run("git", ["rev-parse", "--short", "HEAD"]).Output.Trim();
    int build = Build();
    if (build != 0) return build;
    var suites = new List<(string Name, int Passed, int Failed, int Code)>();
    var failures = new List<string>();
    void Suite(string name, (int Code, string Output) run, Regex counts, bool failedFirst)
    {
        var m = counts.Matches(run.Output).LastOrDefault();
        int a = m is null ? 0 : int.Parse(m.Groups[1].Value), b = m is null ? 0 : int.Parse(m.Groups[2].Value);
        var (passed, failed) = failedFirst ? (b, a) : (a, b);
        if (m is null || (run.Code != 0 && failed == 0)) failed++; // a suite that crashed or printed no count fails
        suites.Add((name, passed, failed, run.Code));
        if (failed > 0) failures.AddRange(FailureLines(name, run.Output, m is null));
    }
    var closingLine = new Regex(@"^(\d+) passed, (\d+) failed", RegexOptions.Multiline);
    Suite("unit and stress (xunit)", Run("dotnet", ["test", "tests/Contend.Tests", "-c", "Release", "--no-build", "--nologo"]),
          new Regex(@"Failed:\s+(\d+), Passed:\s+(\d+)"), failedFirst: true);
    var runner = Run("python3", ["-m", "unittest", "discover", "-s", "specs/tools", "-p", "test_*.py"]);
    suites.Add(("specs runner (unittest)", RanTests(runner.Output) - (runner.Code == 0 ? 0 : 1), runner.Code == 0 ? 0 : 1, runner.Code));
    // Two lanes side by side (this machine kind has two cores): Coyote, the P checker and the
    // trace recorder are single-threaded, and TLC runs on one worker, which also makes its
    // liveness checks find the same counterexample every run. One lane's lines carry a tag.
    // Coyote's lane is pinned to one core (LaneCore): a Coyote test hands control from one of its
    // threads to the next through the kernel, and with TLC on either core those hand-overs waited
    // for it, 2.5-3x the time run alone. TLC stays free: with one core, one of its models ran
    // 14x slower (docs/measured/CI.md, "Lanes pinned"). ReactDB's Coyote tests run after both
    // lanes, on both cores: the engine's executor threads and the test's own, which Coyote does
    // not control, ran 20-35x slower on one core, and 829 s beside TLC against about 41 s alone.
    // Chiller's and ReactDB's P cases run after Coyote, the traces (a Coyote recording, then TLC)
    // after the TLC models. The TLC models take the longer lane, so the Coyote lane, its own work
    // done, shares them (specs/check --share): each lane's TLC takes the next model neither has
    // claimed, longest first, and the Coyote lane's runs on any core, as TLC's own lane does.
    int? coyoteCore = LaneCore();
    string shared = Directory.CreateTempSubdirectory("contend-tlc-share-").FullName;
    string[] sharedTlc = ["--workers", "1", "--share", shared];
    var systematic = Task.Run(() =>
    {
        laneCore.Value = coyoteCore;
        var runs = new List<(string Name, (int Code, string Output) Run)>
        {
            ("Coyote", Coyote(["--skip", "ReactDB"])),
            ("P models (StealDB, Strife, MCSLock)", Models(["StealDB", "Strife", "MCSLock"])),
            ("P models (Chiller, ReactDB)", Models(["Chiller", "ReactDB"])),
        };
        laneCore.Value = null;
        runs.Add(("TLC models (Coyote's lane)", RunTagged("[tlc2] ", "specs/check", sharedTlc)));
        return runs.ToArray();
    });
    var tlc = Task.Run(() => new (string Name, (int Code, string Output) Run)[]
    {
        ("TLC models (specs/check)", RunTagged("[tlc] ", "specs/check", sharedTlc)),
        ("traces (TLC)", Traces([], "[tlc] ")),
    });
    Task.WaitAll(systematic, tlc);
    Directory.Delete(shared, recursive: true);
    foreach (var (name, run) in systematic.Result.Concat(tlc.Result)) Suite(name, run, closingLine, failedFirst: false);
    var reactDb = Coyote(["ReactDB"]);
    Suite("Coyote (ReactDB)", reactDb, closingLine, failedFirst: false);
    string coyoteOutput = systematic.Result[0].Run.Output + "\n" + reactDb.Output;

    Console.WriteLine();
    Console.WriteLine($"{"suite",-28} {"passed",7} {"failed",7}");
    foreach (var s in suites) Console.WriteLine($"{s.Name,-28} {s.Passed,7} {s.Failed,7}");
    int passedAll = suites.Sum(s => s.Passed), failedAll = suites.Sum(s => s.Failed);
    // Repeated under the table, so the end of a long CI log says which test failed and why.
    if (failures.Count > 0) Console.WriteLine("\nfailed:\n" + string.Join("\n", failures));
    // A clean-clone run (CI=true) records itself as data: the run, and each Coyote test's outcome and iterations.
    if (Environment.GetEnvironmentVariable("CI") == "true") Record(commit, clock.Elapsed, passedAll, failedAll, coyoteOutput);
    Console.WriteLine($"{passedAll} passed, {failedAll} failed");
    return failedAll == 0 && suites.All(s => s.Code == 0) ? 0 : 1;
}

// Appends the run to docs/measured/data/ci.ndjson and its Coyote tests to coyote.ndjson.
void Record(string commit, TimeSpan took, int passed, int failed, string coyoteOutput)
{
    static string Text(string? value) => value is null ? "null" : $"\"{System.Text.Json.JsonEncodedText.Encode(value)}\"";
    string date = DateTime.UtcNow.ToString("yyyy-MM-dd"), machine = $"{Environment.ProcessorCount} cores";
    string data = Path.Combine(root, "docs", "measured", "data");
    Directory.CreateDirectory(data);
    int seconds = (int)Math.Round(took.TotalSeconds);
    File.AppendAllText(Path.Combine(data, "ci.ndjson"),
        $"{{\"commit\":{Text(commit)},\"date\":{Text(date)},\"ended\":{Text($"{passed} passed, {failed} failed")},\"passed\":{passed},\"failed\":{failed}," +
        $"\"seconds\":{seconds},\"in_all\":{Text($"{seconds / 60} min {seconds % 60} s")},\"tlc\":null,\"traces\":null," +
        $"\"command\":{Text("CI=true bash .ci/run")},\"machine\":{Text(machine)}}}\n");
    // The runner's summary rows: name, expectation, outcome, iterations, seconds.
    var rows = Regex.Matches(coyoteOutput, @"^(\w+)\s+(caught|no bug)\s+(caught|no bug)\s+([\d,]+)\s+([\d.]+)\s*$", RegexOptions.Multiline);
    var lines = new System.Text.StringBuilder();
    foreach (Match row in rows)
        lines.Append($"{{\"commit\":{Text(commit)},\"date\":{Text(date)},\"test\":{Text(row.Groups[1].Value)},\"expect\":{Text(row.Groups[2].Value)}," +
                     $"\"outcome\":{Text(row.Groups[3].Value)},\"iterations\":{row.Groups[4].Value.Replace(",", "")},\"seconds\":{row.Groups[5].Value}," +
                     $"\"seed\":1,\"machine\":{Text(machine)}}}\n");
    File.AppendAllText(Path.Combine(data, "coyote.ndjson"), lines.ToString());
}

// The lines of a failed suite's output that name what failed: xunit's "Failed <test>" with the
// message after it, the runners' "FAIL" lines; the output's tail when there are none (a crash).
static IEnumerable<string> FailureLines(string suite, string output, bool printedNoCount)
{
    var lines = output.Split('\n').Select(l => l.TrimEnd('\r')).ToArray();
    var named = new List<string>();
    for (int i = 0; i < lines.Length; i++)
    {
        if (lines[i].StartsWith("FAIL ")) named.Add($"  {suite}: {lines[i]}");
        else if (Regex.IsMatch(lines[i], @"^\s+Failed \S.* \[\d"))
        {
            named.Add($"  {suite}: {lines[i].Trim()}");
            // the message: the lines after "Error Message:", up to the stack trace
            int message = Array.FindIndex(lines, i + 1, l => l.Trim() == "Error Message:");
            for (int j = message + 1; message > i && message < i + 3 && j < lines.Length && j < message + 6 && lines[j].Trim() != "Stack Trace:"; j++)
                named.Add($"      {lines[j].Trim()}");
        }
    }
    if (named.Count == 0 || printedNoCount)
        named.AddRange(lines.Where(l => l.Length > 0).TakeLast(8).Select(l => $"  {suite} (last lines): {l}"));
    return named;
}

static int RanTests(string output)
{
    var m = Regex.Match(output, @"Ran (\d+) tests?");
    return m.Success ? int.Parse(m.Groups[1].Value) : 0;
}

// The first core this process may run on, for the Coyote lane of `test`, where taskset can pin
// it (Linux, two cores or more, so the other lane keeps one); else none, and it runs on any core.
static int? LaneCore()
{
    if (!OperatingSystem.IsLinux() || !File.Exists("/usr/bin/taskset") && !File.Exists("/bin/taskset")) return null;
    long allowed = (long)Process.GetCurrentProcess().ProcessorAffinity;
    var cores = Enumerable.Range(0, 64).Where(c => (allowed >> c & 1) != 0).Take(2).ToArray();
    return cores.Length < 2 ? null : cores[0];
}

// Runs a command in the repository root, echoing its output as it comes and keeping a copy.
(int Code, string Output) Run(string file, string[] arguments, params (string Name, string Value)[] environment) =>
    RunTagged(null, file, arguments, environment);

// As Run; a tag, when given, starts each line echoed to the console (not the copy returned), so
// that two suites running side by side can be told apart in the log.
(int Code, string Output) RunTagged(string? tag, string file, string[] arguments, params (string Name, string Value)[] environment)
{
    // In a pinned lane, taskset sets the core before the command starts, so every thread and child it makes inherits it.
    int? core = laneCore.Value;
    var start = new ProcessStartInfo(core is null ? file : "taskset") { WorkingDirectory = root, RedirectStandardOutput = true, RedirectStandardError = true };
    if (core is not null) foreach (var a in new[] { "-c", core.Value.ToString(), file }) start.ArgumentList.Add(a);
    foreach (var a in arguments) start.ArgumentList.Add(a);
    foreach (var (name, value) in environment) start.Environment[name] = value;
    var copy = new System.Text.StringBuilder();
    using var process = new Process { StartInfo = start };
    process.OutputDataReceived += (_, e) => { if (e.Data is null) return; Console.WriteLine(tag + e.Data); lock (copy) copy.AppendLine(e.Data); };
    process.ErrorDataReceived += (_, e) => { if (e.Data is null) return; Console.Error.WriteLine(tag + e.Data); lock (copy) copy.AppendLine(e.Data); };
    try
    {
        process.Start();
    }
    catch (System.ComponentModel.Win32Exception e)
    {
        Console.Error.WriteLine($"build: cannot start {file}: {e.Message}");
        return (127, "");
    }
    process.BeginOutputReadLine();
    process.BeginErrorReadLine();
    process.WaitForExit();
    return (process.ExitCode, copy.ToString());
}
