using System.Runtime.CompilerServices;
using Contend.Engine.Runtime;
using Xunit;

namespace Contend.Tests;

public class WorkerStatsTests
{
    /// <summary>Reads an object's fields as bytes from the first one on.</summary>
    sealed class FirstField { public byte Value; }

    /// <summary>The counters a worker bumps on every transaction must not share a cache line
    /// with whatever the runtime places before the object: their offset from the object's
    /// start (its 8-byte type pointer, then the fields) must be a whole line at least. Padding
    /// fields declared around them did not do that, since the runtime lays a class's
    /// references out first and its structs last.</summary>
    [Fact]
    public void CountersHaveALineOfTheirOwnBeforeThem()
    {
        var stats = new WorkerStats();
        ref byte fields = ref Unsafe.As<FirstField>(stats).Value;
        long fromStart = IntPtr.Size + Unsafe.ByteOffset(ref fields, ref Unsafe.As<long, byte>(ref stats.Commits));
        Assert.True(fromStart >= 64, $"WorkerStats.Commits starts {fromStart} bytes into its object: a cache line it shares with the memory before it is possible");
    }
}
