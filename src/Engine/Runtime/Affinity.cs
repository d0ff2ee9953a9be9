using System.Runtime.InteropServices;

namespace Contend.Engine.Runtime;

/// <summary>Pins the calling thread to one core: Linux sched_setaffinity; elsewhere a warning, no
/// pinning. The cores are those the process may run on (its affinity mask, as
/// <see cref="Environment.ProcessorCount"/> counts them), not the machine's.</summary>
internal static partial class Affinity
{
    [LibraryImport("libc", SetLastError = true)]
    private static partial int sched_setaffinity(int pid, nint cpusetsize, ref ulong mask);

    [LibraryImport("libc", SetLastError = true)]
    private static partial int sched_getaffinity(int pid, nint cpusetsize, ref ulong mask);

    /// <summary>The cores (of 0..63) the process may run on, lowest first, read once; on another
    /// system, or where the mask cannot be read, 0..ProcessorCount-1.</summary>
    public static IReadOnlyList<int> Cores => s_cores.Value;

    static readonly Lazy<int[]> s_cores = new(ReadCores);

    /// <summary>Where the next pinned thread of any engine of the process goes in <see cref="Cores"/>:
    /// two engines of one process share the cores instead of both starting at the first.</summary>
    static int s_next = -1;

    static int[] ReadCores()
    {
        ulong mask = 0;
        if (OperatingSystem.IsLinux() && sched_getaffinity(0, sizeof(ulong), ref mask) == 0 && mask != 0)
            return [.. Enumerable.Range(0, 64).Where(c => (mask >> c & 1) != 0)];
        return [.. Enumerable.Range(0, Math.Max(1, Environment.ProcessorCount))];
    }

    /// <summary>The core the next thread to pin takes, round the process's cores.</summary>
    public static int NextCore()
    {
        var cores = Cores;
        return cores[(int)((uint)Interlocked.Increment(ref s_next) % (uint)cores.Count)];
    }

    /// <summary>Why <paramref name="threads"/> busy threads would share the process's cores, or
    /// null when there are no more of them than cores.</summary>
    public static string? Oversubscribed(int threads, string what) =>
        threads <= Environment.ProcessorCount ? null
            : $"{threads} {what} on the {Environment.ProcessorCount} cores this process may run on: a waiter whose lock holder is descheduled waits out the holder's time slice (the queue locks stall the most)";

    /// <summary>Returns null when pinned, or why not.</summary>
    public static string? PinCurrentThread(int core)
    {
        if (!OperatingSystem.IsLinux()) return "thread pinning is implemented for Linux only: workers run unpinned";
        if (core >= 64) return $"core {core}: pinning covers cores 0..63 only";
        ulong mask = 1UL << core;
        return sched_setaffinity(0, sizeof(ulong), ref mask) == 0
            ? null
            : $"sched_setaffinity(core {core}) failed with errno {Marshal.GetLastPInvokeError()}: worker runs unpinned";
    }
}
