using System.Diagnostics;
using Microsoft.Coyote;
using Microsoft.Coyote.SystematicTesting;

namespace Contend.Coyote;

/// <summary>
/// One systematic test: a body Coyote runs for up to <see cref="Iterations"/> schedules, and
/// what must come of it. A correct protocol must survive every schedule; a buggy twin must be
/// caught, with a bug report containing <see cref="CaughtBy"/>, or the suite fails.
/// </summary>
public sealed record CoyoteTest(string Name, Func<Task> Body, string? CaughtBy = null, uint MaxSteps = 4000)
{
    public bool ExpectBug => CaughtBy is not null;
}

public sealed record CoyoteResult(CoyoteTest Test, bool Met, int Iterations, string? Bug, double Seconds);

public static class CoyoteSuite
{
    /// <summary>The text Coyote puts in a bug report when an iteration reaches the steps bound:
    /// the suite's "every transaction ends within a bounded number of scheduling steps".</summary>
    public const string StepsBound = "steps bound";

    public static CoyoteResult Run(CoyoteTest test, int iterations, ulong seed)
    {
        var config = Configuration.Create()
            .WithTestingIterations((uint)iterations)
            .WithRandomStrategy()
            .WithRandomGeneratorSeed((uint)seed)
            .WithMaxSchedulingSteps(test.MaxSteps, test.MaxSteps)
            .WithFailureOnMaxStepsBoundEnabled()
            .WithTelemetryEnabled(false)
            // Interlocked and Volatile calls are the engine's shared-memory steps: make each a
            // scheduling point, so Coyote interleaves the lock and record words themselves.
            .WithAtomicOperationRaceCheckingEnabled()
            .WithVolatileOperationRaceCheckingEnabled();
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
            ? bug is not null && bug.Contains(test.CaughtBy!, StringComparison.OrdinalIgnoreCase)
            : report.NumOfFoundBugs == 0;
        return new CoyoteResult(test, met, explored, bug, clock.Elapsed.TotalSeconds);
    }
}
