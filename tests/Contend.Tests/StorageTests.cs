using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Contend.Engine.Locks;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Storage;

namespace Contend.Tests;

public class StorageTests
{
    [Fact]
    public void PrefetchingChangesNoLookup()
    {
        // Strife's pre-processing prefetches every key it is about to look up, present or not,
        // with and without stamps, and its cluster phase every row it is about to run on: the
        // hints must touch nothing a lookup or a read sees.
        var table = new Table("t", 0, payloadSize: 8, capacity: 64);
        for (long key = 0; key < 48; key++) table.Load(key * 3);
        foreach (bool stamps in new[] { false, true })
        {
            if (stamps) table.EnsureStamps();
            for (long key = -5; key < 160; key++)
            {
                table.PrefetchIndex(key);
                table.PrefetchFound(key);
                Assert.Equal(key >= 0 && key % 3 == 0 && key < 144 ? (int)(key / 3) : -1, table.Find(key));
            }
            // The cluster phase prefetches rows by number, a row ahead of the one it runs.
            for (int row = 0; row < 48; row++)
            {
                table.PrefetchRowAt(row);
                Assert.Equal(row, table.Find(row * 3));
                Assert.Equal(0, table.Payload(row)[0]);
            }
            if (stamps) Assert.Equal(0, table.Stamp(0));
        }
    }

    [Fact]
    public unsafe void RowsAreCacheLineAlignedAndFoundByKey()
    {
        var table = new Table("t", 0, payloadSize: 100, capacity: 1000);
        Assert.Equal(128, table.Stride);
        for (long key = 0; key < 1000; key++) table.Load(key * 7919);
        for (long key = 0; key < 1000; key++)
        {
            int row = table.Find(key * 7919);
            Assert.Equal(key, row);
            nint payload = (nint)Unsafe.AsPointer(ref MemoryMarshal.GetReference(table.Payload(row)));
            Assert.Equal(0, (payload - Table.HeaderSize) % 64);
        }
        Assert.Equal(-1, table.Find(1));
    }

    [Fact]
    public void KeysWiderThanTheSlotAreToldApartByTheirRows()
    {
        // An index slot holds a key's low 32 bits, whole for a key that fits and as a filter for
        // one that does not: keys alike in their low 32 bits (and negative keys, all wide) must
        // each find their own row, and a wide key must not match a narrow one's slot.
        long[] keys = [7, 7 + (1L << 32), 7 - (1L << 32), -1, uint.MaxValue, (long)uint.MaxValue + 1, long.MinValue, long.MaxValue, 1L << 40];
        var table = new Table("t", 0, payloadSize: 8, capacity: 2 * keys.Length);
        table.EnsureStamps();
        for (int i = 0; i < keys.Length; i++) Assert.Equal(i, table.Load(keys[i]));
        for (int i = 0; i < keys.Length; i++)
        {
            table.PrefetchFound(keys[i]);
            Assert.Equal(i, table.Find(keys[i]));
            var refused = Assert.Throws<InvalidOperationException>(() => table.Load(keys[i]));
            Assert.Contains("loaded twice", refused.Message);
        }
        Assert.Equal(-1, table.Find(7 + (2L << 32)));
        Assert.Equal(-1, table.Find(uint.MaxValue - 1L));
        Assert.Equal(-1, table.Find(-2));
    }

    [Fact]
    public void FullTableAndDuplicateKeysAreRefused()
    {
        var table = new Table("t", 0, 8, 2);
        table.Load(5);
        Assert.Throws<InvalidOperationException>(() => table.Load(5));
        Assert.Equal(1, table.Count); // the refused duplicate gave its row back
        Assert.Equal(1, table.Allocate(6));
        Assert.Equal(-1, table.Allocate(7));
        table.Release(1);
        Assert.Equal(1, table.Count);
        Assert.Equal(1, table.Allocate(8)); // a released row is taken again, cleared
        Assert.Equal(8, table.Key(1));
    }

    [Fact]
    public void LockWordSharedExclusiveAndUpgrade()
    {
        long word = 0;
        Assert.Equal(LockResult.Acquired, LockWord.TryLock(ref word, false, 10, out _));
        Assert.Equal(LockResult.Acquired, LockWord.TryLock(ref word, false, 5, out _));
        Assert.Equal(2, LockWord.Holders(word));
        Assert.Equal(5, LockWord.Timestamp(word));
        Assert.Equal(LockResult.Conflict, LockWord.TryLock(ref word, true, 1, out long holder));
        Assert.Equal(5, holder);
        Assert.Equal(LockResult.Conflict, LockWord.TryUpgrade(ref word, 10, out _));
        LockWord.ReleaseShared(ref word);
        Assert.Equal(LockResult.Acquired, LockWord.TryUpgrade(ref word, 10, out _));
        Assert.True(LockWord.IsExclusive(word));
        Assert.Equal(LockResult.Conflict, LockWord.TryLock(ref word, false, 1, out holder));
        Assert.Equal(10, holder);
        LockWord.ReleaseExclusive(ref word);
        Assert.Equal(0, word);
        Assert.Throws<InvalidOperationException>(() => LockWord.ReleaseShared(ref word));
    }
}
