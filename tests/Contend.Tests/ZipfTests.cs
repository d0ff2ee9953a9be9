using Contend.Engine.Runtime;
using Contend.Harness.Workloads;

namespace Contend.Tests;

public class ZipfTests
{
    static long[] Counts(double theta, long n, int draws, ulong seed)
    {
        var zipf = new Zipf(n, theta);
        var counts = new long[n + 1];
        ulong rng = seed;
        for (int i = 0; i < draws; i++) counts[zipf.Next(ref rng)]++;
        return counts;
    }

    [Fact]
    public void DrawsStayInRangeAndRepeatWithTheSeed()
    {
        var a = Counts(0.9, 1000, 100_000, 42);
        Assert.Equal(0, a[0]);
        Assert.Equal(a, Counts(0.9, 1000, 100_000, 42));
        Assert.NotEqual(a, Counts(0.9, 1000, 100_000, 43));
    }

    [Fact]
    public void SkewGrowsWithTheta()
    {
        // theta 0.9 over 1000 keys: key 1 has probability 1 / zeta(1000, 0.9) = 0.0950.
        var skewed = Counts(0.9, 1000, 200_000, 1);
        Assert.InRange(skewed[1] / 200_000.0, 0.090, 0.100);
        var uniform = Counts(0, 1000, 200_000, 1);
        Assert.InRange(uniform[1] / 200_000.0, 0.0005, 0.0015);
    }

    [Fact]
    public void RejectsThetaOutsideRange()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new Zipf(100, 1.0));
        Assert.Throws<ArgumentOutOfRangeException>(() => new Zipf(1, 0.5));
    }
}
