using System.Diagnostics;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Harness;

namespace Contend.Tests;

/// <summary>Alone: a slice is 0.1 s, and tests running beside it can starve the thread pool
/// that a run's callers step on for that long.</summary>
[CollectionDefinition(nameof(InTurnTests), DisableParallelization = true)]
public class InTurnCollection;

/// <summary>The harness's measurement in turn: two runs in one process, never both at once.</summary>
[Collection(nameof(InTurnTests))]
public class InTurnTests
{
    /// <summary>Each run's callers step only in its own slices (a step of one never overlaps a step
    /// of the other), both get every measured slice, and each run's window counts only what its
    /// callers did in its measured slices.</summary>
    [Fact]
    public void TwoRunsStepOnlyInTheirOwnSlices()
    {
        var inStep = new int[2];
        int overlaps = 0;
        var options = new RunOptions(Threads: 1, Seconds: 0.6, WarmupSeconds: 0.2);
        RunRow Side(InTurn.Seat seat, int me)
        {
            long steps = 0;
            var (total, seconds, before, after) = Runner.MeasureCallers(3, options, _ => async stats =>
            {
                long start = Stopwatch.GetTimestamp();
                Interlocked.Increment(ref inStep[me]);
                if (Volatile.Read(ref inStep[1 - me]) != 0) Interlocked.Increment(ref overlaps);
                await Task.Yield();
                if (Volatile.Read(ref inStep[1 - me]) != 0) Interlocked.Increment(ref overlaps);
                Interlocked.Decrement(ref inStep[me]);
                Interlocked.Increment(ref steps);
                stats.Count(Outcome.Committed, AbortReason.None, start);
            }, () => Volatile.Read(ref steps), seat: seat);
            Assert.Equal(after - before, total.Commits); // the window's commits are the callers' in it
            return Row(me, total, seconds);
        }
        var (first, second, ratios) = new InTurn(InTurn.Slice, options).Run(seat => Side(seat, 0), seat => Side(seat, 1));
        Assert.Equal(0, overlaps);
        // Six measured pairs; one in which a run's callers got no thread is left out (APairWithoutCommitsOnBothSidesIsLeftOut).
        Assert.InRange(ratios.Length, 1, 6);
        Assert.All(ratios, r => Assert.True(r > 0 && double.IsFinite(r), $"ratio {r}"));
        foreach (var row in new[] { first, second })
        {
            Assert.True(row.Commits > 0, $"{row.Protocol}: no steps measured");
            Assert.True(row.Seconds >= 0.599, $"{row.Protocol}: {row.Seconds} s measured, less than its six slices of 0.1 s"); // no upper bound: a loaded machine stretches a slice
        }
    }

    /// <summary>A side's row: only its commits and measured seconds matter to these tests.</summary>
    static RunRow Row(int me, WorkerStats total, double seconds) =>
        new($"side{me}", "none", "", 1, seconds, total.Commits, total.Commits / seconds, 0, 0, new Dictionary<string, long>(),
            0, 0, -1, -1, null, [], 0, new Dictionary<string, double>(), null);

    /// <summary>A pair of slices in which either run committed nothing is left out, whichever run
    /// it was: its ratio, 0 or infinite, says nothing about how the two compare. A run whose
    /// callers step but never commit gives no pair at all, first or second.</summary>
    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public void APairWithoutCommitsOnBothSidesIsLeftOut(int idle)
    {
        var options = new RunOptions(Threads: 1, Seconds: 0.3, WarmupSeconds: 0);
        RunRow Side(InTurn.Seat seat, int me)
        {
            long commits = 0;
            var (total, seconds, _, _) = Runner.MeasureCallers(2, options, _ => async stats =>
            {
                long start = Stopwatch.GetTimestamp();
                await Task.Yield();
                if (me == idle) return;
                Interlocked.Increment(ref commits);
                stats.Count(Outcome.Committed, AbortReason.None, start);
            }, () => Volatile.Read(ref commits), seat: seat);
            return Row(me, total, seconds);
        }
        var (first, second, ratios) = new InTurn(InTurn.Slice, options).Run(seat => Side(seat, 0), seat => Side(seat, 1));
        Assert.Empty(ratios);
        Assert.Equal(0, (idle == 0 ? first : second).Commits);
        Assert.True((idle == 0 ? second : first).Commits > 0, "the committing run measured no commits");
    }

    /// <summary>A run that fails before it joins the turn fails the measurement, naming it, and
    /// the other run stops rather than waiting for a turn that never comes.</summary>
    [Fact]
    public void ARunThatFailsEndsTheMeasurement()
    {
        var options = new RunOptions(Threads: 1, Seconds: 0.2, WarmupSeconds: 0);
        var error = Assert.Throws<InvalidOperationException>(() => new InTurn(InTurn.Slice, options).Run(
            _ => throw new ArgumentException("no table"),
            seat =>
            {
                Runner.MeasureCallers(1, options, _ => _ => Task.Delay(1), () => 0, seat: seat);
                return null!;
            }));
        Assert.IsType<ArgumentException>(error.InnerException);
    }
}
