using System.Reflection;
using System.Globalization;
using Contend.Coyote;

// Contend.Coyote [--iterations N] [--seed S] [--skip name-filter ...] [name-filter ...]
// Runs every systematic test of the (rewritten) engine whose name contains a filter (all, with
// none) and no --skip filter; ends with "N passed, N failed".
// Contend.Coyote traces --out DIR [--runs N]
// Records StealDB's, Chiller's and ReactDB's runs for trace validation into DIR, with a manifest for
// specs/check; --runs N also records every StealDB workload on seeds 1..N (manual runs).
if (args.Length > 0 && args[0] == "traces")
{
    int runs = 0;
    if (!(args.Length is 3 or 5 && args[1] == "--out" && (args.Length == 3 || args[3] == "--runs" && int.TryParse(args[4], out runs) && runs > 0)))
    {
        Console.Error.WriteLine("Contend.Coyote: usage: traces --out DIR [--runs N], N positive");
        return 2;
    }
    var models = new List<object>();
    int missing = Contend.Coyote.StealDB.StealDbTraces.Write(args[2], Console.Out, models, runs)
                  + Contend.Coyote.Chiller.ChillerTraces.Write(args[2], Console.Out, models)
                  + Contend.Coyote.ReactDB.ReactDbTraces.Write(args[2], Console.Out, models);
    File.WriteAllText(Path.Combine(args[2], "manifest.json"),
        System.Text.Json.JsonSerializer.Serialize(new { models }, new System.Text.Json.JsonSerializerOptions { WriteIndented = true }) + "\n");
    return missing == 0 ? 0 : 1;
}

int iterations = 10_000;
ulong seed = 1; // Coyote takes a 32-bit seed
var filters = new List<string>();
var skips = new List<string>();
for (int i = 0; i < args.Length; i++)
{
    switch (args[i])
    {
        case "--iterations" when i + 1 < args.Length && int.TryParse(args[i + 1], out iterations) && iterations > 0:
            i++;
            break;
        case "--seed" when i + 1 < args.Length && ulong.TryParse(args[i + 1], out seed):
            i++;
            break;
        case "--skip" when i + 1 < args.Length:
            skips.Add(args[++i]);
            break;
        case "--iterations" or "--seed":
            Console.Error.WriteLine($"Contend.Coyote: {args[i]} needs a positive number");
            return 2;
        case "--skip":
            Console.Error.WriteLine("Contend.Coyote: --skip needs a name filter");
            return 2;
        default:
            filters.Add(args[i]);
            break;
    }
}

// Every test class's static All, found by reflection: a new test class needs no line here.
var everyTest = typeof(CoyoteTest).Assembly.GetTypes()
    .Select(t => t.GetProperty("All", BindingFlags.Public | BindingFlags.Static))
    .Where(p => p?.PropertyType == typeof(IEnumerable<CoyoteTest>))
    .OrderBy(p => p!.DeclaringType!.FullName, StringComparer.Ordinal)
    .SelectMany(p => (IEnumerable<CoyoteTest>)p!.GetValue(null)!)
    .ToList();
if (CoyoteSuite.Uncovered(everyTest) is { Count: > 0 } uncovered)
{
    foreach (string gap in uncovered) Console.Error.WriteLine($"Contend.Coyote: {gap}");
    return 1;
}
var tests = everyTest
    .Where(t => filters.Count == 0 || filters.Any(f => t.Name.Contains(f, StringComparison.OrdinalIgnoreCase)))
    .Where(t => !skips.Any(f => t.Name.Contains(f, StringComparison.OrdinalIgnoreCase)))
    .ToList();
if (tests.Count == 0)
{
    Console.Error.WriteLine($"Contend.Coyote: no test matches {string.Join(" ", filters)}{string.Concat(skips.Select(f => $" --skip {f}"))}");
    return 2;
}

var results = new List<CoyoteResult>();
foreach (var test in tests)
{
    var r = CoyoteSuite.Run(test, Math.Min(iterations, test.Iterations ?? iterations), seed);
    results.Add(r);
    Console.WriteLine($"{(r.Met ? "ok  " : "FAIL")} {test.Name}: {Describe(r)}");
    if (r.Bug is not null) Console.WriteLine($"       {FirstLine(r.Bug)}");
}

Console.WriteLine();
Console.WriteLine($"{"test",-44} {"expect",-8} {"outcome",-8} {"iterations",10} {"seconds",8}");
foreach (var r in results)
{
    string outcome = r.Bug is null ? "no bug" : "caught";
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"{r.Test.Name,-44} {(r.Test.ExpectBug ? "caught" : "no bug"),-8} {outcome,-8} {r.Iterations,10:N0} {r.Seconds,8:F1}"));
}
Console.WriteLine($"seed {seed}, up to {iterations:N0} iterations per test; a caught twin stops at the iteration that caught it");
int passed = results.Count(r => r.Met);
Console.WriteLine($"{passed} passed, {results.Count - passed} failed");
return passed == results.Count ? 0 : 1;

static string Describe(CoyoteResult r) => r.Test.ExpectBug
    ? r.Bug is null ? $"twin NOT caught in {r.Iterations:N0} iterations" : $"twin caught at iteration {r.Iterations:N0}"
    : r.Bug is null ? $"{r.Iterations:N0} iterations, no bug" : $"bug at iteration {r.Iterations:N0}";

static string FirstLine(string s) => s.Split('\n')[0].Trim();
