using System.Runtime.InteropServices;
using Contend.Engine.Runtime;

namespace Contend.Tests;

public class CacheLinesTests
{
    /// <summary>Every block of an array from <see cref="CacheLines.Blocks"/> begins on a 64-byte
    /// boundary and lies inside the array, whatever its size; a plain <c>new long[]</c> begins 16
    /// bytes into an 8-byte-aligned object, so its blocks would not (this fails with start 0 for
    /// the arrays the runtime happens to place off a boundary: all five cases did).</summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(64)]
    [InlineData(1_000)]
    public void EveryBlockBeginsALine(int blocks)
    {
        for (int attempt = 0; attempt < 16; attempt++) // arrays at several addresses
        {
            var (array, start) = CacheLines.Blocks(blocks);
            Assert.InRange(start, 0, CacheLines.Longs - 1);
            Assert.True(start + blocks * CacheLines.Longs <= array.Length, $"{blocks} blocks from {start} run past the array's {array.Length} longs");
            for (int b = 0; b < blocks; b++)
            {
                nint address = Marshal.UnsafeAddrOfPinnedArrayElement(array, start + b * CacheLines.Longs);
                Assert.True(address % 64 == 0, $"block {b} of {blocks} begins at {address:x}, {address % 64} bytes into a line");
            }
        }
    }
}
