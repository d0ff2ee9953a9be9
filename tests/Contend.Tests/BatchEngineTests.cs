using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using static Contend.Tests.TransactionEngineTests;

namespace Contend.Tests;

/// <summary>
/// Strife as a service embeds it (<see cref="BatchEngine"/>): threads of the service submit bank
/// transfers among a few hot accounts and await them, the engine's workers batch and run them.
/// The money is kept, the history is serializable, every task gets its answer, and nothing
/// submitted is lost: not at Dispose, not when a program's body throws.
/// </summary>
public class BatchEngineTests
{
    const int Submitters = 4, TransfersPerSubmitter = 2_000, Window = 64;
    static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    sealed record Outcomes(long Committed, long Refused, WorkerStats Totals, long Money, SerializabilityChecker.Report Check, StrifeCounts Strife);

    /// <summary>Transfers from <see cref="Submitters"/> threads, each keeping a window of them in
    /// flight so that batches hold many; then an audit of every balance.</summary>
    static Outcomes RunBank(StrifeMutants mutants = StrifeMutants.None, int transfersPerSubmitter = TransfersPerSubmitter)
    {
        var (db, transfer, audit) = Bank();
        using var _ = db;
        using var engine = new BatchEngine(db, "Strife", workers: 2, new StrifeOptions(BatchSize: 100, Alpha: 1), recordHistory: true, "bank", pin: false, maxPending: null, mutants);
        long committed = 0, refused = 0;
        Exception? failure = null;
        var threads = Enumerable.Range(0, Submitters).Select(t => new Thread(() =>
        {
            try
            {
                var rng = new Random(t);
                var window = new List<Task<TxnResult>>(Window);
                for (int i = 0; i < transfersPerSubmitter; i++)
                {
                    int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                    window.Add(engine.SubmitAsync(transfer, [from, to, rng.Next(1, 400)]));
                    if (window.Count < Window && i + 1 < transfersPerSubmitter) continue;
                    foreach (var task in window)
                    {
                        var result = task.WaitAsync(Patience).GetAwaiter().GetResult();
                        if (result.Committed)
                        {
                            Interlocked.Increment(ref committed);
                            if (result.Results[0] < 0) throw new InvalidOperationException($"a withdrawal left {result.Results[0]}");
                        }
                        else if (result.Outcome.Outcome == Outcome.UserAborted) Interlocked.Increment(ref refused);
                        else throw new InvalidOperationException($"a transfer ended {result.Outcome}: conflict aborts are retried");
                    }
                    window.Clear();
                }
            }
            catch (Exception e)
            {
                Interlocked.CompareExchange(ref failure, e, null);
            }
        })).ToList();
        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());
        if (failure is not null) throw new InvalidOperationException(failure.Message, failure);

