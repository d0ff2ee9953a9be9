using System.Runtime.InteropServices;

namespace Contend.Engine.Runtime;

/// <summary>Pins the calling thread to one core: Linux sched_setaffinity; elsewhere a warning, no pinning.</summary>
internal static partial class Affinity
{
    [LibraryImport("libc", SetLastError = true)]
    private static partial int sched_setaffinity(int pid, nint cpusetsize, ref ulong mask);

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
