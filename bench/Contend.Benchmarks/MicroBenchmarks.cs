using BenchmarkDotNet.Attributes;
using Contend.Engine.Locks;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness.Workloads;

namespace Contend.Benchmarks;

/// <summary>One uncontended acquire and release of each lock kind the engine has.</summary>
public class LockBenchmarks
{
    long _word;
    readonly long[] _tail = new long[1];
    readonly McsLock _mcs = new(1);

    [Benchmark(Baseline = true, Description = "2PL word, exclusive")]
    public void Exclusive()
    {
        LockWord.TryLock(ref _word, true, 1, out _);
        LockWord.ReleaseExclusive(ref _word);
    }

    [Benchmark(Description = "2PL word, shared")]
    public void Shared()
    {
        LockWord.TryLock(ref _word, false, 1, out _);
        LockWord.ReleaseShared(ref _word);
    }

    [Benchmark(Description = "MCS queue lock")]
    public void Mcs()
    {
        _mcs.TryLock(ref _tail[0], 0);
        _mcs.Unlock(ref _tail[0], 0);
    }

    [Benchmark(Description = "Silo lock bit (CAS, then store)")]
    public void SiloLockBit()
    {
        long seen = Volatile.Read(ref _word);
        Interlocked.CompareExchange(ref _word, seen | (1L << 63), seen);
        Volatile.Write(ref _word, seen);
    }
}

/// <summary>Primary-index lookup of a random key in a loaded table, and one Zipf draw.</summary>
public class LookupBenchmarks
{
    [Params(1_000_000, 10_000_000)]
    public int Rows;

    Table _table = null!;
    Zipf _zipf = null!;
    ulong _rng = 12345;

    [GlobalSetup]
    public void Setup()
    {
        _table = new Table("t", 0, 100, Rows);
        for (int key = 0; key < Rows; key++) _table.Load(key);
        _zipf = new Zipf(Rows - 1, 0.9);
    }

    [GlobalCleanup]
    public void Cleanup() => _table.Free();

    [Benchmark(Description = "index lookup, uniform key")]
    public int Lookup() => _table.Find((long)(Rng.Next(ref _rng) % (ulong)Rows));

    [Benchmark(Description = "Zipf draw, theta 0.9")]
    public long ZipfDraw() => _zipf.Next(ref _rng);
}
