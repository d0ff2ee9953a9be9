using System.Diagnostics;
using System.Runtime.InteropServices;
using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>
/// One worker's counters, written only by that worker and read after it stops (and, while it
/// runs, by the meter's collections: <see cref="Diagnostics.EngineMetrics"/>). The two
/// written on every transaction sit in a struct of their own with an empty cache line on
/// each side, so no other worker's data shares their line: the runtime lays a class's
/// references out before its other fields, so padding fields declared around them would not
/// put the padding on both sides.
/// </summary>
internal sealed class WorkerStats
{
    public const int LatencyBuckets = 160;
    const int SubBuckets = 4;

    Counters _counters;
    public ref long Commits => ref _counters.Commits;
    public ref long UserAborts => ref _counters.UserAborts;
    public readonly long[] Aborts = new long[Enum.GetValues<AbortReason>().Length];
    /// <summary>Commit latency, start of the first attempt to commit, in buckets of a quarter power of two (ns).</summary>
    public readonly long[] Latency = new long[LatencyBuckets];

    [StructLayout(LayoutKind.Explicit, Size = 192)]
    struct Counters
    {
        [FieldOffset(64)] public long Commits;
        [FieldOffset(72)] public long UserAborts;
    }

    public void RecordLatency(long nanoseconds)
    {
        int bucket = nanoseconds <= 1 ? 0 : (int)(Math.Log2(nanoseconds) * SubBuckets);
        Latency[Math.Min(bucket, LatencyBuckets - 1)]++;
    }

    /// <summary>Counts one attempt's outcome; a commit's latency runs from <paramref name="startTimestamp"/>
    /// (a <see cref="Stopwatch"/> timestamp: the transaction's first attempt).</summary>
    public void Count(Outcome outcome, AbortReason reason, long startTimestamp)
    {
        if (outcome == Outcome.Committed)
        {
            Commits++;
            RecordLatency((long)Stopwatch.GetElapsedTime(startTimestamp).TotalNanoseconds);
            return;
        }
        Aborts[(int)reason]++;
        if (outcome == Outcome.UserAborted) UserAborts++;
    }

    /// <summary>Upper edge of a latency bucket, in nanoseconds.</summary>
    public static double BucketUpperNanos(int bucket) => Math.Pow(2, (bucket + 1) / (double)SubBuckets);

    int _measuring;

    /// <summary>True once the worker has restarted its counters for the measured phase: until
    /// then they hold the warm-up's, which no report counts (<see cref="Diagnostics.EngineMetrics"/>).</summary>
    public bool Measuring => Volatile.Read(ref _measuring) != 0;

    /// <summary>Restarts the counters when measuring starts; only the worker's own thread calls it.</summary>
    public void Reset()
    {
        Commits = UserAborts = 0;
        Array.Clear(Aborts);
        Array.Clear(Latency);
        // After the zeros: a reader that sees the flag sees them too, so its counts never go down.
        Volatile.Write(ref _measuring, 1);
    }

    public void Add(WorkerStats other)
    {
        Commits += other.Commits;
        UserAborts += other.UserAborts;
        for (int i = 0; i < Aborts.Length; i++) Aborts[i] += other.Aborts[i];
        for (int i = 0; i < Latency.Length; i++) Latency[i] += other.Latency[i];
    }

    /// <summary>Adds the counts of a worker that is still running (latency left out), each read once.</summary>
    internal void AddLive(WorkerStats other)
    {
        Commits += Volatile.Read(ref other.Commits);
        UserAborts += Volatile.Read(ref other.UserAborts);
        for (int i = 0; i < Aborts.Length; i++) Aborts[i] += Volatile.Read(ref other.Aborts[i]);
    }

    public long TotalAborts
    {
        get
        {
            long conflicts = 0;
            for (int r = 0; r < Aborts.Length; r++)
                if (!((AbortReason)r).IsFinal()) conflicts += Aborts[r];
            return conflicts;
        }
    }

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