        var totals = engine.Totals(); // the transfers' alone
        var balances = engine.SubmitAsync(audit, [.. Enumerable.Range(0, Accounts).Select(a => (long)a)]).WaitAsync(Patience).GetAwaiter().GetResult();
        Assert.True(balances.Committed);
        return new Outcomes(committed, refused, totals, balances.Results.Sum(), SerializabilityChecker.Check(engine.History()),
                            ((StrifeProtocol)engine.Protocol).Counts);
    }

    /// <summary>Submits and drops the task: for what SubmitAsync refuses at once, before any task.</summary>
    static void SubmitOnly(BatchEngine engine, TxnProgram program, long[] args) => _ = engine.SubmitAsync(program, args);

    [Fact]
    public void TransfersKeepTheMoneyAndCommitASerializableHistory()
    {
        var o = RunBank();
        Assert.True(o.Committed > 0 && o.Refused > 0, $"{o.Committed} committed, {o.Refused} refused: both paths must run");
        Assert.Equal(Submitters * TransfersPerSubmitter, o.Committed + o.Refused);
        Assert.Equal(o.Committed, o.Totals.Commits);
        Assert.Equal(o.Refused, o.Totals.UserAborts);
        Assert.Equal((long)Accounts * Opening, o.Money);
        Assert.True(o.Check.Serializable, o.Check.Anomalies.FirstOrDefault()?.ToString());
        // Batches of more than one, and both of Strife's phases at work: alpha 1 joins two clusters
        // only when at least |T| / (cluster pairs) transactions lie across them, so some stay residual
        // (about 5,000 of the 8,000 in five runs here; the default alpha merges nearly all of them).
        Assert.True(o.Strife.Transactions > 2 * o.Strife.Batches, $"{o.Strife.Transactions} transactions in {o.Strife.Batches} batches");
        Assert.True(o.Strife.Residuals > 0 && o.Strife.Clusters > 0, $"{o.Strife.Residuals} residuals, {o.Strife.Clusters} clusters");
    }

    /// <summary>The twin: an analysis that lets a transaction join one of two clusters its rows lie
    /// in (<see cref="StrifeMutants.AllocateAcross"/>) runs conflicting transactions at once, with no
    /// locks; the balances or the checker must see it.</summary>
    [Fact]
    public void AllocatingAcrossClustersIsCaught()
    {
        var o = RunBank(StrifeMutants.AllocateAcross, transfersPerSubmitter: 20_000);
        Assert.False(o.Check.Serializable && o.Money == Accounts * Opening,
                     "neither the checker nor the balances caught clusters that share rows");
    }

    [Fact]
    public void DisposeRunsEverythingSubmittedFirst()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        var engine = new BatchEngine(db, "Strife", workers: 2);
        var tasks = Enumerable.Range(0, 5_000).Select(i => engine.SubmitAsync(transfer, [i % Accounts, (i + 1) % Accounts, 1])).ToList();
        engine.Dispose();
        Assert.All(tasks, t => Assert.True(t.IsCompletedSuccessfully, $"a task was left {t.Status} by Dispose"));
        Assert.Equal(tasks.Count(t => t.Result.Committed), engine.Totals().Commits);
        Assert.Throws<ObjectDisposedException>(() => SubmitOnly(engine, transfer, [0, 1, 1])); // refused at once, not in the task
    }

    [Fact]
    public async Task IdleWorkersWakeForTheNextSubmission()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        using var engine = new BatchEngine(db, "Strife", workers: 2);
        for (int round = 0; round < 3; round++)
        {
            var result = await engine.SubmitAsync(transfer, [0, 1, 5]).WaitAsync(Patience);
            Assert.True(result.Committed);
            Assert.Equal([Opening - 5 * (round + 1), Opening + 5 * (round + 1)], result.Results);
            Assert.Equal(0, engine.Pending);
            await Task.Delay(50); // long enough for both workers to go to sleep
        }
        var refused = await engine.SubmitAsync(transfer, [0, 1, 10 * Opening]).WaitAsync(Patience); // more than the account holds
        Assert.Equal(new TxnOutcome(Outcome.UserAborted, AbortReason.User, 1), refused.Outcome);
        Assert.Empty(refused.Results);
    }

    [Fact]
    public void RefusesWhatItCannotServe()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        Assert.Contains("per-transaction protocol", Assert.Throws<ArgumentException>(() => new BatchEngine(db, "NoWait", 2)).Message);
        Assert.Contains("unknown protocol 'Nope'", Assert.Throws<ArgumentException>(() => new BatchEngine(db, "Nope", 2)).Message);
        Assert.Contains("workers 0", Assert.Throws<ArgumentOutOfRangeException>(() => new BatchEngine(db, "Strife", 0)).Message);
        Assert.Contains("alpha", Assert.Throws<ArgumentOutOfRangeException>(() => new BatchEngine(db, "Strife", 2, new StrifeOptions(Alpha: 2))).Message);
        Assert.Contains("maxPending 0", Assert.Throws<ArgumentOutOfRangeException>(() => new BatchEngine(db, "Strife", 2, maxPending: 0)).Message);
        using var engine = new BatchEngine(db, "Strife", 1);
        Assert.Contains("takes 3 arguments, given 2", Assert.Throws<ArgumentException>(() => SubmitOnly(engine, transfer, [0, 1])).Message);
        Assert.Contains("keeps no history", Assert.Throws<InvalidOperationException>(() => engine.History()).Message);
    }

    /// <summary>A transaction submitted first that holds the worker running it until
    /// <see cref="Open"/>: nothing else is drawn meanwhile by a one-worker engine, nor past the
    /// next batch by a two-worker one.</summary>
    sealed class HeldWorker : IDisposable
    {
        readonly ManualResetEventSlim _entered = new(), _open = new();

        /// <summary>The holding transaction's own task.</summary>
        public readonly Task<TxnResult> Gate;

        /// <summary>Submits the holding transaction and returns once a worker runs it.</summary>
        public HeldWorker(BatchEngine engine, Database db)
        {
            var gate = new ProgramBuilder("gate", db, 1).Read("wait", "account", KeySource.FromArg(0), (_, _, _) =>
            {
                _entered.Set();
                return _open.Wait(Patience) ? 0 : throw new TimeoutException("the gate was never opened");
            }).Build();
            Gate = engine.SubmitAsync(gate, [0]);
            Assert.True(_entered.Wait(Patience), "the gate's transaction never ran");
        }

        public void Open() => _open.Set();

        /// <summary>Opens the gate, and lets its transaction end before the events go.</summary>
        public void Dispose()
        {
            _open.Set();
            Gate.ContinueWith(_ => { }, TaskScheduler.Default).Wait(Patience);
            _entered.Dispose();
            _open.Dispose();
        }
    }

    /// <summary>A full backlog makes a submission wait for room without blocking its caller; its
    /// token cancels the wait; and the waiter gets in once a batch draws from the backlog. One
    /// worker, held by a gate, so that nothing is drawn until the test says.</summary>
    [Fact]
    public async Task AFullBacklogMakesASubmissionWaitAndItsTokenCancelsTheWait()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        using var engine = new BatchEngine(db, "Strife", workers: 1, maxPending: 3);
        using var held = new HeldWorker(engine, db);

        var queued = Enumerable.Range(0, 3).Select(_ => engine.SubmitAsync(transfer, [0, 1, 1])).ToList();
        Assert.Equal(3, engine.Pending);
        var waiting = engine.SubmitAsync(transfer, [1, 0, 2]);
        using var cancel = new CancellationTokenSource();
        var cancelled = engine.SubmitAsync(transfer, [1, 0, 4], cancel.Token);
        await Task.Delay(50); // a waiter that got in anyway would show by now
        Assert.False(waiting.IsCompleted || cancelled.IsCompleted, "a submission beyond the bound did not wait");
        Assert.Equal(3, engine.Pending);
        cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled.WaitAsync(Patience));
        Assert.True(cancelled.IsCanceled);

        held.Open();
        Assert.All(await Task.WhenAll(queued.Append(held.Gate).Append(waiting)).WaitAsync(Patience), r => Assert.True(r.Committed));
        var waited = await waiting;
        Assert.Equal([Opening + 3 - 2, Opening - 3 + 2], waited.Results); // account 1, then 0; the cancelled one never ran
    }

    /// <summary>Dispose refuses what still waits for room (it was never accepted) and runs what was
    /// queued; an engine that fails refuses its waiters with the failure.</summary>
    [Fact]
    public async Task WaitersForRoomAreRefusedWhenTheEngineCloses()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        var engine = new BatchEngine(db, "Strife", workers: 1, maxPending: 1);
        using var held = new HeldWorker(engine, db);
        var queued = engine.SubmitAsync(transfer, [0, 1, 1]);
        var waiting = engine.SubmitAsync(transfer, [0, 1, 1]);
        var disposed = Task.Run(engine.Dispose);
        await Assert.ThrowsAsync<ObjectDisposedException>(() => waiting.WaitAsync(Patience));
        held.Open();
        await disposed.WaitAsync(Patience);
        Assert.True((await held.Gate).Committed && (await queued).Committed);

        var (db2, transfer2, _) = Bank();
        using var ___ = db2;
        var failing = new BatchEngine(db2, "Strife", workers: 1, maxPending: 1);
        using var held2 = new HeldWorker(failing, db2);
        var faulty = failing.SubmitAsync(Faulty(db2), [2]);
        var waiter = failing.SubmitAsync(transfer2, [0, 1, 1]);
        held2.Open();
        var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => waiter.WaitAsync(Patience));
        Assert.Contains("boom", refused.Message);
        await Assert.ThrowsAsync<InvalidOperationException>(() => faulty.WaitAsync(Patience));
        await Task.Run(failing.Dispose).WaitAsync(Patience);
    }

    /// <summary>One op whose body throws.</summary>
    static TxnProgram Faulty(Database db) => new ProgramBuilder("faulty", db, 1).Write("explode", "account", KeySource.FromArg(0), Explode).Build();

    /// <summary>A body that throws fails its engine: its own task and every other not yet ended
    /// fail with it, none is left waiting, and the engine refuses more.</summary>
    [Fact]
    public async Task AThrowingBodyFailsEveryTransactionNotEndedAndNoneHangs()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        var faulty = Faulty(db);
        var engine = new BatchEngine(db, "Strife", workers: 2, new StrifeOptions(BatchSize: 50));
        // Every transaction is submitted before the faulty one can run: once it has, the engine
        // refuses submissions, and a fast worker could get there while this thread still submits.
        using var held = new HeldWorker(engine, db);
        var tasks = new List<Task<TxnResult>>();
        for (int i = 0; i < 3_000; i++)
        {
            tasks.Add(i == 1_000 ? engine.SubmitAsync(faulty, [2]) : engine.SubmitAsync(transfer, [i % Accounts, (i + 1) % Accounts, 1]));
        }
        held.Open();
        Assert.True((await held.Gate.WaitAsync(Patience)).Committed);
        await Task.WhenAny(Task.WhenAll(tasks), Task.Delay(Patience));
        Assert.All(tasks, t => Assert.True(t.IsCompleted, $"a task was left {t.Status} by the failure"));
        var boom = Assert.IsType<InvalidOperationException>(tasks[1_000].Exception!.InnerException);
        Assert.Equal("boom", boom.InnerException!.Message);
        Assert.True(tasks.Skip(1_001).Any(t => t.IsFaulted), "no transaction after the faulty one failed with the engine");
        Assert.Contains("boom", Assert.Throws<InvalidOperationException>(() => SubmitOnly(engine, transfer, [0, 1, 1])).Message);
        var disposed = Task.Run(engine.Dispose);
        Assert.True(await Task.WhenAny(disposed, Task.Delay(Patience)) == disposed, "Dispose did not return after the failure");
    }

    /// <summary>A workload whose 500th transaction's body throws.</summary>
    sealed class ExplodingWorkload : IWorkload
    {
        TxnProgram _transfer = null!, _faulty = null!;
        int _drawn;

        public string Name => "exploding";
        public string Describe() => "bank transfers, one of which throws";

        public void Load(Database db)
        {
            _transfer = OpenAccounts(db).Transfer;
            _faulty = Faulty(db);
        }

        public ITransactionSource CreateSource(int worker, ulong seed) => new Source(this);

        sealed class Source(ExplodingWorkload w) : ITransactionSource
        {
            public TxnProgram Next(TxnContext ctx)
            {
                int n = Interlocked.Increment(ref w._drawn);
                ctx.Args[0] = n % Accounts;
                ctx.Args[1] = (n + 1) % Accounts;
                ctx.Args[2] = 1;
                return n == 500 ? w._faulty : w._transfer;
            }
        }
    }

    /// <summary>Before <see cref="BatchWorker.Failed"/>, a Strife run whose worker died mid-batch
    /// waited for that batch for ever: the pool must report the failure instead.</summary>
    [Fact]
    public async Task APoolRunWhoseBodyThrowsEndsWithTheFailure()
    {
        var workload = new ExplodingWorkload();
        using var db = new Database();
        workload.Load(db);
        var strife = ProtocolRegistry.Create("Strife", new ProtocolSetup(db, 2, new StrifeOptions(BatchSize: 50)));
        var run = Task.Run(() => WorkerPool.Run(strife, workload, new RunOptions(Threads: 2, Seconds: 0, Pin: false, TransactionsPerWorker: 2_000)));
        Assert.True(await Task.WhenAny(run, Task.Delay(Patience)) == run, "the run did not end after its worker failed");
        var failed = Assert.IsType<InvalidOperationException>(run.Exception!.InnerException);
        Assert.Contains("boom", failed.Message);
    }
}
