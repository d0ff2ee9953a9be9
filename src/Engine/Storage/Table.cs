using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics.X86;
using Contend.Engine.Runtime;

namespace Contend.Engine.Storage;

/// <summary>
/// A table: one pinned arena of fixed-size rows, allocated once at 64-byte alignment,
/// and a primary hash index sized at creation. Rows are never freed while the table
/// lives, so a row number stays valid for the table's lifetime.
/// </summary>
public sealed unsafe class Table
{
    // Row layout (the stride is a multiple of 64 so that no two rows share a cache line):
    //   +0   record word   8 B   the protocol family's lock / version word: its layout is drawn
    //                            where the family defines it (LockWord.cs for 2PL, McsLock.cs
    //                            for the queue locks, SiloOcc.cs for Silo)
    //   +8   version       8 B   id of the transaction that installed the current value;
    //                            0 for the loaded value (the history's reads-from)
    //   +16  key           8 B   primary key, written once before the row is published
    //   +24  payload       PayloadSize bytes
    // Index slot (one word per slot; 0 = empty; open addressing, linear probing):
    //   63                 32   31     30     29                  0
    //  +---------------------+------+------+----------------------+
    //  |   key, low 32 bits  | wide | dark |        row + 1       |
    //  +---------------------+------+------+----------------------+
    // dark = 1: an insert has claimed the key and not yet committed (`Claim`); a
    // lookup does not see the row until `Reveal` clears the bit. A claim undone by an
    // abort (`Retract`) leaves a tombstone, dark with row + 1 = 0, that probes pass
    // over: the slot is never reused, and neither is its row (it is retired), so every slot that is
    // not empty keeps a row of its own, and slots stay more than rows. The row of an insert that
    // claimed no key was never reachable, and goes back to the table (`Release`) for
    // the next insert: a refused insert does not use a row up. A committed row is never freed.
    // A key that fits in 32 bits (every key the workloads make) is compared in the slot, so a
    // lookup reads the index line and not the row's: Strife's analysis finds the rows of a whole
    // batch without touching one of them. A wider key (wide = 1) keeps its low bits as a filter,
    // and the lookup confirms it with the row's key.
    //
    // Shared words are read and written only through `ref long` with Volatile /
    // Interlocked, never through raw pointer loads, so Coyote's rewriter sees every access
    // (../../shared/DESIGN.md).

    internal const int HeaderSize = 24;
    const int WordOffset = 0, VersionOffset = 8, KeyOffset = 16;

    /// <summary>The name programs refer to the table by.</summary>
    public string Name { get; }
    /// <summary>The table's place in its database (<see cref="Database.Tables"/>).</summary>
    public int Id { get; }
    /// <summary>The bytes of a row that a program's bodies read and write.</summary>
    public int PayloadSize { get; }
    internal int Stride { get; }
    /// <summary>The most rows the table holds, loaded and inserted; fixed at creation.</summary>
    public int Capacity { get; }

    byte* _rows;
    /// <summary>Rows ever handed out: the high-water mark (released rows included).</summary>
    int _count;
    /// <summary>Released rows, a stack: the low 32 bits row + 1 of its top (0: empty), the high
    /// 32 a count bumped by every push and pop, so that a pop's CAS fails if the top was popped
    /// and pushed again meanwhile (ABA).</summary>
    long _freeTop;
    /// <summary>Released rows below each in the stack (row + 1; 0: the bottom), by row; made at the first release.</summary>
    int[]? _freeNext;
    int _freeCount;
    long[]? _stamps;
    readonly long[] _slots;
    const long RowMask = (1L << 30) - 1, DarkBit = 1L << 30, WideBit = 1L << 31;
    /// <summary>The slot word's bits that a probe compares: the key's low half and the wide bit.</summary>
    const long KeyMask = ~(RowMask | DarkBit);
    /// <summary>A retracted claim: dark, and no row.</summary>
    const long Tombstone = DarkBit;
    /// <summary>The most rows a table holds: row + 1 must fit in the slot's 30 row bits.</summary>
    public const int MaxCapacity = (int)RowMask - 1;

