using System.Diagnostics;
using System.Runtime.InteropServices;
using Contend.Engine.Runtime;

namespace Contend.Harness.Studies;

/// <summary>
/// How long one cache line takes to go from core 0 to core 1 and back, measured right before
/// and right after each run of a study. This machine has slow windows, seconds to minutes long,
/// in which that round trip takes four to five times as long (about 70 against 300-350 ns; see
/// docs/measured/StealDB.md), and every protocol runs slower in them: StealDB, which moves lines
/// between its workers on every steal, by up to 40%, the YCSB runs of Strife's study by up to
/// half. With the probes in each row of the CSV a reader can tell such a run from a regression,
/// and the study compares protocols over the runs made in the fast window (Study.InFastWindow).
/// </summary>
internal static class LineProbe
{
    [StructLayout(LayoutKind.Explicit, Size = 192)]
    struct PaddedLine
    {
        [FieldOffset(64)] public long Value; // a line of its own, whatever the array's alignment
    }

    /// <summary>Mean nanoseconds per round trip over <paramref name="rounds"/>; NaN when the
    /// machine has one core or the probe's threads cannot be pinned apart.</summary>
    public static double RoundTripNanos(int rounds = 200_000)
    {
        // Unpinned on one core, each round trip would wait for a time slice.
        if (!OperatingSystem.IsLinux() || Environment.ProcessorCount < 2) return double.NaN;
        var line = new PaddedLine[1];
        string? pinned = null;
        long ticks = 0;
        var echo = new Thread(() =>
        {
            if (Affinity.PinCurrentThread(1) is { } why) pinned ??= why;
            for (long i = 1; i <= rounds; i++)
            {
                while (Volatile.Read(ref line[0].Value) != 2 * i - 1) { }
                Volatile.Write(ref line[0].Value, 2 * i);
            }
        }) { IsBackground = true };
        var ping = new Thread(() =>
        {
            if (Affinity.PinCurrentThread(0) is { } why) pinned ??= why;
            long start = Stopwatch.GetTimestamp();
            for (long i = 1; i <= rounds; i++)
            {
                Volatile.Write(ref line[0].Value, 2 * i - 1);
                while (Volatile.Read(ref line[0].Value) != 2 * i) { }
            }
            ticks = Stopwatch.GetTimestamp() - start;
        }) { IsBackground = true };
        echo.Start();
        ping.Start();
        ping.Join();
        echo.Join();
        return pinned is null ? Stopwatch.GetElapsedTime(0, ticks).TotalNanoseconds / rounds : double.NaN;
    }
}
