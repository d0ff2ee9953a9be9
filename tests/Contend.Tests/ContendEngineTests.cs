using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.StealDB;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

/// <summary>
/// The engine as a service embeds it: callers on the thread pool, more of them than the engine
/// has workers, submit bank transfers among a few hot accounts and await them. Under every
/// protocol, per-transaction and batch alike, the money is kept, the history is serializable,
/// every task gets its own answer; a throwing body fails its transaction (per-transaction) or
/// the engine (batch), and nothing accepted is lost, not at disposal, not on a failure.
/// </summary>
public class ContendEngineTests
{
    internal const int Accounts = 6, Opening = 1_000;
    const int Callers = 8, TransfersPerCaller = 1_000, Window = 16;
    internal static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    static readonly ReadBody ReadBalance = (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row);

    internal static readonly OpBody Explode = (_, _, _) => throw new InvalidOperationException("boom");

    /// <summary>Deposits, then throws: a bug in the body after it wrote its row.</summary>
    static readonly OpBody DepositThenExplode = (row, args, results) =>
    {
        TwoPhaseCommit.Bank.Credit(row, args, results);
        throw new InvalidOperationException("boom");
    };

    internal static (Database Db, TxnProgram Transfer, TxnProgram Audit) Bank()
    {
        var db = new Database();
        var (transfer, audit) = OpenAccounts(db);
        return (db, transfer, audit);
    }

    /// <summary>Creates the accounts in <paramref name="db"/>, each with its opening balance, and
    /// builds the transfer and audit programs over them.</summary>
    internal static (TxnProgram Transfer, TxnProgram Audit) OpenAccounts(Database db)
    {
        var accounts = db.Create("account", sizeof(long), Accounts);
        for (int a = 0; a < Accounts; a++) BinaryPrimitives.WriteInt64LittleEndian(accounts.Payload(accounts.Load(a)), Opening);
        var transfer = new ProgramBuilder("transfer", db, 3)
            .Write("withdraw", "account", KeySource.FromArg(0), TwoPhaseCommit.Bank.Debit)
            .Write("deposit", "account", KeySource.FromArg(1), TwoPhaseCommit.Bank.Credit)
            .Build();
        var audit = new ProgramBuilder("audit", db, Accounts);
        for (int a = 0; a < Accounts; a++) audit.Read($"read{a}", "account", KeySource.FromArg(a), ReadBalance);
        return (transfer, audit.Build());
    }

    static readonly long[] EveryAccount = [.. Enumerable.Range(0, Accounts).Select(a => (long)a)];

    internal static EngineOptions Options(string protocol, int workers = 2) =>
        new() { Protocol = protocol, Workers = workers, Pin = false, Name = "bank" };

