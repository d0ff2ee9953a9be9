using System.Diagnostics;
using Contend.Engine.Protocols;
using Microsoft.Coyote;
using Microsoft.Coyote.SystematicTesting;

namespace Contend.Coyote;

/// <summary>
/// One systematic test: a body Coyote runs for up to the suite's iterations (or
/// <see cref="Iterations"/>, when fewer) schedules, and what must come of it. A correct protocol must survive every schedule; a buggy twin must be
/// caught, with a bug report containing <see cref="CaughtBy"/>, or the suite fails.
/// Schedules are drawn at random, or by priorities (<see cref="Prioritized"/>) where a bug
/// needs one operation held back for many steps at one point, which random choices almost
/// never do.
/// </summary>
/// <param name="Iterations">a lower cap for a correct test whose schedules are slow, so that
/// the suite keeps to CI's budget (docs/testing.md lists them)</param>
/// <param name="OrCaughtBy">for a twin whose bug shows in two ways, depending on the schedule
/// that finds it first: the other report text that counts as caught</param>
public sealed record CoyoteTest(string Name, Func<Task> Body, string? CaughtBy = null, uint MaxSteps = 4000, bool Prioritized = false, int? Iterations = null,
                                string? OrCaughtBy = null)
{
    public bool ExpectBug => CaughtBy is not null;
}

public sealed record CoyoteResult(CoyoteTest Test, bool Met, int Iterations, string? Bug, double Seconds);

public static class CoyoteSuite
{
    /// <summary>The text Coyote puts in a bug report when an iteration reaches the steps bound:
    /// the suite's "every transaction ends within a bounded number of scheduling steps".</summary>
    public const string StepsBound = "steps bound";

    /// <summary>How many steps a prioritized schedule keeps its priorities before it turns random.</summary>
    const uint PrioritizedSteps = 2_000;

    /// <summary>The registry's protocols that no test explores, or explore with no twin to catch:
    /// every serializable protocol needs a test named by it that must pass and one, named by it
    /// with <c>Twin</c>, that must be caught.</summary>
    public static List<string> Uncovered(IReadOnlyList<CoyoteTest> tests)
    {
        var gaps = new List<string>();
        foreach (var descriptor in ProtocolRegistry.Descriptors.Where(d => d.Serializable))
        {
            var named = tests.Where(t => t.Name.StartsWith(descriptor.Name, StringComparison.Ordinal)).ToList();
            if (!named.Any(t => !t.ExpectBug)) gaps.Add($"protocol {descriptor.Name} has no test that must pass (a name starting {descriptor.Name})");
            if (!named.Any(t => t.ExpectBug && t.Name.Contains("Twin", StringComparison.Ordinal)))
                gaps.Add($"protocol {descriptor.Name} has no twin that must be caught (a name starting {descriptor.Name}, with Twin)");
        }
        return gaps;
    }

    public static CoyoteResult Run(CoyoteTest test, int iterations, ulong seed)
    {
        var config = Configuration.Create()
            .WithTestingIterations((uint)iterations)
            .WithRandomGeneratorSeed((uint)seed)
            .WithMaxSchedulingSteps(test.MaxSteps, test.MaxSteps)
            .WithFailureOnMaxStepsBoundEnabled()
            .WithTelemetryEnabled(false)
            // Interlocked and Volatile calls are the engine's shared-memory steps: make each a
            // scheduling point, so Coyote interleaves the lock and record words themselves.
            .WithAtomicOperationRaceCheckingEnabled()
            .WithVolatileOperationRaceCheckingEnabled();
        // Fair: past the unfair steps bound the schedule turns random, so a worker spinning on
        // a held-back one cannot starve it into a false steps-bound report.
        config = test.Prioritized
            ? config.WithPrioritizationStrategy(isFair: true, priorityChangeBound: 10).WithMaxSchedulingSteps(PrioritizedSteps, test.MaxSteps)
            : config.WithRandomStrategy();
        var clock = Stopwatch.StartNew();
        using var engine = TestingEngine.Create(config, test.Body);
        var console = Console.Out;
        Console.SetOut(TextWriter.Null); // Coyote prints every iteration; the suite prints a summary
        try
        {
            engine.Run();
        }
        finally
        {
            Console.SetOut(console);
        }
        var report = engine.TestReport;
        string? bug = report.BugReports.FirstOrDefault();
        int explored = report.NumOfExploredFairPaths + report.NumOfExploredUnfairPaths;
        bool met = test.ExpectBug
            ? bug is not null && (bug.Contains(test.CaughtBy!, StringComparison.OrdinalIgnoreCase) ||
                                  test.OrCaughtBy is { } other && bug.Contains(other, StringComparison.OrdinalIgnoreCase))
            : report.NumOfFoundBugs == 0;
        return new CoyoteResult(test, met, explored, bug, clock.Elapsed.TotalSeconds);
    }
}
