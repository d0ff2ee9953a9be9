using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

/// <summary>
/// Inserts that fail at prepare, under concurrency, under every protocol: a key already in the
/// table (loaded, committed by another, or claimed by a racing insert), an insert body that
/// returns UserAbort, and one that throws. Each post deposits 1 into a hot account, then inserts a
/// ledger entry whose key is drawn from a small range, so that most keys collide. A refused post
/// must leave nothing: the accounts hold exactly one unit per committed post, each entry key is
/// in the table once with its committing post's amount, no lock is left held, and the history
/// is serializable.
/// </summary>
public class InsertFailureTests
{
    const int Accounts = 4, Loaded = 10, Keys = 60, Threads = 4, PostsPerThread = 400;
    static readonly TimeSpan Deadline = TimeSpan.FromMinutes(2);

    static long Amount(long key) => key * 7 + 3;

    static readonly OpBody AddOne = (row, _, _) =>
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    };

    /// <summary>args: account, entry key, what the insert body does (0: writes the entry,
    /// 1: returns UserAbort, 2: throws), and a second account the post locks for writing
    /// (so that posts conflict across accounts, and Strife leaves some residual).</summary>
    static readonly OpBody Record = (row, args, _) => args[2] switch
    {
        0 => Write(row, Amount(args[1])),
        1 => TxnProgram.UserAbort,
        _ => throw new InvalidOperationException("boom"),
    };

    static long Write(Span<byte> row, long value)
    {
        BinaryPrimitives.WriteInt64LittleEndian(row, value);
        return value;
    }

    sealed record Ledger(Database Db, Table Account, Table Entry, TxnProgram Post, TxnProgram Sweep);

    static Ledger Open(bool bodiesNeverAbort = false)
    {
        var db = new Database();
        var account = db.Create("account", sizeof(long), Accounts);
        for (int a = 0; a < Accounts; a++) account.Load(a);
        var entry = db.Create("entry", sizeof(long), Loaded + Threads * PostsPerThread + 1);
        for (int k = 0; k < Loaded; k++) Write(entry.Payload(entry.Load(k)), Amount(k));
        var post = new ProgramBuilder("post", db, 4)
            .Write("deposit", "account", KeySource.FromArg(0), AddOne)
            .Write("touch", "account", KeySource.FromArg(3), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row))
            .Insert("record", "entry", KeySource.FromArg(1), Record, "deposit");
        if (bodiesNeverAbort) post.BodiesNeverAbort();
        var sweep = new ProgramBuilder("sweep", db, 0);
        for (int a = 0; a < Accounts; a++)
        {
            int key = a;
            sweep.Write($"touch{a}", "account", KeySource.Computed((_, _) => key), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row));
        }
        return new Ledger(db, account, entry, post.Build(), sweep.Build());
    }

    /// <summary>What each post does: mostly writes its entry; every 13th returns UserAbort from its
    /// insert body, every 17th (when <paramref name="throwing"/>) throws from it.</summary>
    static long Behaviour(int i, bool throwing) => throwing && i % 17 == 16 ? 2 : i % 13 == 12 ? 1 : 0;

    /// <summary>A post's arguments: two distinct accounts (StealDB queues an op behind its own
    /// transaction's earlier op on the same row: a program must not touch a row twice there).</summary>
    static long[] Args(Random rng, long key, long behaviour)
    {
        int first = rng.Next(Accounts);
        return [first, key, behaviour, (first + 1 + rng.Next(Accounts - 1)) % Accounts];
    }

    sealed class Tally
    {
        public long Committed, Duplicates, Refused, Raised;
        public readonly HashSet<long> Committers = [];
    }

    /// <summary>Checks what a run left: one unit per committed post in the accounts, each committed
    /// key in the table once with its amount, every key a duplicate named there.</summary>
    static void CheckLedger(string protocol, Ledger l, Tally t)
    {
        long units = 0;
        for (int a = 0; a < Accounts; a++) units += BinaryPrimitives.ReadInt64LittleEndian(l.Account.Payload(l.Account.Find(a)));
        Assert.True(units == t.Committed, $"{protocol}: the accounts hold {units} units, {t.Committed} posts committed (a refused post left its deposit)");
        long present = 0;
        for (long k = 0; k < Keys; k++)
        {
            int row = l.Entry.Find(k);
            if (row < 0) continue;
            present++;
            Assert.Equal(Amount(k), BinaryPrimitives.ReadInt64LittleEndian(l.Entry.Payload(row)));
        }
        Assert.True(present == Loaded + t.Committed, $"{protocol}: {present} entries reachable, {Loaded} loaded and {t.Committed} committed");
        Assert.True(t.Duplicates > 0 && t.Committed > 0 && t.Refused > 0, $"{protocol}: {t.Committed} committed, {t.Duplicates} duplicates, {t.Refused} refused: every path must run");
    }

    public static TheoryData<string> PerTransactionProtocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable && d.Kind == ProtocolKind.PerTransaction).Select(d => d.Name)];

    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public Task DuplicateAndRefusedInsertsLeaveNothingBehind(string protocol) => RunCallers(protocol, throwing: false);

    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public Task ThrowingInsertBodiesLeaveNothingBehind(string protocol) => RunCallers(protocol, throwing: true);

    static async Task RunCallers(string protocol, bool throwing)
    {
        var l = Open();
        using var _ = l.Db;
        await using var engine = new ContendEngine(l.Db, new EngineOptions { Protocol = protocol, Workers = Threads, Pin = false, RecordHistory = true });
        var t = new Tally();
        // A lock or a claim left behind makes the others wait or retry for ever: the deadline turns that into a failure.
        using var deadline = new CancellationTokenSource(Deadline);
        var callers = Enumerable.Range(0, Threads).Select(w => Task.Run(async () =>
        {
            var rng = new Random(w);
            for (int i = 0; i < PostsPerThread; i++)
            {
                long key = rng.Next(Keys), behaviour = Behaviour(i, throwing);
                TxnOutcome outcome;
                try
                {
                    outcome = await engine.ExecuteAsync(l.Post, Args(rng, key, behaviour), deadline.Token);
                }
                catch (TransactionFailedException e) when (e.InnerException?.Message == "boom")
                {
                    Assert.Equal(2, behaviour);
                    Interlocked.Increment(ref t.Raised);
                    continue;
                }
                lock (t)
                {
                    if (outcome.Committed)
                    {
                        Assert.True(behaviour == 0 && t.Committers.Add(key), $"{protocol}: key {key} committed twice, or by a post that refuses");
                        t.Committed++;
                    }
                    else if (outcome.Reason == AbortReason.DuplicateKey)
                    {
                        Assert.Equal(Outcome.UserAborted, outcome.Outcome);
                        Assert.Equal(new DuplicateKey("post", "record", "entry", key), outcome.Duplicate);
                        t.Duplicates++;
                    }
                    else
                    {
                        Assert.Equal(new TxnOutcome(Outcome.UserAborted, AbortReason.User, outcome.Attempts), outcome);
                        Assert.Equal(1, behaviour);
                        t.Refused++;
                    }
                }
            }
        })).ToArray();
        await Task.WhenAll(callers).WaitAsync(Deadline * 2);

        Assert.Equal(Threads * PostsPerThread, t.Committed + t.Duplicates + t.Refused + t.Raised);
        Assert.True(!throwing || t.Raised > 0, $"{protocol}: no insert body threw");
        var check = SerializabilityChecker.Check(engine.History());
        Assert.True(check.Serializable, $"{protocol}: {check.Anomalies.FirstOrDefault()}");
        CheckLedger(protocol, l, t);
        // Every account's lock is free: a sweep that writes them all commits in time.
        Assert.True((await engine.ExecuteAsync(l.Sweep, [], deadline.Token)).Committed);
    }

    /// <summary>Strife through <see cref="ContendEngine"/>, programs that keep images: a duplicate
    /// ends its post as under every other protocol, in a cluster or as a residual.</summary>
    [Fact]
    public async Task StrifeEndsDuplicatesInClustersAndResiduals()
    {
        var l = Open();
        using var _ = l.Db;
        await using var engine = new ContendEngine(l.Db, StrifeEngine(recordHistory: true) with { QueueCapacity = Threads * PostsPerThread });
        var t = new Tally();
        var rng = new Random(5);
        var posts = new List<(long Key, long Behaviour, Task<TxnOutcome> Task)>();
        for (int i = 0; i < Threads * PostsPerThread; i++)
        {
            long key = rng.Next(Keys), behaviour = Behaviour(i, throwing: false);
            posts.Add((key, behaviour, engine.ExecuteAsync(l.Post, Args(rng, key, behaviour)).AsTask()));
        }
        foreach (var (key, behaviour, task) in posts)
        {
            var outcome = await task.WaitAsync(Deadline);
            if (outcome.Committed)
            {
                Assert.True(behaviour == 0 && t.Committers.Add(key), $"key {key} committed twice, or by a post that refuses");
                t.Committed++;
            }
            else if (outcome.Reason == AbortReason.DuplicateKey)
            {
                Assert.Equal(new DuplicateKey("post", "record", "entry", key), outcome.Duplicate);
                t.Duplicates++;
            }
            else
            {
                Assert.Equal((Outcome.UserAborted, AbortReason.User, 1L), (outcome.Outcome, outcome.Reason, behaviour));
                t.Refused++;
            }
        }
        var check = SerializabilityChecker.Check(engine.History());
        Assert.True(check.Serializable, check.Anomalies.FirstOrDefault()?.ToString());
        CheckLedger("Strife", l, t);
        var counts = ((StrifeProtocol)engine.Protocol).Counts;
        Assert.True(counts.Residuals > 0 && counts.Clusters > 0, $"{counts.Residuals} residuals, {counts.Clusters} clusters: both phases must run");
        Assert.True((await engine.ExecuteAsync(l.Sweep, []).AsTask().WaitAsync(Deadline)).Committed);
    }

    /// <summary>Strife's clustered attempts of a program built with BodiesNeverAbort write in place
    /// with no images, so a duplicate there cannot be undone: it is raised as the program's bug
    /// (<see cref="DuplicateKeyException"/>, naming the key), not ended as an abort.</summary>
    [Fact]
    public async Task StrifeRaisesADuplicateItCannotUndo()
    {
        var l = Open(bodiesNeverAbort: true);
        using var _ = l.Db;
        await using var engine = new ContendEngine(l.Db, new EngineOptions { Protocol = "Strife", Workers = 1, Pin = false });
        var duplicate = engine.ExecuteAsync(l.Post, [0, 3, 0, 1]).AsTask(); // key 3 was loaded
        var failed = await Assert.ThrowsAsync<EngineFailedException>(() => duplicate.WaitAsync(Deadline));
        var raised = Assert.IsType<DuplicateKeyException>(failed.InnerException);
        Assert.Equal(new DuplicateKey("post", "record", "entry", 3), raised.Duplicate);
        Assert.Contains("without before-images", raised.Message);
    }

    /// <summary>A throwing insert body in a Strife batch fails the engine (as any throwing body
    /// does), and its post is undone, cluster or residual: the accounts hold exactly the
    /// committed posts' units.</summary>
    [Fact]
    public async Task StrifeUndoesAThrowingInsertBody()
    {
        var l = Open();
        using var _ = l.Db;
        await using var engine = new ContendEngine(l.Db, StrifeEngine(recordHistory: false));
        var rng = new Random(9);
        var tasks = new List<Task<TxnOutcome>>();
        for (int i = 0; i < 1_000; i++)
            tasks.Add(engine.ExecuteAsync(l.Post, Args(rng, Loaded + i, i == 500 ? 2 : 0)).AsTask());
        await Task.WhenAny(Task.WhenAll(tasks), Task.Delay(Deadline));
        Assert.All(tasks, task => Assert.True(task.IsCompleted, $"a task was left {task.Status} by the failure"));
        Assert.Contains("boom", tasks[500].Exception!.ToString());
        long committed = tasks.Count(task => task.IsCompletedSuccessfully && task.Result.Committed);
        long units = 0;
        for (int a = 0; a < Accounts; a++) units += BinaryPrimitives.ReadInt64LittleEndian(l.Account.Payload(l.Account.Find(a)));
        Assert.Equal(committed, units);
        Assert.Equal(-1, l.Entry.Find(Loaded + 500));
    }

    static EngineOptions StrifeEngine(bool recordHistory) =>
        new() { Protocol = "Strife", Workers = 2, Pin = false, RecordHistory = recordHistory, ProtocolOptions = new StrifeOptions(BatchSize: 100, Alpha: 1) };
}
