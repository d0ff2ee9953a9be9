using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

/// <summary>
/// The engine as a service embeds it: its own threads, its own requests, a protocol chosen by
/// name. Bank transfers among a few hot accounts from more threads than cores: every protocol
/// keeps the money, commits a serializable history, counts what it did, and returns each
/// committed transaction's results to its caller.
/// </summary>
public class TransactionEngineTests
{
    internal const int Accounts = 6, Opening = 1_000;
    const int Threads = 4, TransfersPerThread = 1_500;
    static readonly TimeSpan Deadline = TimeSpan.FromMinutes(2);

    internal static readonly OpBody Withdraw = (row, args, _) =>
    {
        long balance = BinaryPrimitives.ReadInt64LittleEndian(row);
        if (balance < args[2]) return TxnProgram.UserAbort; // not enough money: the logic aborts
        BinaryPrimitives.WriteInt64LittleEndian(row, balance - args[2]);
        return balance - args[2];
    };

    internal static readonly OpBody Deposit = (row, args, _) =>
    {
        long balance = BinaryPrimitives.ReadInt64LittleEndian(row) + args[2];
        BinaryPrimitives.WriteInt64LittleEndian(row, balance);
        return balance;
    };

    static readonly OpBody ReadBalance = (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row);

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
            .Write("withdraw", "account", KeySource.FromArg(0), Withdraw)
            .Write("deposit", "account", KeySource.FromArg(1), Deposit)
            .Build();
        var audit = new ProgramBuilder("audit", db, Accounts);
        for (int a = 0; a < Accounts; a++) audit.Read($"read{a}", "account", KeySource.FromArg(a), ReadBalance);
        return (transfer, audit.Build());
    }

    sealed record Outcomes(long Committed, long Refused, long Raised, WorkerStats Totals, long Money, SerializabilityChecker.Report Check);

    /// <summary>Deposits, then throws: a bug in the body after it wrote its row.</summary>
    static readonly OpBody DepositThenExplode = (row, args, results) =>
    {
        Deposit(row, args, results);
        throw new InvalidOperationException("boom");
    };

    /// <summary>Transfers from <see cref="Threads"/> threads of their own, then an audit of every
    /// balance. With <paramref name="faultEvery"/>, every so many of a thread's transfers is one
    /// whose deposit, made runnable by its withdrawal (so StealDB's waiters may run it), throws:
    /// the caller must get the exception, and the transfer must leave nothing behind.</summary>
    static Outcomes RunBank(string protocol, int transfersPerThread = TransfersPerThread, int faultEvery = 0)
    {
        var (db, transfer, audit) = Bank();
        using var _ = db;
        var faulty = new ProgramBuilder("faulty transfer", db, 3)
            .Write("withdraw", "account", KeySource.FromArg(0), Withdraw)
            .Write("deposit", "account", KeySource.FromArg(1), DepositThenExplode, "withdraw")
            .Build();
        long raised = 0;
        using var engine = new TransactionEngine(db, protocol, Threads, recordHistory: true);
        long committed = 0, refused = 0;
        Exception? failure = null;
        using var start = new Barrier(Threads); // all at once, or a thread may be done before the next begins
        // A lock left held makes the others wait and retry for ever: the deadline turns that into
        // a failure, and a thread stuck where no retry looks at it is left behind (IsBackground).
        using var deadline = new CancellationTokenSource(Deadline);
        var threads = Enumerable.Range(0, Threads).Select(t => new Thread(() =>
        {
            try
            {
                using var session = engine.OpenSession();
                start.SignalAndWait();
                var rng = new Random(t);
                Span<long> args = stackalloc long[3];
                for (int i = 0; i < transfersPerThread; i++)
                {
                    int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                    args[0] = from; args[1] = to; args[2] = rng.Next(1, 400);
                    if (faultEvery > 0 && i % faultEvery == faultEvery - 1)
                    {
                        try
                        {
                            var ended = session.Execute(faulty, args, deadline.Token);
                            // Only a withdrawal refused for want of money ends before the deposit.
                            if (ended.Outcome != Outcome.UserAborted) throw new InvalidOperationException($"a throwing transfer ended {ended}");
                            Interlocked.Increment(ref refused);
                        }
                        catch (InvalidOperationException e) when (e.Message == "boom")
                        {
                            Interlocked.Increment(ref raised);
                        }
                        continue;
                    }
                    var outcome = session.Execute(transfer, args, deadline.Token);
                    if (outcome.Committed)
                    {
                        Interlocked.Increment(ref committed);
                        if (session.Results[0] < 0) throw new InvalidOperationException($"a withdrawal left {session.Results[0]}");
                    }
                    else if (outcome.Outcome == Outcome.UserAborted) Interlocked.Increment(ref refused);
                    else throw new InvalidOperationException($"a transfer ended {outcome}: conflict aborts are retried");
                }
            }
            catch (Exception e)
            {
                Interlocked.CompareExchange(ref failure, e, null);
            }
        }) { IsBackground = true }).ToList();
        threads.ForEach(t => t.Start());
        if (!threads.TrueForAll(t => t.Join(Deadline * 2))) throw new TimeoutException($"{protocol}: a thread is still running its transfers after {Deadline * 2}");
        if (failure is not null) throw new InvalidOperationException($"{protocol}: {failure.Message}", failure);

        var totals = engine.Totals(); // the transfers' alone
        using var auditor = engine.OpenSession();
        Assert.True(auditor.Execute(audit, [.. Enumerable.Range(0, Accounts).Select(a => (long)a)]).Committed);
        return new Outcomes(committed, refused, raised, totals, auditor.Results.ToArray().Sum(), SerializabilityChecker.Check(engine.History()));
    }

    public static TheoryData<string> PerTransactionProtocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable && d.Kind == ProtocolKind.PerTransaction).Select(d => d.Name)];

    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public void TransfersKeepTheMoneyAndCommitASerializableHistory(string protocol)
    {
        var o = RunBank(protocol);
        Assert.True(o.Committed > 0 && o.Refused > 0, $"{protocol}: {o.Committed} committed, {o.Refused} refused: both paths must run");
        Assert.Equal(Threads * TransfersPerThread, o.Committed + o.Refused);
        Assert.Equal(o.Committed, o.Totals.Commits);
        Assert.Equal(o.Refused, o.Totals.UserAborts);
        Assert.Equal((long)Accounts * Opening, o.Money);
        Assert.True(o.Check.Serializable, $"{protocol}: {o.Check.Anomalies.FirstOrDefault()}");
    }

    /// <summary>Bodies that throw among contended transfers, from threads of their own: each
    /// exception reaches the thread that submitted its transfer (under StealDB, whichever worker
    /// ran the op), and the others go on as if those transfers had never been tried.</summary>
    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public void ThrowingBodiesAmongTransfersLoseNoMoney(string protocol)
    {
        const int faultEvery = 10;
        var o = RunBank(protocol, faultEvery: faultEvery);
        Assert.True(o.Raised > 0, $"{protocol}: no throwing transfer reached its body");
        Assert.True(o.Raised <= Threads * TransfersPerThread / faultEvery, $"{protocol}: {o.Raised} exceptions raised, more than were thrown");
        Assert.Equal(Threads * TransfersPerThread, o.Committed + o.Refused + o.Raised);
        Assert.Equal(o.Committed, o.Totals.Commits);
        Assert.Equal((long)Accounts * Opening, o.Money);
        Assert.True(o.Check.Serializable, $"{protocol}: {o.Check.Anomalies.FirstOrDefault()}");
    }

    /// <summary>The twin: 2PL that releases each lock right after its op must be caught.</summary>
    [Fact]
    public void TheBrokenControlIsCaught()
    {
        var o = RunBank(ProtocolRegistry.BrokenControl, transfersPerThread: 20_000);
        Assert.False(o.Check.Serializable && o.Money == Accounts * Opening,
                     "neither the checker nor the balances caught a protocol that is not serializable");
    }

    internal static readonly OpBody Explode = (_, _, _) => throw new InvalidOperationException("boom");

    /// <summary>A body that throws is a bug in its program: the attempt is undone and its locks
    /// freed before the exception reaches the caller, so the rows stay usable.</summary>
    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public async Task AThrowingBodyIsUndoneAndItsLocksFreed(string protocol)
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        var faulty = new ProgramBuilder("faulty", db, 3)
            .Write("withdraw", "account", KeySource.FromArg(0), Withdraw)
            .Write("explode", "account", KeySource.FromArg(1), Explode, "withdraw")
            .Build();
        using var engine = new TransactionEngine(db, protocol, 1);
        using var session = engine.OpenSession();
        Assert.Equal("boom", Assert.Throws<InvalidOperationException>(() => session.Execute(faulty, [0, 1, 100])).Message);
        // A lock left held would make this wait, or abort and retry, until cancelled.
        using var cancel = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var next = Task.Run(() => session.Execute(transfer, [0, 1, 5], cancel.Token));
        Assert.True(await Task.WhenAny(next, Task.Delay(TimeSpan.FromSeconds(30))) == next, $"{protocol}: a row stayed locked");
        Assert.True((await next).Committed);
        Assert.Equal([Opening - 5, Opening + 5], session.Results.ToArray()); // the 100 withdrawn came back
    }

    [Fact]
    public void RefusesWhatItCannotServe()
    {
        var (db, transfer, _) = Bank();
        using var __ = db;
        Assert.Contains("batch protocol", Assert.Throws<ArgumentException>(() => new TransactionEngine(db, "Strife", 2)).Message);
        Assert.Contains("unknown protocol 'Nope'", Assert.Throws<ArgumentException>(() => new TransactionEngine(db, "Nope", 2)).Message);

        using var engine = new TransactionEngine(db, "NoWait", 1);
        using var session = engine.OpenSession();
        Assert.Contains("all 1 sessions are open", Assert.Throws<InvalidOperationException>(() => engine.OpenSession()).Message);
        Assert.Contains("takes 3 arguments, given 2", Assert.Throws<ArgumentException>(() => session.Execute(transfer, [0, 1])).Message);
        Assert.Contains("keeps no history", Assert.Throws<InvalidOperationException>(() => engine.History()).Message);

        session.Dispose();
        Assert.Throws<ObjectDisposedException>(() => session.Execute(transfer, [0, 1, 5]));
        using var again = engine.OpenSession(); // the slot is free once its session closed
        Assert.True(again.Execute(transfer, [0, 1, 5]).Committed);
        Assert.Equal([Opening - 5, Opening + 5], again.Results.ToArray());
    }
}
