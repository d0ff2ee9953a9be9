using System.Runtime.CompilerServices;
using Contend.Engine.Protocols.StealDB;
using Xunit;

namespace Contend.Tests;

public class StealDbLayoutTests
{
    /// <summary>Offset and size of one field of a slot's words.</summary>
    static (string Name, long Offset, int Size) At<T>(ref StealDb.SlotWords words, ref T field, string name) =>
        (name, Unsafe.ByteOffset(ref Unsafe.As<StealDb.SlotWords, byte>(ref words), ref Unsafe.As<T, byte>(ref field)), Unsafe.SizeOf<T>());

    /// <summary>Two bytes can share a cache line, for some address of the struct, when they are
    /// under 64 bytes apart. The runtime places a slot's words at any offset mod 64 (a managed
    /// object is only 8-byte aligned), so words that different workers write, or one worker
    /// writes while another reads, must be 64 bytes apart, and none may be that close to what
    /// lies before or after the struct. A layout with one group per line, 64 bytes apart,
    /// fails this: the counters then end 41 bytes before the steal context.</summary>
    [Fact]
    public void SlotWordGroupsNeverShareALine()
    {
        var w = new StealDb.SlotWords();
        var groups = new[]
        {
            new[] { At(ref w, ref w.OwnFinished, "OwnFinished"), At(ref w, ref w.Executed, "Executed"), At(ref w, ref w.Stolen, "Stolen") },
            new[] { At(ref w, ref w.StealContext, "StealContext"), At(ref w, ref w.Writes, "Writes") },
            new[] { At(ref w, ref w.Running, "Running") },
            new[] { At(ref w, ref w.RqLength, "RqLength") },
            new[] { At(ref w, ref w.Finished, "Finished") },
            new[] { At(ref w, ref w.Doom, "Doom") },
        };
        int size = Unsafe.SizeOf<StealDb.SlotWords>();
        for (int g = 0; g < groups.Length; g++)
        {
            foreach (var a in groups[g])
            {
                Assert.True(a.Offset >= 64, $"SlotWords.{a.Name} starts {a.Offset} bytes into the struct: it can share a line with what lies before it");
                long after = size - (a.Offset + a.Size);
                Assert.True(after >= 64, $"SlotWords.{a.Name} ends {after} bytes before the struct's end: it can share a line with what lies after it");
                for (int h = g + 1; h < groups.Length; h++)
                {
                    foreach (var b in groups[h])
                    {
                        var (first, second) = a.Offset < b.Offset ? (a, b) : (b, a);
                        long apart = second.Offset - (first.Offset + first.Size - 1);
                        Assert.True(apart >= 64, $"SlotWords.{first.Name} and SlotWords.{second.Name}, of different groups, have bytes {apart} apart: they can share a cache line");
                    }
                }
            }
        }
    }

    /// <summary>The basic policy's holder hints: every row has a hint of its own, and each row's
    /// hint is 64 bytes or more from those of the 63 rows after it, so no two hot rows' hints
    /// share a cache line. Dense hints (row r at index r) fail this at the first pair: rows 0
    /// and 1, 4 bytes apart.</summary>
    [Theory]
    [InlineData(1)]
    [InlineData(16)]
    [InlineData(100)]
    [InlineData(4096)]
    [InlineData(5000)]
    [InlineData(100_000)]
    public void HolderHintsOfNearbyRowsNeverShareALine(int rows)
    {
        var hints = new StealDb.HolderHints(rows);
        long Offset(int row) => Unsafe.ByteOffset(ref hints.Of(0), ref hints.Of(row));
        var seen = new HashSet<long>();
        for (int r = 0; r < rows; r++)
        {
            Assert.True(seen.Add(Offset(r)), $"{rows} rows: row {r}'s hint is another row's");
            for (int q = r + 1; q < Math.Min(rows, r + 64); q++)
            {
                long apart = Math.Abs(Offset(q) - Offset(r));
                Assert.True(apart >= 64, $"{rows} rows: the hints of rows {r} and {q} are {apart} bytes apart: they can share a cache line");
            }
        }
    }
}
