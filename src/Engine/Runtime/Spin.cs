namespace Contend.Engine.Runtime;

/// <summary>
/// The one way the engine waits. Every wait loop calls <see cref="Once"/>, so that
/// under Coyote's rewriting (SpinWait.SpinOnce becomes a scheduling point) every
/// wait is a place where another thread can be scheduled.
/// </summary>
internal static class Spin
{
    /// <summary>One round of back-off for a wait loop that re-checks a shared word.</summary>
    public static void Once(ref SpinWait wait) => wait.SpinOnce(sleep1Threshold: -1);

    /// <summary>
    /// An idle thread's spin before it sleeps: a few rounds, yielding past the first ones and never
    /// sleeping, until <paramref name="ready"/> holds; false if it never did, and the caller then
    /// sleeps. A caller that awaits one request at a time submits its next as soon as its
    /// continuation has run: a thread that slept at once would pay the OS's wake-up on every
    /// request (ContendEngine with 2 callers awaiting in turn ran at about 26,000 txn/s, p50
    /// 65-78 us, against 400,000 for the worker pool).
    /// </summary>
    public static bool BeforeSleeping<T>(T state, Func<T, bool> ready)
    {
        var wait = new SpinWait();
        for (int i = 0; i < IdleRounds; i++)
        {
            if (ready(state)) return true;
            Once(ref wait);
        }
        return false;
    }

    const int IdleRounds = 64;

    /// <summary>Abort back-off: spins for a pseudo-random number of rounds that grows with
    /// the retry count (capped), so that two transactions aborting each other drift apart.</summary>
    public static void Backoff(int retries, ref ulong rng)
    {
        int cap = 1 << Math.Min(retries, 10);
        int rounds = (int)(Rng.Next(ref rng) % (ulong)cap);
        var wait = new SpinWait();
        for (int i = 0; i < rounds; i++)
        {
            Once(ref wait);
            if (wait.NextSpinWillYield) wait.Reset();
        }
    }
}

/// <summary>SplitMix64: a seedable generator with one ulong of state, no allocation.</summary>
internal static class Rng
{
    public static ulong Next(ref ulong state)
    {
        ulong z = state += 0x9E3779B97F4A7C15UL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }

    /// <summary>A double uniform in [0, 1).</summary>
    public static double NextDouble(ref ulong state) => (Next(ref state) >> 11) * (1.0 / (1UL << 53));

    /// <summary>Stream <paramref name="stream"/>'s first state under <paramref name="seed"/>: the
    /// two mixed through one step of the generator, so that two streams' states differ by no small
    /// multiple of its increment. A plain linear start (seed * a + stream * increment) made stream
    /// s + 2 replay stream s's draws shifted by two: four YCSB callers drew each other's keys, and
    /// Silo aborted 21 % of its transactions at theta 0 (2026-11-26; 0.0 % with the mixed start).</summary>
    public static ulong Seed(ulong seed, int stream)
    {
        ulong start = seed * 0x2545F4914F6CDD1DUL + (ulong)stream * 0x9E3779B97F4A7C15UL + 1;
        return Next(ref start);
    }
}
