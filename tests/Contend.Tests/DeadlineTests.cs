using System.Diagnostics;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

/// <summary>
/// Deadlines and cancellation reach a transaction wherever it waits: in the queue, in a lock
/// wait of every protocol that waits for locks, before a retry. A transaction that gives up is
/// undone like any abort: once the lock's holder ends, the row is free and its money kept.
/// </summary>
public class DeadlineTests
{
    /// <summary>The protocols whose transactions wait for a held lock: WaitsFor and Ordered wait
    /// until it is released (nothing else ends those waits), WaitDie as the older one (here the
    /// younger dies and retries, and the retry gives up), and the queue locks, Mcs and StealDB,
    /// whose waiter gives up at once but whose node stays queued until the lock ahead is
    /// released (an MCS waiter cannot leave the queue; StealDB.tla's WaiterTimeout leaves the
    /// node to the owner's release at the head), so their answer comes with that release.</summary>
    public static TheoryData<string> Waiting() => ["WaitsFor", "Ordered", "WaitDie", "Mcs", "StealDB"];

    static bool AnswersAtOnce(string protocol) => protocol is "WaitsFor" or "Ordered" or "WaitDie";

    static async Task<(ContendEngine Engine, TxnProgram Transfer, TxnProgram Audit, ContendEngineTests.HeldWorker Holder)> Held(string protocol, TimeSpan? deadline, int workers = 2)
    {
        var (db, transfer, audit) = ContendEngineTests.Bank();
        var engine = new ContendEngine(db, ContendEngineTests.Options(protocol, workers) with { Deadline = deadline });
        await Task.Yield();
        return (engine, transfer, audit, new ContendEngineTests.HeldWorker(engine, db, writes: true));
    }

    /// <summary>Gives the waiter time past its deadline or its cancellation, then, unless the
    /// protocol answers at once, releases the lock: a wait that had not given up would then
    /// take the lock and commit.</summary>
    static async Task<T> Outlast<T>(string protocol, ContendEngineTests.HeldWorker holder, Task<T> waiting)
    {
        if (AnswersAtOnce(protocol)) return await waiting.WaitAsync(ContendEngineTests.Patience);
        await Task.Delay(600);
        holder.Open();
        return await waiting.WaitAsync(ContendEngineTests.Patience);
    }

    [Theory]
    [MemberData(nameof(Waiting))]
    public async Task ADeadlineEndsALockWait(string protocol)
    {
        var (engine, transfer, audit, holder) = await Held(protocol, TimeSpan.FromMilliseconds(200));
        await using (engine)
        using (holder)
        {
            var clock = Stopwatch.StartNew();
            var outcome = await Outlast(protocol, holder, engine.ExecuteAsync(transfer, [0, 1, 10]).AsTask());
            Assert.Equal(new TxnOutcome(Outcome.Aborted, AbortReason.Deadline, outcome.Attempts), outcome);
            Assert.True(clock.Elapsed >= TimeSpan.FromMilliseconds(200), $"gave up after {clock.Elapsed}, before its deadline");
            if (protocol is "WaitsFor" or "Ordered") // nothing but the deadline ends these waits
            {
                Assert.Equal(1, outcome.Attempts);
                Assert.Equal(1, engine.Totals().Aborts[(int)AbortReason.Deadline]);
            }
            holder.Open();
            Assert.True((await holder.Gate).Committed);
            // Undone: the row is free, and the money is as it was.
            var balances = new long[ContendEngineTests.Accounts];
            Assert.True((await engine.ExecuteAsync(transfer, [0, 1, 10]).AsTask().WaitAsync(ContendEngineTests.Patience)).Committed);
            Assert.True((await engine.ExecuteAsync(audit, [.. Enumerable.Range(0, ContendEngineTests.Accounts).Select(a => (long)a)], balances)).Committed);
            Assert.Equal(ContendEngineTests.Opening - 10, balances[0]);
            Assert.Equal((long)ContendEngineTests.Accounts * ContendEngineTests.Opening, balances.Sum());
        }
    }

