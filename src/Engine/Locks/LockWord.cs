using System.Runtime.CompilerServices;

namespace Contend.Engine.Locks;

/// <summary>
/// The record word of the 2PL family (NoWait, WaitDie, WaitsFor, Ordered):
/// <code>
///   63   62 ............... 48   47 ................................................ 0
///  [ X ][ shared holders, 15 b ][ timestamp of the oldest holder, 48 b (WaitDie's age) ]
///
///  free            0
///  exclusive       X = 1, holders = 0, timestamp = the holder's
///  shared          X = 0, holders = n > 0, timestamp = the smallest of any holder since
///                  the word was last free (it only decreases while shared, so it may name a
///                  holder that has left: WaitDie then dies where it could have waited, which
///                  is safe)
/// </code>
/// Every change is one CAS; a lost CAS is retried a bounded number of times, then
/// <see cref="LockResult.Busy"/> lets the caller spin (Garnet's RecordInfo habit).
/// </summary>
internal static class LockWord
{
    const int TimestampBits = 48;
    const long TimestampMask = (1L << TimestampBits) - 1;
    const long ExclusiveBit = 1L << 63;
    const long HolderUnit = 1L << TimestampBits;
    const long HoldersMask = 0x7FFFL << TimestampBits;
    public const long MaxHolders = 0x7FFF;
    const int CasAttempts = 8;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool IsExclusive(long word) => word < 0;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long Holders(long word) => (word & HoldersMask) >> TimestampBits;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long Timestamp(long word) => word & TimestampMask;

    /// <summary>Takes the lock in the mode asked. On <see cref="LockResult.Conflict"/>,
    /// <paramref name="holderTimestamp"/> is the oldest holder's age.</summary>
    public static LockResult TryLock(ref long word, bool exclusive, long timestamp, out long holderTimestamp)
    {
        timestamp &= TimestampMask;
        for (int attempt = 0; attempt < CasAttempts; attempt++)
        {
            long seen = Volatile.Read(ref word);
            holderTimestamp = Timestamp(seen);
            long desired;
            if (exclusive)
            {
                if (seen != 0) return LockResult.Conflict;
                desired = ExclusiveBit | timestamp;
            }
            else
            {
                if (IsExclusive(seen)) return LockResult.Conflict;
                long holders = Holders(seen);
                if (holders == MaxHolders) return LockResult.Busy;
                long oldest = holders == 0 ? timestamp : Math.Min(holderTimestamp, timestamp);
                desired = ((holders + 1) * HolderUnit) | oldest;
            }
            if (Interlocked.CompareExchange(ref word, desired, seen) == seen) return LockResult.Acquired;
        }
        holderTimestamp = 0;
        return LockResult.Busy;
    }

    /// <summary>Shared to exclusive, only when the caller is the one shared holder.</summary>
    public static LockResult TryUpgrade(ref long word, long timestamp, out long holderTimestamp)
    {
        long seen = Volatile.Read(ref word);
        holderTimestamp = Timestamp(seen);
        if (IsExclusive(seen) || Holders(seen) == 0)
            throw new InvalidOperationException("upgrade of a lock the caller does not hold shared");
        if (Holders(seen) != 1) return LockResult.Conflict;
        return Interlocked.CompareExchange(ref word, ExclusiveBit | (timestamp & TimestampMask), seen) == seen
            ? LockResult.Acquired : LockResult.Busy;
    }

    public static void ReleaseExclusive(ref long word)
    {
        if (!IsExclusive(Volatile.Read(ref word))) throw new InvalidOperationException("exclusive release of a lock not held exclusive");
        Volatile.Write(ref word, 0);
    }

    public static void ReleaseShared(ref long word)
    {
        var wait = new SpinWait();
        while (true)
        {
            long seen = Volatile.Read(ref word);
            long holders = Holders(seen);
            if (IsExclusive(seen) || holders == 0) throw new InvalidOperationException("shared release of a lock not held shared");
            long desired = holders == 1 ? 0 : seen - HolderUnit;
            if (Interlocked.CompareExchange(ref word, desired, seen) == seen) return;
            Runtime.Spin.Once(ref wait);
        }
    }
}

internal enum LockResult : byte { Acquired, Conflict, Busy }