    internal Table(string name, int id, int payloadSize, int capacity)
    {
        if (payloadSize < 0) throw new ArgumentOutOfRangeException(nameof(payloadSize), $"table {name}: payload size {payloadSize} is negative");
        if (capacity is <= 0 or > MaxCapacity) throw new ArgumentOutOfRangeException(nameof(capacity), $"table {name}: capacity {capacity} must be 1..{MaxCapacity}");
        Name = name;
        Id = id;
        PayloadSize = payloadSize;
        Stride = (HeaderSize + payloadSize + 63) & ~63;
        Capacity = capacity;
        nuint bytes = (nuint)Stride * (nuint)capacity;
        _rows = (byte*)NativeMemory.AlignedAlloc(bytes, 64);
        NativeMemory.Clear(_rows, bytes);
        // At most 3/4 full, and never full (more slots than rows), so every probe ends at an
        // empty slot. Not rounded up to a power of two: at 10M rows that would take 2^24 slots
        // of 8 B where 14M do (the 10M-row YCSB table and its index are to fit in 1.5 GB).
        long slots = capacity + capacity / 3 + 1;
        if (slots > Array.MaxLength) throw new ArgumentOutOfRangeException(nameof(capacity), $"table {name}: capacity {capacity} needs {slots} index slots, more than an array holds");
        _slots = new long[slots];
        // A large array comes zeroed from the OS, untouched: clearing it takes its page faults
        // here, at load, rather than in the first inserts a measured run makes.
        _slots.AsSpan().Clear();
    }

    /// <summary>The rows in use: loaded, inserted, reserved by an insert that may yet abort, or
    /// retired by one that aborted after claiming its key (a refused insert gives its row back).</summary>
    public int Count => Math.Clamp(Volatile.Read(ref _count) - Volatile.Read(ref _freeCount), 0, Capacity);

    /// <summary>Rows retired: their insert claimed its key and then aborted, and the claim's
    /// tombstone keeps the row from being reused (<see cref="Retract"/>).</summary>
    internal int Retired => Volatile.Read(ref _retired);

    int _retired;

    /// <summary>Rows below this number have been handed out at some time (some may be free
    /// again, and reachable by no key): the bound for a walk over the rows.</summary>
    internal int RowsEverUsed => Math.Min(Volatile.Read(ref _count), Capacity);

    /// <summary>The bytes the table's rows and index take.</summary>
    public long MemoryBytes => (long)Stride * Capacity + (long)_slots.Length * sizeof(long);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    byte* Row(int row)
    {
        Debug.Assert((uint)row < (uint)Capacity, $"table {Name}: row {row} outside 0..{Capacity - 1}");
        return _rows + (nint)row * Stride;
    }

    /// <summary>The row's record word. Its layout belongs to the protocol family that runs on the
    /// table: 2PL's lock word (<see cref="Locks.LockWord"/>), the queue
    /// locks' tail (<see cref="Locks.McsLock"/>), or Silo's lock bit and
    /// version (<see cref="Protocols.Silo.SiloOcc"/>).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal ref long Word(int row) => ref Unsafe.AsRef<long>(Row(row) + WordOffset);

    /// <summary>Id of the transaction whose write is the row's current value (0: loaded).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal ref long Version(int row) => ref Unsafe.AsRef<long>(Row(row) + VersionOffset);

    /// <summary>
    /// Gives every row a stamp word, kept beside the rows rather than in the header: only
    /// Strife's analysis uses it (StrifeStamp.cs has its layout), and a header word would
    /// grow every other protocol's rows (YCSB's 100 B rows from a 128 B to a 192 B stride).
    /// Indexed by row number, it costs no hash lookup (the paper's reason to keep its cluster
    /// id in the record), and since the lookup reads the index slot and not the row, the
    /// analysis reads a stamp's line where the paper's reads the record's. Call before the
    /// workers start.
    /// </summary>
    internal void EnsureStamps() => _stamps ??= new long[Capacity];

    /// <summary>Gives every row a commit-id word, beside the rows as the stamps are: only a durable
    /// engine orders its log by commit ids (Durability/EpochLog.cs), and the others' rows stay as
    /// they are. 0: the row's value came with the checkpoint the engine started from, or was loaded.</summary>
    internal void EnsureCommitIds() => _commitIds ??= new long[Capacity];

    /// <summary>The commit id of the transaction whose write is the row's value (with
    /// <see cref="EnsureCommitIds"/>).</summary>
    internal ref long CommitId(int row) => ref _commitIds![row];

    long[]? _commitIds;

    /// <summary>The row's stamp word (<see cref="EnsureStamps"/> first).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal ref long Stamp(int row) => ref _stamps![row];

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal long Key(int row) => Volatile.Read(ref Unsafe.AsRef<long>(Row(row) + KeyOffset));

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal Span<byte> Payload(int row) => new(Row(row) + HeaderSize, PayloadSize);

    /// <summary>A hint, no read: asks the CPU to fetch the index line <see cref="Find"/> starts at,
    /// so that a caller about to look up many keys has their misses overlap (x86; elsewhere nothing).</summary>
    internal void PrefetchIndex(long key)
    {
        if (!Sse.IsSupported) return;
        fixed (long* slot = &_slots[Home(key)]) Sse.Prefetch0(slot);
    }

