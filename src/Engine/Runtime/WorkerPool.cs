using System.Diagnostics;
using Contend.Engine.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <param name="TransactionsPerWorker">when positive, each worker stops after that many transactions
/// (committed or aborted by their logic) and <see cref="RunOptions.Seconds"/> is ignored: a fixed
/// amount of work, as a benchmark invocation needs</param>
internal sealed record RunOptions(int Threads, double Seconds, double WarmupSeconds = 0, bool RecordHistory = false, bool Pin = true, ulong Seed = 1,
                                long TransactionsPerWorker = 0);

internal sealed record RunResult(WorkerStats Total, double MeasuredSeconds, IReadOnlyList<WorkerStats> PerWorker,
                               List<CommittedTxn>? History, IReadOnlyList<string> Warnings)
{
    public double Throughput => Total.Commits / MeasuredSeconds;
    /// <summary>Conflict aborts per attempt that ended (commits, user aborts and conflict aborts).</summary>
    public double AbortRate => Total.TotalAborts / (double)Math.Max(1, Total.Commits + Total.UserAborts + Total.TotalAborts);
}

/// <summary>
/// Runs a protocol over a workload on one OS thread per worker, each pinned to its own core
/// where the OS allows. A conflict-aborted transaction is retried (same arguments) after a
/// randomized back-off until it commits, its logic aborts it, or the run ends.
/// </summary>
internal static class WorkerPool
{
    internal const int Warmup = 0, Measure = 1, Stop = 2;

    public static RunResult Run(IProtocol protocol, IWorkload workload, RunOptions options, Action<double>? progress = null)
    {
        if (protocol is not (ITransactionProtocol or IBatchProtocol))
            throw new ArgumentException($"protocol {protocol.Name}: neither a per-transaction nor a batch protocol", nameof(protocol));
        if (options.Threads is < 1 or > 255) throw new ArgumentOutOfRangeException(nameof(options), $"threads {options.Threads}: must be 1..255");
        var control = new RunControl(options.WarmupSeconds > 0 && options.TransactionsPerWorker <= 0 ? Warmup : Measure,
                                     options.TransactionsPerWorker > 0 ? options.TransactionsPerWorker * options.Threads : long.MaxValue);
        var recorder = options.RecordHistory ? new HistoryRecorder(options.Threads) : null;
        var stats = new WorkerStats[options.Threads];
        for (int w = 0; w < options.Threads; w++) stats[w] = new WorkerStats();
        using var metrics = EngineMetrics.Default.Track(protocol, workload.Name, stats);
        var warnings = new List<string>();
        Exception? failure = null;
        var threads = new Thread[options.Threads];
        using var started = new CountdownEvent(options.Threads);
        for (int w = 0; w < options.Threads; w++)
        {
            int worker = w;
            threads[w] = new Thread(() =>
            {
                bool signalled = false;
                try
                {
                    if (options.Pin && Affinity.PinCurrentThread(Affinity.Cores[worker % Affinity.Cores.Count]) is { } warning)
                        lock (warnings) warnings.Add(warning);
                    var ctx = new TxnContext(worker, recorder);
                    var source = workload.CreateSource(worker, options.Seed);
                    ulong rng = Rng.Seed(options.Seed ^ 0x5EED, worker);
                    started.Signal();
                    signalled = true;
                    if (protocol is IBatchProtocol batch)
                        batch.Work(new BatchWorker(ctx, source, stats[worker], rng, control));
                    else
                        Work((ITransactionProtocol)protocol, source, ctx, stats[worker], options.TransactionsPerWorker, control, ref rng);
                }
                catch (Exception e)
                {
                    Interlocked.CompareExchange(ref failure, e, null);
                    if (!signalled) started.Signal(); // or the pool waits for this worker's start for ever
                    // Failed, not only Stop: a batch protocol finishes its batches after a stop,
                    // and one whose worker died mid-batch would wait for it for ever.
                    control.Fail();
                }
            }) { IsBackground = true, Name = $"contend-worker-{worker}" };
            threads[w].Start();
        }
        started.Wait();
        if (options.TransactionsPerWorker > 0)
        {
            var work = Stopwatch.StartNew();
            foreach (var t in threads) t.Join();
            return Finish(work.Elapsed.TotalSeconds);
        }
        var clock = Stopwatch.StartNew();
        WaitFor(options.WarmupSeconds, clock, 0, options.WarmupSeconds + options.Seconds, progress, ref control.Phase);
        Interlocked.CompareExchange(ref control.Phase, Measure, Warmup);
        var measured = Stopwatch.StartNew();
        WaitFor(options.Seconds, measured, options.WarmupSeconds, options.WarmupSeconds + options.Seconds, progress, ref control.Phase);
        double seconds = measured.Elapsed.TotalSeconds;
        Volatile.Write(ref control.Phase, Stop);
        foreach (var t in threads) t.Join();
        // A batch protocol finishes the batches it started after the stop, and counts their
        // commits: the time it took to do so is measured too.
        return Finish(protocol is IBatchProtocol ? measured.Elapsed.TotalSeconds : seconds);

        RunResult Finish(double measuredSeconds)
        {
            if (failure is not null) throw new InvalidOperationException($"worker failed: {failure.Message}", failure);
            var total = new WorkerStats();
            foreach (var s in stats) total.Add(s);
            return new RunResult(total, measuredSeconds, stats, recorder?.Collect(), warnings.Distinct().ToList());
        }
    }

    static void WaitFor(double seconds, Stopwatch clock, double offset, double total, Action<double>? progress, ref int phase)
    {
        while (clock.Elapsed.TotalSeconds < seconds && Volatile.Read(ref phase) != Stop)
        {
            Thread.Sleep(Math.Clamp((int)((seconds - clock.Elapsed.TotalSeconds) * 1000), 1, 100));
            progress?.Invoke((offset + Math.Min(seconds, clock.Elapsed.TotalSeconds)) / total);
        }
    }

    static void Work(ITransactionProtocol protocol, ITransactionSource source, TxnContext ctx, WorkerStats stats, long limit,
                     RunControl control, ref ulong rng)
    {
        bool measuring = false;
        for (long done = 0; limit <= 0 || done < limit; done++)
        {
            int now = Volatile.Read(ref control.Phase);
            if (now == Stop) return;
            if (now == Measure && !measuring)
            {
                stats.Reset();
                measuring = true;
            }
            var program = source.Next(ctx);
            ctx.Start(program, Interlocked.Increment(ref control.Timestamps));
            var gate = new UntilStopped(control, stats, Stopwatch.GetTimestamp());
            if (Attempts.RunToEnd(protocol, ctx, ref rng, ref gate, out _, out _) == Outcome.Aborted) return;
        }
    }

    /// <summary>A pool worker's transaction: counted from its first attempt's start, retried until the run stops.</summary>
    readonly struct UntilStopped(RunControl control, WorkerStats stats, long start) : IAttemptGate
    {
        public void Count(Outcome outcome, AbortReason reason) => stats.Count(outcome, reason, start);
        public bool Retry(TxnContext ctx) => Volatile.Read(ref control.Phase) != Stop;
    }
}
