using System.Runtime.InteropServices;
using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>
/// One worker's counters, written only by that worker and read after it stops. Each
/// worker's block is its own object with padding on both sides of the hot fields, so two
/// workers' counters never share a cache line.
/// </summary>
public sealed class WorkerStats
{
    public const int LatencyBuckets = 160;
    const int SubBuckets = 4;

#pragma warning disable CS0169 // padding, never read
    Padding _before;
#pragma warning restore CS0169
    public long Commits;
    public long UserAborts;
    public readonly long[] Aborts = new long[Enum.GetValues<AbortReason>().Length];
    /// <summary>Commit latency, start of the first attempt to commit, in buckets of a quarter power of two (ns).</summary>
    public readonly long[] Latency = new long[LatencyBuckets];
#pragma warning disable CS0169
    Padding _after;
#pragma warning restore CS0169

    [StructLayout(LayoutKind.Sequential, Size = 128)]
    struct Padding;

    public void RecordLatency(long nanoseconds)
    {
        int bucket = nanoseconds <= 1 ? 0 : (int)(Math.Log2(nanoseconds) * SubBuckets);
        Latency[Math.Min(bucket, LatencyBuckets - 1)]++;
    }

    /// <summary>Upper edge of a latency bucket, in nanoseconds.</summary>
    public static double BucketUpperNanos(int bucket) => Math.Pow(2, (bucket + 1) / (double)SubBuckets);

    public void Reset()
    {
        Commits = UserAborts = 0;
        Array.Clear(Aborts);
        Array.Clear(Latency);
    }

    public void Add(WorkerStats other)
    {
        Commits += other.Commits;
        UserAborts += other.UserAborts;
        for (int i = 0; i < Aborts.Length; i++) Aborts[i] += other.Aborts[i];
        for (int i = 0; i < Latency.Length; i++) Latency[i] += other.Latency[i];
    }

    public long TotalAborts => Aborts.Sum() - Aborts[(int)AbortReason.User] - Aborts[(int)AbortReason.TableFull];

    public double LatencyPercentileMicros(double p)
    {
        long total = Latency.Sum();
        if (total == 0) return 0;
        long rank = (long)Math.Ceiling(p / 100 * total), seen = 0;
        for (int b = 0; b < Latency.Length; b++)
        {
            seen += Latency[b];
            if (seen >= rank) return BucketUpperNanos(b) / 1000;
        }
        return BucketUpperNanos(Latency.Length - 1) / 1000;
    }
}