    /// <summary>A hint: asks the CPU for what <see cref="Find"/> will read after the index line
    /// it starts at, if that line names this key's row: the row's stamp (when the table has
    /// stamps), and the row's header only for a key too wide for the slot to hold.
    /// Best after <see cref="PrefetchIndex"/>.</summary>
    internal void PrefetchFound(long key)
    {
        if (!Sse.IsSupported) return;
        long probe = Probe(key), entry = Volatile.Read(ref _slots[Home(key)]);
        if (entry == 0 || (entry & ~RowMask) != probe) return; // empty, claimed, a tombstone, or another key
        int row = RowOf(entry);
        if ((probe & WideBit) != 0) Sse.Prefetch0(Row(row));
        if (_stamps is not null) PrefetchStamp(row);
    }

    /// <summary>A hint: asks the CPU for the row's stamp line (<see cref="EnsureStamps"/> first).</summary>
    internal void PrefetchStamp(int row)
    {
        if (!Sse.IsSupported) return;
        fixed (long* stamp = &_stamps![row]) Sse.Prefetch0(stamp);
    }

    /// <summary>A hint: asks the CPU for a row's header line and, in a row longer than one line,
    /// the line after it (where most payloads start or continue).</summary>
    internal void PrefetchRowAt(int row)
    {
        if (!Sse.IsSupported) return;
        Debug.Assert((uint)row < (uint)Capacity, $"PrefetchRowAt: row {row} is outside table {Name} (capacity {Capacity})");
        byte* line = Row(row);
        Sse.Prefetch0(line);
        if (Stride > 64) Sse.Prefetch0(line + 64);
    }

    /// <summary>Index of the row with this key, or -1 (none, or one an insert has claimed and not
    /// yet committed). Allocates nothing, and reads no row unless the key is wider than 32 bits.</summary>
    internal int Find(long key)
    {
        long probe = Probe(key);
        int slot = Home(key);
        while (true)
        {
            long entry = Volatile.Read(ref _slots[slot]);
            if (entry == 0) return -1;
            if (Holds(entry, probe, key)) return RowOf(entry);
            slot = slot + 1 == _slots.Length ? 0 : slot + 1;
        }
    }

    /// <summary>The slot word's upper half for this key: its low 32 bits, and the wide bit
    /// when they are not the whole key.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    static long Probe(long key) => (key << 32) | ((ulong)key >> 32 == 0 ? 0 : WideBit);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    static int RowOf(long entry) => (int)(entry & RowMask) - 1;

    /// <summary>Whether a non-empty slot word names the committed row of this key (probe =
    /// Probe(key)). A probe never has the dark bit, so a claimed slot or a tombstone never
    /// matches: a lookup passes over them as over another key's, with no test of its own.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    bool Holds(long entry, long probe, long key) =>
        (entry & ~RowMask) == probe && ((probe & WideBit) == 0 || Key(RowOf(entry)) == key);

    /// <summary>Whether a non-empty slot word names this key's row, committed or claimed; never a tombstone.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    bool HoldsOrClaims(long entry, long probe, long key) =>
        (entry & KeyMask) == probe && (entry & RowMask) != 0 && ((probe & WideBit) == 0 || Key(RowOf(entry)) == key);

    /// <summary>
    /// Takes a fresh row for this key, not yet reachable by <see cref="Find"/>: the caller
    /// fills it, then <see cref="Claim"/>s its key. Returns -1 when the table is full.
    /// </summary>
    internal int Allocate(long key)
    {
        int row = Reserve();
        if (row >= 0) Assign(row, key);
        return row;
    }

    /// <summary>Takes a fresh row whose key is not known yet (-1 when the table is full); the
    /// caller <see cref="Assign"/>s it one before it fills and publishes it.</summary>
    internal int Reserve()
    {
        if (Volatile.Read(ref _freeCount) > 0 && TryPopFree(out int free)) return free;
        int row = Interlocked.Increment(ref _count) - 1;
        if (row >= Capacity)
        {
            Interlocked.Decrement(ref _count);
            return -1;
        }
        return row;
    }