    [Theory]
    [MemberData(nameof(Waiting))]
    public async Task ACancellationEndsALockWait(string protocol)
    {
        var (engine, transfer, _, holder) = await Held(protocol, deadline: null);
        await using (engine)
        using (holder)
        {
            using var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(200));
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => Outlast(protocol, holder, engine.ExecuteAsync(transfer, [0, 1, 10], cancel.Token).AsTask()));
            holder.Open();
            Assert.True((await holder.Gate).Committed);
            Assert.True((await engine.ExecuteAsync(transfer, [0, 1, 10]).AsTask().WaitAsync(ContendEngineTests.Patience)).Committed);
        }
    }

    /// <summary>Queued behind a busy worker past its deadline: it ends unrun.</summary>
    [Theory]
    [InlineData("NoWait"), InlineData("StealDB")]
    public async Task ADeadlinePassedInTheQueueEndsTheTransactionUnrun(string protocol)
    {
        var (engine, transfer, _, holder) = await Held(protocol, TimeSpan.FromMilliseconds(100), workers: 1);
        await using (engine)
        using (holder)
        {
            var queued = engine.ExecuteAsync(transfer, [2, 3, 10]).AsTask();
            await Task.Delay(300);
            holder.Open();
            Assert.Equal(new TxnOutcome(Outcome.Aborted, AbortReason.Deadline, 0), await queued.WaitAsync(ContendEngineTests.Patience));
        }
    }

    [Fact]
    public async Task AttemptsRunOutAtMaxAttempts()
    {
        var (db, transfer, _) = ContendEngineTests.Bank();
        await using var engine = new ContendEngine(db, ContendEngineTests.Options("NoWait") with { MaxAttempts = 3 });
        using var holder = new ContendEngineTests.HeldWorker(engine, db, writes: true);
        var outcome = await engine.ExecuteAsync(transfer, [0, 1, 10]).AsTask().WaitAsync(ContendEngineTests.Patience);
        Assert.Equal(new TxnOutcome(Outcome.Aborted, AbortReason.LockBusy, 3), outcome);
        Assert.False(outcome.Committed);
    }

    /// <summary>Mcs's wait threshold decides whether a wait for a lock held elsewhere ends in a
    /// WaitTimeout abort: after one round it does, and, the lock held past any wait of a
    /// threshold too large to reach, it does not. One attempt allowed, so that the outcome is
    /// the first attempt's. The timed-out waiter's node stays queued until the holder releases
    /// (C2), so its answer comes with that release, as in <see cref="Outlast"/>.</summary>
    [Theory]
    [InlineData(1, false)]
    [InlineData(int.MaxValue, true)]
    public async Task McsWaitThresholdDecidesWhetherAWaitTimesOut(int threshold, bool commits)
    {
        var (db, transfer, _) = ContendEngineTests.Bank();
        await using var engine = new ContendEngine(db, ContendEngineTests.Options("Mcs") with
        {
            ProtocolOptions = new McsOptions(WaitThreshold: threshold), MaxAttempts = 1,
        });
        using var holder = new ContendEngineTests.HeldWorker(engine, db, writes: true);
        var outcome = await Outlast("Mcs", holder, engine.ExecuteAsync(transfer, [0, 1, 10]).AsTask());
        Assert.Equal(commits ? new TxnOutcome(Outcome.Committed, AbortReason.None, 1) : new TxnOutcome(Outcome.Aborted, AbortReason.WaitTimeout, 1), outcome);
        Assert.Equal(commits ? 0 : 1, engine.Totals().Aborts[(int)AbortReason.WaitTimeout]);
    }

    [Fact]
    public void DeadlineAndAttemptsOutOfRangeAreRefusedByName()
    {
        var (db, _, _) = ContendEngineTests.Bank();
        Assert.Contains("EngineOptions.Deadline", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, ContendEngineTests.Options("NoWait") with { Deadline = TimeSpan.Zero })).Message);
        Assert.Contains("EngineOptions.MaxAttempts 0", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, ContendEngineTests.Options("NoWait") with { MaxAttempts = 0 })).Message);
    }
}
