using System.Runtime.InteropServices;

namespace Contend.Engine.Runtime;

/// <summary>
/// Arrays whose blocks of eight longs each fill one cache line. A managed array starts 16
/// bytes past an 8-byte-aligned object, so its 64-byte blocks straddle two lines unless placed:
/// <code>
///   array   [ skipped: 0-7 longs ][ block 0: one line ][ block 1: one line ] ...
///            ^ data start           ^ first 64-byte boundary (the returned start)
/// </code>
/// The array is pinned (allocated on the pinned object heap), so the boundary never moves.
/// </summary>
internal static class CacheLines
{
    /// <summary>A cache line's bytes on the machines the engine targets (x64, arm64).</summary>
    public const int Bytes = 64;

    /// <summary>Longs per line: a block's words.</summary>
    public const int Longs = Bytes / sizeof(long);

    /// <summary>A pinned array of <paramref name="blocks"/> line-sized blocks; block b's words are
    /// [Start + b * 8, Start + b * 8 + 8).</summary>
    public static (long[] Words, int Start) Blocks(int blocks)
    {
        var words = GC.AllocateArray<long>(blocks * Longs + Longs - 1, pinned: true);
        nint address = Marshal.UnsafeAddrOfPinnedArrayElement(words, 0);
        return (words, (int)((Bytes - (address & (Bytes - 1))) & (Bytes - 1)) / sizeof(long));
    }
}
