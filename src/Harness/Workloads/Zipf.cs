using Contend.Engine.Runtime;

namespace Contend.Harness.Workloads;

/// <summary>
/// The Zipfian generator of DBx1000's YCSB (Gray et al., "Quickly generating billion-record
/// synthetic databases"), with the same constants: zeta(n, theta) once at construction,
/// then O(1) per draw. Draws are in 1..n; theta in [0, 1) (theta 0 is uniform).
/// </summary>
internal sealed class Zipf
{
    readonly long _n;
    readonly double _theta, _alpha, _zetan, _eta, _half;

    public Zipf(long n, double theta)
    {
        if (n < 2) throw new ArgumentOutOfRangeException(nameof(n), $"zipf: n = {n} must be at least 2");
        if (theta is < 0 or >= 1) throw new ArgumentOutOfRangeException(nameof(theta), $"zipf: theta = {theta} must be in [0, 1)");
        _n = n;
        _theta = theta;
        _alpha = 1 / (1 - theta);
        _zetan = Zeta(n, theta);
        _eta = (1 - Math.Pow(2.0 / n, 1 - theta)) / (1 - Zeta(2, theta) / _zetan);
        _half = 1 + Math.Pow(0.5, theta);
    }

    static double Zeta(long n, double theta)
    {
        double sum = 0;
        for (long i = 1; i <= n; i++) sum += Math.Pow(1.0 / i, theta);
        return sum;
    }

    /// <summary>A draw in 1..n.</summary>
    public long Next(ref ulong rng)
    {
        double u = Rng.NextDouble(ref rng);
        double uz = u * _zetan;
        if (uz < 1) return 1;
        if (uz < _half) return 2;
        return Math.Min(_n, 1 + (long)(_n * Math.Pow(_eta * u - _eta + 1, _alpha)));
    }

    public double Theta => _theta;
}