    /// <summary>Gives back a row that was <see cref="Reserve"/>d or allocated and whose key was never
    /// claimed (a retracted claim's row stays retired: <see cref="Retract"/>): it is
    /// cleared, header and payload, and the next <see cref="Reserve"/> may take it. No slot names it,
    /// so no probe reads it.</summary>
    internal void Release(int row)
    {
        Debug.Assert((uint)row < (uint)RowsEverUsed, $"table {Name}: row {row} released but never handed out");
        if (_freeNext is null) Interlocked.CompareExchange(ref _freeNext, new int[Capacity], null);
        NativeMemory.Clear(Row(row), (nuint)Stride);
        Volatile.Write(ref Word(row), 0);
        var spin = new SpinWait();
        while (true)
        {
            long top = Volatile.Read(ref _freeTop);
            Volatile.Write(ref _freeNext![row], (int)top);
            long pushed = ((top >>> 32) + 1 << 32) | (uint)(row + 1);
            if (Interlocked.CompareExchange(ref _freeTop, pushed, top) == top) break;
            Spin.Once(ref spin);
        }
        Interlocked.Increment(ref _freeCount);
    }

    /// <summary>Takes a released row, if one is there. The loop is bounded: it gives up (false,
    /// and the caller takes a fresh row) after a few lost races rather than spin on a hot top.</summary>
    bool TryPopFree(out int row)
    {
        for (int tries = 0; tries < 8; tries++)
        {
            long top = Volatile.Read(ref _freeTop);
            int first = (int)top;
            if (first == 0) break;
            int below = Volatile.Read(ref _freeNext![first - 1]);
            long popped = ((top >>> 32) + 1 << 32) | (uint)below;
            if (Interlocked.CompareExchange(ref _freeTop, popped, top) == top)
            {
                Interlocked.Decrement(ref _freeCount);
                row = first - 1;
                return true;
            }
        }
        row = -1;
        return false;
    }

    /// <summary>Gives a <see cref="Reserve"/>d row its key, once, before it is published.</summary>
    internal void Assign(int row, long key)
    {
        Debug.Assert(row < RowsEverUsed, $"table {Name}: row {row} was never reserved");
        Volatile.Write(ref Unsafe.AsRef<long>(Row(row) + KeyOffset), key);
    }

    /// <summary><see cref="Claim"/>'s answer when another insert holds the key's claim and the
    /// caller does not wait (no waiter).</summary>
    internal const int ClaimedByAnother = -2;
    /// <summary><see cref="Claim"/>'s answer when the waiting attempt gave up (its deadline or its
    /// caller's token) while another attempt held the key's claim.</summary>
    internal const int GaveUp = -3;

    /// <summary>
    /// Claims the index slot of an allocated, filled row's key for an insert that has not
    /// committed: the row stays unreachable (<see cref="Find"/> answers -1) until
    /// <see cref="Reveal"/>, or <see cref="Retract"/> gives the key up. Returns the slot, or -1
    /// when the key is already in the table, committed. Another insert's claim on the same key
    /// is waited out until it commits (then -1) or is retracted; the slot is claimed by CAS, so
    /// of two inserts of one key racing, one wins.
    /// </summary>
    /// <remarks>An insert that waits here holds claims of its own, so the protocols claim an
    /// attempt's keys in one global order, (table, key), and claim only once they wait for
    /// nothing else: no cycle of waits can form. A participant of a transaction across
    /// partitions cannot rely on that order (the claim it would wait for may hang on another
    /// partition's vote), so it passes no waiter and gets
    /// <see cref="ClaimedByAnother"/> instead of waiting.</remarks>
    /// <param name="row">the allocated, filled row</param>
    /// <param name="waiter">the attempt that waits out another's claim, until it gives up
    /// (<see cref="TxnContext.GivingUp"/>: then <see cref="GaveUp"/>); null: no wait, <see cref="ClaimedByAnother"/></param>
    internal int Claim(int row, TxnContext? waiter)
    {
        long key = Key(row), probe = Probe(key);
        int slot = Home(key);
        var spin = new SpinWait();
        bool waited = false;
        try
        {
            while (true)
            {
                long entry = Volatile.Read(ref _slots[slot]);
                if (entry == 0)
                {
                    if (Interlocked.CompareExchange(ref _slots[slot], probe | DarkBit | (row + 1L), 0) == 0) return slot;
                    continue; // lost the slot to another insert: look at what it put there
                }
                if (HoldsOrClaims(entry, probe, key))
                {
                    if ((entry & DarkBit) == 0) return -1;
                    if (waiter is null) return ClaimedByAnother;
                    if (waiter.GivingUp) return GaveUp;
                    if (!waited)
                    {
                        waited = true;
                        Interlocked.Increment(ref _claimWaiters);
                    }
                    Spin.Once(ref spin); // another attempt's claim: wait for its commit or abort
                    continue;
                }
                slot = slot + 1 == _slots.Length ? 0 : slot + 1;
            }
        }
        finally
        {
            if (waited) Interlocked.Decrement(ref _claimWaiters);
        }
    }