    public static TheoryData<string> Protocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable).Select(d => d.Name)];

    public static TheoryData<string> PerTransactionProtocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable && d.Kind == ProtocolKind.PerTransaction).Select(d => d.Name)];

    sealed record Outcomes(long Committed, long Refused, long Raised, WorkerStats Totals, long Money, SerializabilityChecker.Report Check);

    /// <summary>Transfers from <see cref="Callers"/> async callers, each keeping a window in flight
    /// so that the queue holds many (and a batch protocol's batches fill), then an audit. With
    /// <paramref name="faultEvery"/>, every so many transfers is one whose deposit, made runnable
    /// by its withdrawal (so StealDB's waiters may run it), throws: its caller must get the
    /// failure, and the transfer must leave nothing behind.</summary>
    static async Task<Outcomes> RunBank(EngineOptions options, int transfersPerCaller = TransfersPerCaller, int faultEvery = 0, Enum? mutants = null)
    {
        var (db, transfer, audit) = Bank();
        var faulty = new ProgramBuilder("faulty transfer", db, 3)
            .Write("withdraw", "account", KeySource.FromArg(0), TwoPhaseCommit.Bank.Debit)
            .Write("deposit", "account", KeySource.FromArg(1), DepositThenExplode, "withdraw")
            .Build();
        await using var engine = new ContendEngine(db, options with { RecordHistory = true }, mutants, taskRequests: false);
        long committed = 0, refused = 0, raised = 0;
        var callers = Enumerable.Range(0, Callers).Select(c => Task.Run(async () =>
        {
            var rng = new Random(c);
            var window = new List<(ValueTask<TxnOutcome> Task, long[] Results, bool Faulty)>(Window);
            for (int i = 0; i < transfersPerCaller; i++)
            {
                int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                bool fault = faultEvery > 0 && i % faultEvery == faultEvery - 1;
                var results = new long[2];
                window.Add((engine.ExecuteAsync(fault ? faulty : transfer, [from, to, rng.Next(1, 400)], results), results, fault));
                if (window.Count < Window && i + 1 < transfersPerCaller) continue;
                foreach (var (task, answer, isFaulty) in window)
                {
                    TxnOutcome outcome;
                    try
                    {
                        outcome = await task;
                    }
                    catch (TransactionFailedException e) when (isFaulty && e.InnerException?.Message == "boom")
                    {
                        Assert.Equal("faulty transfer", e.Program);
                        Interlocked.Increment(ref raised);
                        continue;
                    }
                    if (outcome.Committed)
                    {
                        Assert.False(isFaulty, "a throwing transfer committed");
                        Interlocked.Increment(ref committed);
                        Assert.True(answer[0] >= 0, $"a withdrawal left {answer[0]}");
                    }
                    else if (outcome.Outcome == Outcome.UserAborted) Interlocked.Increment(ref refused); // for want of money
                    else throw new InvalidOperationException($"a transfer ended {outcome}: conflict aborts are retried");
                }
                window.Clear();
            }
        })).ToArray();
        await Task.WhenAll(callers).WaitAsync(Patience * 2);

        var totals = engine.Totals(); // the transfers' alone
        var balances = new long[Accounts];
        Assert.True((await engine.ExecuteAsync(audit, EveryAccount, balances).AsTask().WaitAsync(Patience)).Committed);
        return new Outcomes(committed, refused, raised, totals, balances.Sum(), SerializabilityChecker.Check(engine.History()));
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task TransfersKeepTheMoneyAndCommitASerializableHistory(string protocol)
    {
        var o = await RunBank(Options(protocol));
        Assert.True(o.Committed > 0 && o.Refused > 0, $"{protocol}: {o.Committed} committed, {o.Refused} refused: both paths must run");
        Assert.Equal(Callers * TransfersPerCaller, o.Committed + o.Refused);
        Assert.Equal(o.Committed, o.Totals.Commits);
        Assert.Equal(o.Refused, o.Totals.UserAborts);
        Assert.Equal((long)Accounts * Opening, o.Money);
        Assert.True(o.Check.Serializable, $"{protocol}: {o.Check.Anomalies.FirstOrDefault()}");
    }

    /// <summary>Bodies that throw among contended transfers: each failure reaches the caller
    /// of its transfer (under StealDB, whichever worker ran the op), and the engine goes on as
    /// if those transfers had never been tried.</summary>
    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task ThrowingBodiesFailTheirTransactionsAndLoseNoMoney(string protocol)
    {
        const int faultEvery = 10;
        var o = await RunBank(Options(protocol), faultEvery: faultEvery);
        Assert.True(o.Raised > 0, $"{protocol}: no throwing transfer reached its body");
        Assert.True(o.Raised <= Callers * TransfersPerCaller / faultEvery, $"{protocol}: {o.Raised} failures, more than were thrown");
        Assert.Equal(Callers * TransfersPerCaller, o.Committed + o.Refused + o.Raised);
        Assert.Equal(o.Committed, o.Totals.Commits);
        Assert.Equal((long)Accounts * Opening, o.Money);
        Assert.True(o.Check.Serializable, $"{protocol}: {o.Check.Anomalies.FirstOrDefault()}");
    }

    /// <summary>A transfer from an account to itself, two ops writing one row: every protocol but StealDB's commits
    /// it; StealDB's, whose ops each hold their own row's lock and would wait for ever on their
    /// own transaction, refuse it with an error naming both ops, and go on.</summary>
    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task TwoOpsOnOneRow(string protocol)
    {
        var (db, transfer, audit) = Bank();
        await using var engine = new ContendEngine(db, Options(protocol));
        var run = engine.ExecuteAsync(transfer, [2, 2, 10]).AsTask().WaitAsync(Patience); // from account 2 to itself
        if (protocol.StartsWith("StealDB", StringComparison.Ordinal))
        {
            var refused = await Assert.ThrowsAsync<TransactionFailedException>(() => run);
            Assert.Contains("op deposit and op withdraw use the same row of table account (key 2)", refused.InnerException!.Message);
        }
        else Assert.True((await run).Committed);
        Assert.True((await engine.ExecuteAsync(transfer, [2, 3, 10]).AsTask().WaitAsync(Patience)).Committed);
        var balances = new long[Accounts];
        Assert.True((await engine.ExecuteAsync(audit, EveryAccount, balances)).Committed);
        Assert.Equal((long)Accounts * Opening, balances.Sum());
    }

    /// <summary>The fuzzer's find: under StealDB the second op of a transaction on its own row,
    /// queued behind another transaction's waiter (which waits for the first op's lock, held to
    /// the end), waited out the threshold while every caller stalled. It is refused at once now,
    /// as the op right behind its own is, and the waiter then commits.</summary>
    [Theory]
    [InlineData("StealDB")]
    [InlineData("StealDBNoSteal")]
    [InlineData("StealDBBasicWS")]
    public async Task AnOpOnItsOwnRowBehindAnotherTransactionsWaiterIsRefusedAtOnce(string protocol)
    {
        var db = new Database();
        var account = db.Create("account", sizeof(long), 1);
        account.Load(0, BitConverter.GetBytes(100L));
        using var firstRan = new SemaphoreSlim(0);
        using var waiterQueued = new SemaphoreSlim(0);
        var selfTransfer = new ProgramBuilder("selfTransfer", db, 0)
            .Write("withdraw", "account", KeySource.Computed((_, _) => 0), (row, _, _) =>
            {
                firstRan.Release();
                waiterQueued.Wait(Patience); // the other transaction queues on the row meanwhile
                return 0;
            })
            .Write("deposit", "account", KeySource.Computed((_, _) => 0), (row, _, _) => 0, "withdraw")
            .Build();
        var touch = new ProgramBuilder("touch", db, 0).Write("touch", "account", KeySource.Computed((_, _) => 0), (row, _, _) => 0).Build();
        await using var engine = new ContendEngine(db, Options(protocol, workers: 2));
        var self = engine.ExecuteAsync(selfTransfer, []).AsTask();
        Assert.True(await firstRan.WaitAsync(Patience));
        var other = engine.ExecuteAsync(touch, []).AsTask();
        await Task.Delay(200); // the touch's op queues behind the withdraw's lock
        waiterQueued.Release();
        var refused = await Assert.ThrowsAsync<TransactionFailedException>(() => self.WaitAsync(TimeSpan.FromSeconds(5)));
        Assert.Contains("op deposit and op withdraw use the same row of table account (key 0)", refused.InnerException!.Message);
        Assert.True((await other.WaitAsync(Patience)).Committed);
    }

    [Fact]
    public async Task RowsAreLoadedAndReadOutsideTransactionsOnlyBeforeAnEngineServes()
    {
        var db = new Database();
        var t = db.Create("t", sizeof(long), 4);
        t.Load(7, BitConverter.GetBytes(42L));
        var row = new byte[sizeof(long)];
        Assert.True(t.TryRead(7, row));
        Assert.Equal(42L, BitConverter.ToInt64(row));
        Assert.False(t.TryRead(8, row));
        Assert.Contains("longer than the table's rows", Assert.Throws<ArgumentException>(() => t.Load(9, new byte[9])).Message);
        Assert.Contains("key 7 loaded twice", Assert.Throws<InvalidOperationException>(() => t.Load(7, row)).Message);
        var engine = new ContendEngine(db, Options("NoWait"));
        Assert.Contains("table t: loading key 8: engine 'bank' serves this database", Assert.Throws<InvalidOperationException>(() => t.Load(8, row)).Message);
        Assert.Contains("table t: reading key 7: engine 'bank' serves this database", Assert.Throws<InvalidOperationException>(() => t.TryRead(7, row)).Message);
        await engine.DisposeAsync();
        Assert.Throws<ObjectDisposedException>(() => t.TryRead(7, row)); // the engine disposed the database
    }

    /// <summary>The twin: 2PL that releases each lock right after its op must be caught.</summary>
    [Fact]
    public Task TheBrokenControlIsCaught() =>
        AssertCaught(() => RunBank(Options(ProtocolRegistry.BrokenControl), transfersPerCaller: 10_000), "a protocol that is not serializable");

    /// <summary>A twin's anomalies need the two workers' transfers to overlap, which a run where
    /// the OS gives one worker the cores for the whole run (other tests beside it) does not
    /// show; so a twin gets up to ten runs, and the test fails if none of them catches it.</summary>
    static async Task AssertCaught(Func<Task<Outcomes>> run, string twin)
    {
        const int Runs = 10;
        for (int i = 0; i < Runs; i++)
        {
            var o = await run();
            if (!o.Check.Serializable || o.Money != Accounts * Opening) return;
        }
        Assert.Fail($"neither the checker nor the balances caught {twin}, in {Runs} runs");
    }

    /// <summary>Strife's twin that lets clusters share rows must be caught through the engine too.</summary>
    [Fact]
    public Task AllocatingAcrossClustersIsCaught() =>
        AssertCaught(() => RunBank(Options("Strife") with { ProtocolOptions = new StrifeOptions(BatchSize: 100, Alpha: 1) },
                                   transfersPerCaller: 10_000, mutants: StrifeMutants.AllocateAcross), "clusters that share rows");

    /// <summary>A body that throws is a bug in its program: the attempt is undone and its locks
    /// freed before the failure reaches the caller, so the rows stay usable.</summary>
    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public async Task AThrowingBodyIsUndoneAndItsLocksFreed(string protocol)
    {
        var (db, transfer, _) = Bank();
        var faulty = new ProgramBuilder("faulty", db, 3)
            .Write("withdraw", "account", KeySource.FromArg(0), TwoPhaseCommit.Bank.Debit)
            .Write("explode", "account", KeySource.FromArg(1), Explode, "withdraw")
            .Build();
        await using var engine = new ContendEngine(db, Options(protocol, workers: 1));
        var failed = await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(faulty, [0, 1, 100]).AsTask());
        Assert.Equal("boom", failed.InnerException!.Message);
        Assert.False(failed.Retryable);
        // A lock left held would make this wait, or abort and retry, until cancelled.
        using var cancel = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var results = new long[2];
        var next = await engine.ExecuteAsync(transfer, [0, 1, 5], results, cancel.Token).AsTask().WaitAsync(Patience);
        Assert.True(next.Committed, $"{protocol}: {next}");
        Assert.Equal([Opening - 5, Opening + 5], results); // the 100 withdrawn came back
    }

    /// <summary>Idle workers sleep, and wake for the next request; a refusal for want of money
    /// is the program's abort, with no results written.</summary>
    [Theory]
    [InlineData("NoWait"), InlineData("StealDB"), InlineData("Strife")]
    public async Task IdleWorkersWakeForTheNextRequest(string protocol)
    {
        var (db, transfer, _) = Bank();
        await using var engine = new ContendEngine(db, Options(protocol));
        var results = new long[2];
        for (int round = 0; round < 3; round++)
        {
            Assert.True((await engine.ExecuteAsync(transfer, [0, 1, 5], results).AsTask().WaitAsync(Patience)).Committed);
            Assert.Equal([Opening - 5 * (round + 1), Opening + 5 * (round + 1)], results);
            Assert.Equal(0, engine.Pending);
            await Task.Delay(50); // long enough for both workers to go to sleep
        }
        var untouched = new long[] { -7, -7 };
        var refused = await engine.ExecuteAsync(transfer, [0, 1, 10 * Opening], untouched).AsTask().WaitAsync(Patience); // more than the account holds
        Assert.Equal(new TxnOutcome(Outcome.UserAborted, AbortReason.User, 1), refused);
        Assert.Equal([-7, -7], untouched);
    }

    [Fact]
    public void BadOptionsAndArgumentsAreRefusedByName()
    {
        var (db, transfer, _) = Bank();
        Assert.Contains("BrokenEarlyRelease is the history checker's control and not serializable", Assert.Throws<ArgumentException>(() => new ContendEngine(db, Options(ProtocolRegistry.BrokenControl))).Message);
        Assert.Contains("unknown protocol 'Nope'", Assert.Throws<ArgumentException>(() => new ContendEngine(db, Options("Nope"))).Message);
        Assert.Contains("EngineOptions.Workers 0", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("NoWait", workers: 0))).Message);
        Assert.Contains("EngineOptions.QueueCapacity 0", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("NoWait") with { QueueCapacity = 0 })).Message);
        Assert.Contains("EngineOptions.WhenQueueFull", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("NoWait") with { WhenQueueFull = (WhenQueueFull)9 })).Message);
        Assert.Contains("alpha", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("Strife") with { ProtocolOptions = new StrifeOptions(Alpha: 2) })).Message);
        Assert.Contains("StealDB wait threshold 0", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("StealDBNoSteal") with { ProtocolOptions = new StealDbOptions(WaitThreshold: 0) })).Message);
        Assert.Contains("StealDB nesting bound 65", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("StealDB") with { ProtocolOptions = new StealDbOptions(MaxNesting: 65) })).Message);
        Assert.Contains("Mcs wait threshold 0", Assert.Throws<ArgumentOutOfRangeException>(() => new ContendEngine(db, Options("Mcs") with { ProtocolOptions = new McsOptions(WaitThreshold: 0) })).Message);
        Assert.Contains("protocol Mcs takes McsOptions; the setup has StealDbOptions", Assert.Throws<ArgumentException>(() => new ContendEngine(db, Options("Mcs") with { ProtocolOptions = new StealDbOptions() })).Message);
        Assert.Contains("protocol NoWait takes no options; the setup has McsOptions", Assert.Throws<ArgumentException>(() => new ContendEngine(db, Options("NoWait") with { ProtocolOptions = new McsOptions() })).Message);
        using var engine = new ContendEngine(db, Options("NoWait", workers: 1));
        Assert.Contains("takes 3 arguments, given 2", Assert.Throws<ArgumentException>(() => engine.ExecuteAsync(transfer, [0, 1])).Message);
        Assert.Contains("has 2 ops, so its results need as many slots, given 1", Assert.Throws<ArgumentException>(() => engine.ExecuteAsync(transfer, [0, 1, 5], new long[1])).Message);
        Assert.Contains("keeps no history", Assert.Throws<InvalidOperationException>(() => engine.History()).Message);
        var (other, elsewhere, _) = Bank();
        using var __ = other;
        Assert.Contains("program transfer: built against another database than engine 'bank' serves",
                        Assert.Throws<ArgumentException>(() => engine.ExecuteAsync(elsewhere, [0, 1, 5])).Message);
    }

    /// <summary>One engine per database: a second is refused, the schema is frozen while one
    /// serves it, the database refuses to be disposed under it, and the engine disposes it.</summary>
    [Fact]
    public async Task AnEngineOwnsItsDatabase()
    {
        var (db, transfer, _) = Bank();
        var accounts = db.Tables[0];
        var engine = new ContendEngine(db, Options("NoWait", workers: 1) with { Name = "first" });
        Assert.Contains("already served by engine 'first'", Assert.Throws<InvalidOperationException>(() => new ContendEngine(db, Options("Silo"))).Message);
        Assert.Contains("schema is frozen while engine 'first'", Assert.Throws<InvalidOperationException>(() => db.Create("late", 8, 4)).Message);
        Assert.Contains("dispose the engine", Assert.Throws<InvalidOperationException>(db.Dispose).Message);
        Assert.True((await engine.ExecuteAsync(transfer, [0, 1, 5])).Committed); // the refused dispose freed nothing
        await engine.DisposeAsync();
        await Assert.ThrowsAsync<EngineClosedException>(() => engine.ExecuteAsync(transfer, [0, 1, 5]).AsTask());
        Assert.Throws<ObjectDisposedException>(() => new ContendEngine(db, Options("NoWait"))); // disposed with the engine
        db.Dispose(); // again: nothing
    }

    /// <summary>A transaction submitted first that holds the worker running it, and its lock on
    /// account 0 (shared when it reads, exclusive when it writes), until <see cref="Open"/>:
    /// nothing else is taken meanwhile by a one-worker engine.</summary>
    internal sealed class HeldWorker : IDisposable
    {
        readonly ManualResetEventSlim _entered = new(), _open = new();

        /// <summary>The holding transaction's own task.</summary>
        public readonly Task<TxnOutcome> Gate;

        /// <summary>Submits the holding transaction and returns once a worker runs it.</summary>
        public HeldWorker(ContendEngine engine, Database db, bool writes = false)
        {
            long Wait()
            {
                _entered.Set();
                return _open.Wait(Patience) ? 0 : throw new TimeoutException("the gate was never opened");
            }
            var builder = new ProgramBuilder("gate", db, 1);
            var gate = (writes ? builder.Write("wait", "account", KeySource.FromArg(0), (_, _, _) => Wait())
                               : builder.Read("wait", "account", KeySource.FromArg(0), (_, _, _) => Wait())).Build();
            Gate = engine.ExecuteAsync(gate, [0]).AsTask();
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

    /// <summary>A full queue makes a request wait for room without blocking its caller; its token
    /// cancels the wait; the waiter gets in once a worker takes from the queue. One worker, held
    /// by a gate, so that nothing is taken until the test says.</summary>
    [Theory]
    [InlineData("NoWait"), InlineData("Strife")]
    public async Task AFullQueueMakesARequestWaitAndItsTokenCancelsTheWait(string protocol)
    {
        var (db, transfer, _) = Bank();
        await using var engine = new ContendEngine(db, Options(protocol, workers: 1) with { QueueCapacity = 3 });
        using var held = new HeldWorker(engine, db);

        var queued = Enumerable.Range(0, 3).Select(_ => engine.ExecuteAsync(transfer, [0, 1, 1]).AsTask()).ToList();
        Assert.Equal(3, engine.Pending);
        var waited = new long[2];
        var waiting = engine.ExecuteAsync(transfer, [1, 0, 2], waited).AsTask();
        using var cancel = new CancellationTokenSource();
        var cancelled = engine.ExecuteAsync(transfer, [1, 0, 4], cancel.Token).AsTask();
        await Task.Delay(50); // a waiter that got in anyway would show by now
        Assert.False(waiting.IsCompleted || cancelled.IsCompleted, "a request beyond the bound did not wait");
        Assert.Equal(3, engine.Pending);
        Assert.Equal(2, engine.Waited);
        cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled.WaitAsync(Patience));

        held.Open();
        Assert.All(await Task.WhenAll(queued.Append(held.Gate).Append(waiting)).WaitAsync(Patience), r => Assert.True(r.Committed));
        Assert.Equal([Opening + 3 - 2, Opening - 3 + 2], waited); // account 1, then 0; the cancelled one never ran
    }

    /// <summary>Configured to refuse, a full queue fails the request at once, retryable, and
    /// runs nothing of it.</summary>
    [Fact]
    public async Task AFullQueueRefusesWhenConfiguredTo()
    {
        var (db, transfer, audit) = Bank();
        await using var engine = new ContendEngine(db, Options("Silo", workers: 1) with { QueueCapacity = 1, WhenQueueFull = WhenQueueFull.Refuse });
        using var held = new HeldWorker(engine, db);
        var queued = engine.ExecuteAsync(transfer, [0, 1, 1]).AsTask();
        var refused = engine.ExecuteAsync(transfer, [0, 1, 100]);
        Assert.True(refused.IsFaulted, "a request beyond the bound was not refused at once");
        var full = await Assert.ThrowsAsync<EngineQueueFullException>(() => refused.AsTask());
        Assert.True(full.Retryable);
        Assert.Equal(0, engine.Waited);
        held.Open();
        Assert.True((await queued.WaitAsync(Patience)).Committed);
        var balances = new long[Accounts];
        Assert.True((await engine.ExecuteAsync(audit, EveryAccount, balances)).Committed);
        Assert.Equal(Opening - 1, balances[0]); // the refused 100 never ran
    }

    /// <summary>A request whose token is cancelled while it is queued ends cancelled, unrun,
    /// when a worker takes it (per-transaction protocols).</summary>
    [Fact]
    public async Task ARequestCancelledInTheQueueNeverRuns()
    {
        var (db, transfer, audit) = Bank();
        await using var engine = new ContendEngine(db, Options("WaitDie", workers: 1));
        using var held = new HeldWorker(engine, db);
        using var cancel = new CancellationTokenSource();
        var queued = engine.ExecuteAsync(transfer, [0, 1, 100], cancel.Token).AsTask();
        cancel.Cancel();
        held.Open();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => queued.WaitAsync(Patience));
        var balances = new long[Accounts];
        Assert.True((await engine.ExecuteAsync(audit, EveryAccount, balances)).Committed);
        Assert.Equal(Opening, balances[0]);
    }

    /// <summary>Disposal runs everything accepted first, refuses what still waits for room (it
    /// was never accepted) and everything after.</summary>
    [Theory]
    [InlineData("StealDB"), InlineData("Strife")]
    public async Task DisposeRunsEverythingAcceptedAndRefusesTheRest(string protocol)
    {
        var (db, transfer, _) = Bank();
        var engine = new ContendEngine(db, Options(protocol, workers: 1) with { QueueCapacity = 4_000 });
        // The ValueTasks themselves, not AsTask wrappers: a wrapper completes in a continuation on
        // the thread pool after the worker's answer, so it may still be pending when DisposeAsync
        // returns; the ValueTask reads its request's own state, which the answer sets.
        var tasks = Enumerable.Range(0, 4_000).Select(i => engine.ExecuteAsync(transfer, [i % Accounts, (i + 1) % Accounts, 1])).ToList();
        var waiter = engine.ExecuteAsync(transfer, [0, 1, 1]).AsTask(); // the queue may be full: then it waits for room
        await engine.DisposeAsync().AsTask().WaitAsync(Patience);
        Assert.All(tasks, t => Assert.True(t.IsCompletedSuccessfully, "a task was left unanswered by disposal"));
        long committed = 0;
        foreach (var t in tasks) committed += (await t).Committed ? 1 : 0;
        // The waiter is an AsTask wrapper, which may complete just after DisposeAsync returns.
        await Task.WhenAny(waiter, Task.Delay(Patience));
        Assert.True(waiter.IsCompleted, "a waiter for room was left waiting by disposal");
        if (waiter.IsCompletedSuccessfully) committed += (await waiter).Committed ? 1 : 0;
        else await Assert.ThrowsAsync<EngineClosedException>(() => waiter);
        Assert.Equal(committed, engine.Totals().Commits);
        await Assert.ThrowsAsync<EngineClosedException>(() => engine.ExecuteAsync(transfer, [0, 1, 1]).AsTask());
    }

    /// <summary>Under Strife, a clustered attempt of a program that declared its bodies never
    /// abort writes in place without images: a body that throws there cannot be undone, so it
    /// fails the engine: its own task and every other not yet ended fail with it, none is left
    /// waiting, and the engine refuses more.</summary>
    [Fact]
    public async Task AThrowWrittenInPlaceFailsTheEngineAndNoTaskHangs()
    {
        var (db, transfer, _) = Bank();
        var faulty = new ProgramBuilder("faulty", db, 1).Write("explode", "account", KeySource.FromArg(0), DepositThenExplode).BodiesNeverAbort().Build();
        var engine = new ContendEngine(db, Options("Strife") with { ProtocolOptions = new StrifeOptions(BatchSize: 50), QueueCapacity = 4_000 });
        // Alone in its batch, the faulty transaction is a cluster of its own: it runs in place.
        var failed = await Assert.ThrowsAsync<EngineFailedException>(() => engine.ExecuteAsync(faulty, [2]).AsTask().WaitAsync(Patience));
        Assert.Equal("boom", failed.InnerException!.Message);
        var tasks = Enumerable.Range(0, 200).Select(i => engine.ExecuteAsync(transfer, [i % Accounts, (i + 1) % Accounts, 1]).AsTask()).ToList();
        await Task.WhenAny(Task.WhenAll(tasks), Task.Delay(Patience));
        Assert.All(tasks, t => Assert.IsType<EngineFailedException>(t.Exception!.InnerException));
        await engine.DisposeAsync().AsTask().WaitAsync(Patience);
    }

    /// <summary>Under Strife, a body that throws in a batch fails its own transaction, clustered or
    /// residual, and nothing else: its attempt is undone, the batch and the engine go on.</summary>
    [Fact]
    public async Task AThrowingBodyInABatchFailsItsTransactionAlone()
    {
        var (db, transfer, audit) = Bank();
        var faulty = new ProgramBuilder("faulty", db, 1).Write("explode", "account", KeySource.FromArg(0), DepositThenExplode).Build();
        await using var engine = new ContendEngine(db, Options("Strife") with { ProtocolOptions = new StrifeOptions(BatchSize: 50), QueueCapacity = 4_000 });
        // Alone in its batch it is clustered: undone from its images.
        await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(faulty, [3]).AsTask().WaitAsync(Patience));
        var tasks = new List<(Task<TxnOutcome> Task, bool Faulty)>();
        for (int i = 0; i < 3_000; i++)
        {
            bool fault = i % 100 == 99;
            tasks.Add(((fault ? engine.ExecuteAsync(faulty, [i % Accounts]) : engine.ExecuteAsync(transfer, [i % Accounts, (i + 1) % Accounts, 1])).AsTask(), fault));
        }
        await Task.WhenAny(Task.WhenAll(tasks.Select(t => t.Task)), Task.Delay(Patience));
        foreach (var (task, fault) in tasks)
        {
            Assert.True(task.IsCompleted, $"a task was left {task.Status}");
            if (fault) Assert.Equal("boom", Assert.IsType<TransactionFailedException>(task.Exception!.InnerException).InnerException!.Message);
            else Assert.True(task.IsCompletedSuccessfully, $"a transfer failed: {task.Exception?.InnerException}");
        }
        var balances = new long[Accounts];
        Assert.True((await engine.ExecuteAsync(audit, EveryAccount, balances)).Committed);
        Assert.Equal((long)Accounts * Opening, balances.Sum()); // no deposit of a faulty transaction stayed
    }

    /// <summary>A task read twice (a caller's bug) fails the second read and leaves the pooled
    /// request to one caller: the transactions after it each get their own answer.</summary>
    [Fact]
    public async Task AResultReadTwiceFailsWithoutSharingItsRequest()
    {
        var (db, transfer, _) = Bank();
        await using var engine = new ContendEngine(db, Options("NoWait", workers: 1));
        var results = new long[2];
        var task = engine.ExecuteAsync(transfer, [0, 1, 5], results);
        Assert.True((await task).Committed);
        Assert.Contains("awaited twice", Assert.Throws<InvalidOperationException>(() => task.Result).Message);
        var first = new long[2];
        var second = new long[2];
        var a = engine.ExecuteAsync(transfer, [0, 1, 1], first);
        var b = engine.ExecuteAsync(transfer, [1, 0, 2], second);
        Assert.True((await a).Committed && (await b).Committed);
        Assert.Equal([Opening - 6, Opening + 6], first);
        Assert.Equal([Opening + 4, Opening - 4], second);
    }

    /// <summary>The caller's execution context does not reach the bodies, which run on the
    /// engine's workers: an AsyncLocal the caller set is not set there (as documented).</summary>
    [Fact]
    public async Task TheCallersExecutionContextDoesNotFlowToTheBodies()
    {
        var ambient = new AsyncLocal<string?>();
        string? seen = "not run";
        var db = new Database();
        db.Create("account", sizeof(long), 1).Load(0);
        var probe = new ProgramBuilder("probe", db, 1).Read("look", "account", KeySource.FromArg(0), (_, _, _) =>
        {
            seen = ambient.Value;
            return 0;
        }).Build();
        await using var engine = new ContendEngine(db, Options("NoWait", workers: 1));
        ambient.Value = "caller";
        Assert.True((await engine.ExecuteAsync(probe, [0])).Committed);
        Assert.Null(seen);
        Assert.Equal("caller", ambient.Value); // the continuation is the caller's again
    }
}
