using System.Runtime.CompilerServices;

namespace Contend.Engine.Protocols.Strife;

/// <summary>
/// A row's Strife stamp (<see cref="Storage.Table.Stamp"/>): the row's part in one batch's
/// analysis, d.Cluster of the paper's Algorithms 1-3.
/// <code>
///   63 .................... 32   31   30   29 ..................... 0
///  [ batch number, 32 b       ][ W ][ R ][ cluster id, 30 b          ]
///
///  batch number   the batch that stamped the row; a stamp of another batch means "no part
///                 in this batch" (nothing is cleared between batches, and batch n+1's
///                 analysis never touches what batch n's residuals use: they use the record
///                 word, the lock, and this word is not it)
///  W              some transaction of the batch writes the row (pre-processing): only such
///                 rows take part in clustering (StrifeAnalysis.tla, Written)
///  R              the cluster was claimed at re-allocation, after merge counted; the debug
///                 check of ResidualBoundInv tells these apart (TouchesFreeItem)
///  cluster id     0: no cluster yet (NoCluster); else the cluster allocate or spot gave it,
///                 never renamed: merge links clusters in a union-find instead (Section 4.1)
/// </code>
/// Every change is one CAS from a value the changer read.
/// </summary>
internal static class StrifeStamp
{
    const long WriteBit = 1L << 31, ReallocBit = 1L << 30, ClusterMask = (1L << 30) - 1;
    public const int MaxCluster = (int)ClusterMask;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static uint Batch(long stamp) => (uint)((ulong)stamp >> 32);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool Written(long stamp) => (stamp & WriteBit) != 0;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool Reallocated(long stamp) => (stamp & ReallocBit) != 0;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Cluster(long stamp) => (int)(stamp & ClusterMask);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long Make(uint batch, bool written, int cluster, bool reallocated = false) =>
        ((long)batch << 32) | (written ? WriteBit : 0) | (reallocated ? ReallocBit : 0) | (long)cluster;

    /// <summary>Pre-processing: marks the row as touched by batch <paramref name="batch"/>, and
    /// written when <paramref name="write"/>. Returns false when a CAS was lost (retry).</summary>
    public static bool TryMark(ref long stamp, uint batch, bool write)
    {
        long seen = Volatile.Read(ref stamp);
        long desired;
        if (Batch(seen) != batch) desired = Make(batch, write, 0);
        else if (write && !Written(seen)) desired = seen | WriteBit;
        else return true;
        return Interlocked.CompareExchange(ref stamp, desired, seen) == seen;
    }

    /// <summary>Claims a written row with no cluster for <paramref name="cluster"/> (Algorithm 2
    /// lines 8-9). Returns the row's cluster afterwards: <paramref name="cluster"/>, or the one
    /// another transaction claimed it for first.</summary>
    public static int Claim(ref long stamp, uint batch, int cluster, bool reallocated)
    {
        long free = Make(batch, true, 0);
        long seen = Interlocked.CompareExchange(ref stamp, Make(batch, true, cluster, reallocated), free);
        return seen == free ? cluster : Cluster(seen);
    }
}
