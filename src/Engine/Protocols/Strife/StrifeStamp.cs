using System.Runtime.CompilerServices;

namespace Contend.Engine.Protocols.Strife;

/// <summary>
/// A row's Strife stamp (<see cref="Storage.Table.Stamp"/>): the row's part in one batch's
/// analysis, d.Cluster of the paper's Algorithms 1-3.
/// <code>
///   63 .................... 32   31   30 ........................... 0
///  [ batch number, 32 b       ][ R ][ cluster id, 31 b                ]
///
///  batch number   the batch some transaction of which writes the row. Pre-processing marks
///                 only written rows, because only they take part in clustering
///                 (StrifeAnalysis.tla, Written): a row read by the batch and written by no
///                 transaction of it conflicts with nothing. A stamp of another batch means
///                 "no part in this batch": nothing is cleared between batches, and batch
///                 n+1's analysis never touches what batch n's residuals use (they use the
///                 record word, the lock, and this word is not it)
///  R              the cluster was claimed at re-allocation, after merge counted; the debug
///                 check of ResidualBoundInv tells these apart (TouchesFreeItem)
///  cluster id     0: no cluster yet (NoCluster); else the cluster allocate or spot gave it,
///                 never renamed: merge links clusters in a union-find instead (Section 4.1)
/// </code>
/// </summary>
internal static class StrifeStamp
{
    const long ReallocBit = 1L << 31, ClusterMask = (1L << 31) - 1;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static uint Batch(long stamp) => (uint)((ulong)stamp >> 32);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool Reallocated(long stamp) => (stamp & ReallocBit) != 0;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Cluster(long stamp) => (int)(stamp & ClusterMask);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long Make(uint batch, int cluster, bool reallocated = false) =>
        ((long)batch << 32) | (reallocated ? ReallocBit : 0) | (long)cluster;

    /// <summary>Pre-processing: marks the row as written by batch <paramref name="batch"/>, with
    /// no cluster yet. A plain store, not a CAS: while a batch is pre-processed, every store to a
    /// stamp is this one value (claims start only once the last chunk is counted done, and the
    /// batch before made its last claim before this one started), so racing marks agree. The
    /// read first leaves a row marked already (a hot one) unwritten, its line shared.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void Mark(ref long stamp, uint batch)
    {
        long marked = Make(batch, 0);
        if (Volatile.Read(ref stamp) != marked) Volatile.Write(ref stamp, marked);
    }

    /// <summary>Claims a written row with no cluster for <paramref name="cluster"/> (Algorithm 2
    /// lines 8-9), by one CAS from the value pre-processing left. Returns the row's cluster
    /// afterwards: <paramref name="cluster"/>, or the one another transaction claimed it for first.</summary>
    public static int Claim(ref long stamp, uint batch, int cluster, bool reallocated)
    {
        long free = Make(batch, 0);
        long seen = Interlocked.CompareExchange(ref stamp, Make(batch, cluster, reallocated), free);
        return seen == free ? cluster : Cluster(seen);
    }
}