    int _claimWaiters;

    /// <summary>How many inserts are waiting in <see cref="Claim"/> for another attempt's claim of
    /// their key: each ends when that attempt commits or aborts, or when the waiter gives up (the
    /// front door's fuzzer holds a claim until they have all ended).</summary>
    internal int ClaimWaiters => Volatile.Read(ref _claimWaiters);

    /// <summary>Commits a <see cref="Claim"/>: the row becomes reachable by its key, whole.</summary>
    internal void Reveal(int slot)
    {
        long entry = Volatile.Read(ref _slots[slot]);
        Debug.Assert((entry & DarkBit) != 0 && (entry & RowMask) != 0, $"table {Name}: slot {slot} revealed without a claim");
        Volatile.Write(ref _slots[slot], entry & ~DarkBit); // only the claimer writes a dark slot
    }

    /// <summary>Undoes a <see cref="Claim"/>: the key is free again, the row never reachable, and
    /// retired: the slot stays a tombstone, and a table keeps more slots than rows only while
    /// each slot that is not empty keeps a row of its own.</summary>
    internal void Retract(int slot)
    {
        Debug.Assert((Volatile.Read(ref _slots[slot]) & DarkBit) != 0, $"table {Name}: slot {slot} retracted without a claim");
        Volatile.Write(ref _slots[slot], Tombstone);
        Interlocked.Increment(ref _retired);
    }

    /// <summary>Loads a row with this key (single-threaded load phase); throws if full or duplicate.</summary>
    internal int Load(long key)
    {
        int row = Allocate(key);
        if (row < 0) throw new InvalidOperationException($"table {Name}: full at {Capacity} rows while loading key {key}");
        int slot = Claim(row, waiter: null);
        if (slot < 0)
        {
            Release(row);
            throw new InvalidOperationException($"table {Name}: key {key} loaded twice");
        }
        Reveal(slot);
        return row;
    }

    /// <summary>Loads a row: the key, and the payload's bytes (at most <see cref="PayloadSize"/>,
    /// the rest zero). For the load phase, before an engine serves the database: a row written
    /// here bypasses concurrency control, so it is refused while one does.</summary>
    /// <exception cref="InvalidOperationException">an engine serves the database; the table is
    /// full; the key is in the table already</exception>
    /// <exception cref="ObjectDisposedException">the database was disposed</exception>
    /// <exception cref="ArgumentException">the payload is longer than a row's</exception>
    public void Load(long key, ReadOnlySpan<byte> payload)
    {
        if (Owner is { } db) db.ThrowIfServedOrDisposed($"table {Name}: loading key {key}");
        if (payload.Length > PayloadSize)
            throw new ArgumentException($"table {Name}: a payload of {payload.Length} bytes for key {key} is longer than the table's rows ({PayloadSize} bytes)", nameof(payload));
        payload.CopyTo(Payload(Load(key)));
    }

    /// <summary>Copies the payload of the row with this key into <paramref name="into"/> (at most
    /// <see cref="PayloadSize"/> bytes); false if no row has the key. For before an engine serves
    /// the database (a read here would see uncommitted writes): refused while one does.</summary>
    /// <exception cref="InvalidOperationException">an engine serves the database</exception>
    /// <exception cref="ObjectDisposedException">the database was disposed</exception>
    public bool TryRead(long key, Span<byte> into)
    {
        if (Owner is { } db) db.ThrowIfServedOrDisposed($"table {Name}: reading key {key}");
        int row = Find(key);
        if (row < 0) return false;
        var payload = Payload(row);
        payload[..Math.Min(payload.Length, into.Length)].CopyTo(into);
        return true;
    }

    /// <summary>The database the table belongs to; null for a table made on its own (tests).</summary>
    internal Database? Owner { get; init; }

    /// <summary>The slot a key's probe starts at: the high half of a multiplicative hash, scaled to
    /// the slot count by a multiply and shift (no division, any count).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    int Home(long key) => (int)((((ulong)key * 0x9E3779B97F4A7C15UL) >> 32) * (ulong)_slots.Length >> 32);

    /// <summary>Frees the rows (again: nothing). Only the database frees its tables, once no engine serves it.</summary>
    internal void Free()
    {
        if (_rows != null)
        {
            NativeMemory.AlignedFree(_rows);
            _rows = null;
        }
        GC.SuppressFinalize(this);
    }

    /// <summary>Frees the rows of a table its database was not disposed to free.</summary>
    ~Table() => Free();
}
