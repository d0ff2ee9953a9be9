using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests.ReactDB;

/// <summary>
/// ReactDB in the engine, against the properties specs/ReactDB/ReactDB.tla checks: every root
/// ends (with one executor per container too, where the paper's design deadlocks), the committed
/// history is serializable and the money is all there, a sub-transaction runs exactly once and
/// completes before its root commits, the conservative abort hits a root whose tree puts two
/// threads in one context and nothing else, and an abort (the logic's, a throw, a missing key)
/// writes nothing and leaves no lock behind.
/// </summary>
public class ReactDbTests
{
    const int Rows = 4;
    const long Initial = 1_000;
    static readonly TimeSpan Deadline = TimeSpan.FromMinutes(1);

    /// <summary>Reactors acct0..acct(n-1), acct i on container i % containers, each with a
    /// relation "balance" of <see cref="Rows"/> rows holding <see cref="Initial"/>, in <paramref name="into"/> or a new database.</summary>
    internal static ReactorDeployment Bank(int reactors, int containers, Database? into = null)
    {
        var db = into ?? new Database();
        var payload = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(payload, Initial);
        for (int i = 0; i < reactors; i++)
        {
            var table = db.Create($"acct{i}.balance", 8, Rows * 2);
            for (int k = 0; k < Rows; k++) table.Load(k, payload);
        }
        var deployment = new ReactorDeployment(db, containers);
        for (int i = 0; i < reactors; i++) deployment.Add($"acct{i}", i % containers, "balance");
        return deployment;
    }

    static long Value(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    static long Add(Span<byte> row, long amount)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + amount;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }

    /// <summary>args: row, amount. Adds the amount to the row of the reactor it runs on.</summary>
    internal static readonly ReactorFunction Deposit = new("deposit", (call, args) =>
    {
        long amount = args.Span[1];
        return ValueTask.FromResult(call.Write(call.Reactor.Relation("balance"), args.Span[0], row => Add(row, amount)));
    });

    /// <summary>args: row, amount, target reactor, target row. Takes the amount from this reactor's
    /// row and deposits it at the target (a call: synchronous in this container, else queued).</summary>
    internal static ReactorFunction Transfer(ReactorDeployment deployment) => new("transfer", async (call, args) =>
    {
        long amount = args.Span[1];
        call.Write(call.Reactor.Relation("balance"), args.Span[0], row => Add(row, -amount));
        var target = deployment.Reactors[(int)args.Span[2]];
        return await call.CallAsync(target, Deposit, new long[] { args.Span[3], amount });
    });

    /// <summary>Reads every row of every reactor, through one root per reactor: the committed total.</summary>
    static readonly ReactorFunction SumRows = new("sum", (call, _) =>
    {
        long sum = 0;
        for (int k = 0; k < Rows; k++) sum += call.Read(call.Reactor.Relation("balance"), k, Value);
        return ValueTask.FromResult(sum);
    });

    static async Task<long> Total(ReactDbEngine engine)
    {
        long total = 0;
        foreach (var reactor in engine.Deployment.Reactors)
        {
            var r = await engine.ExecuteAsync(reactor, SumRows, Array.Empty<long>());
            Assert.True(r.Outcome.Committed);
            total += r.Value;
        }
        return total;
    }

    static async Task<long> Row(ReactDbEngine engine, Reactor reactor, long key)
    {
        var read = new ReactorFunction("read", (call, args) => ValueTask.FromResult(call.Read(call.Reactor.Relation("balance"), args.Span[0], Value)));
        var r = await engine.ExecuteAsync(reactor, read, new long[] { key });
        Assert.True(r.Outcome.Committed);
        return r.Value;
    }

    [Theory]
    [InlineData(3, 1, 6)] // async deployment: a container per pair of reactors, one executor each
    [InlineData(1, 2, 6)] // sync deployment: one container, two executors, every call synchronous
    [InlineData(2, 2, 4)]
    public async Task ConcurrentTransfersKeepTheMoneyAndCommitSerializably(int containers, int executors, int reactors)
    {
        var deployment = Bank(reactors, containers);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = executors, RecordHistory = true });
        var transfer = Transfer(deployment);
        const int Clients = 4, PerClient = 300;
        var clients = Enumerable.Range(0, Clients).Select(c => Task.Run(async () =>
        {
            var rng = new Random(c);
            for (int i = 0; i < PerClient; i++)
            {
                int from = rng.Next(reactors), to = rng.Next(reactors);
                var r = await engine.ExecuteAsync(deployment.Reactors[from], transfer, new long[] { rng.Next(Rows), 1 + rng.Next(5), to, rng.Next(Rows) });
                Assert.True(r.Outcome.Committed, $"transfer {c}/{i}: {r.Outcome}");
            }
        })).ToArray();
        await Task.WhenAll(clients).WaitAsync(Deadline);

        Assert.Equal(Clients * PerClient, engine.Counts().Committed);
        Assert.Equal(reactors * Rows * Initial, await Total(engine));
        var history = engine.History();
        var report = SerializabilityChecker.Check(history);
        Assert.True(report.Serializable, string.Join("; ", report.Anomalies.Select(a => a.Description)));
        Assert.True(report.Transactions >= Clients * PerClient, $"{report.Transactions} history entries for {Clients * PerClient} transfers");
    }

    /// <summary>ReactDBPaperPoolOf1's workload: T on container 0 and U on container 1, one
    /// executor each, each calling into the other's container while it waits. The paper's
    /// executor blocks its only thread in each container; here both end.</summary>
    [Fact]
    public async Task RootsThatCallIntoEachOthersOneThreadContainerBothCommit()
    {
        var deployment = Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 1, RecordHistory = true });
        var tStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var uStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        ReactorFunction Crossing(TaskCompletionSource mine, TaskCompletionSource theirs, Reactor other) => new("crossing", async (call, _) =>
        {
            mine.TrySetResult();
            await theirs.Task; // both roots are now in their logic, each on its container's one thread
            return await call.CallAsync(other, Deposit, new long[] { 0, 1 });
        });
        var t = engine.ExecuteAsync(deployment.Reactors[0], Crossing(tStarted, uStarted, deployment.Reactors[1]), Array.Empty<long>()).AsTask();
        var u = engine.ExecuteAsync(deployment.Reactors[1], Crossing(uStarted, tStarted, deployment.Reactors[0]), Array.Empty<long>()).AsTask();
        var results = await Task.WhenAll(t, u).WaitAsync(Deadline);

        Assert.All(results, r => Assert.True(r.Outcome.Committed));
        Assert.Equal(Initial + 1, await Row(engine, deployment.Reactors[0], 0));
        Assert.Equal(Initial + 1, await Row(engine, deployment.Reactors[1], 0));
    }

    /// <summary>The conservative abort (D2): two asynchronous children of one root on one container
    /// share the root's context there; the second is dequeued while the first holds it, and the
    /// whole root aborts, writing nothing.</summary>
    [Fact]
    public async Task TwoAsyncChildrenInOneContextTakeTheConservativeAbortAndWriteNothing()
    {
        var deployment = Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 2, MaxAttempts = 1 });
        var gate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var holding = new ReactorFunction("holding", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 1, row => Add(row, 5));
            await gate.Task; // keeps the context: a sub-transaction holds it until it completes
            return 0;
        });
        var other = deployment.Reactors[1];
        var root = new ReactorFunction("twoChildren", async (call, none) =>
        {
            try
            {
                call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, 5));
                _ = call.CallAsync(other, holding, default);
                return await call.CallAsync(other, Deposit, new long[] { 2, 5 }); // dequeued while the first holds the context
            }
            finally
            {
                gate.TrySetResult();
            }
        });
        var r = await engine.ExecuteAsync(deployment.Reactors[0], root, default).AsTask().WaitAsync(Deadline);

        Assert.Equal(new TxnOutcome(Outcome.Aborted, AbortReason.SharedContext, 1), r.Outcome);
        foreach (var (reactor, key) in new[] { (0, 0L), (1, 1L), (1, 2L) })
            Assert.Equal(Initial, await Row(engine, deployment.Reactors[reactor], key));
        Assert.Equal(1, engine.Counts().ConflictAborts);
    }

    /// <summary>Synchronous calls run in the caller's context on its thread, however deep, and never
    /// take the conservative abort; a root whose asynchronous children each reach a container of
    /// their own neither.</summary>
    [Fact]
    public async Task SynchronousNestingAndOneChildPerContainerCommitAtTheFirstAttempt()
    {
        var deployment = Bank(6, 3); // acct0, acct3 on container 0; acct1, acct4 on 1; acct2, acct5 on 2
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 1, MaxAttempts = 1 });
        var r = deployment.Reactors;
        var inner = new ReactorFunction("inner", async (call, args) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, 1));
            long sibling = args.Span[0];
            return sibling < 0 ? 0 : await call.CallAsync(r[(int)sibling], Deposit, new long[] { 0, 1 }); // same container: synchronous
        });
        var root = new ReactorFunction("tree", async (call, _) =>
        {
            long here = await call.CallAsync(r[3], inner, new long[] { -1 }); // same container as acct0
            var left = call.CallAsync(r[1], inner, new long[] { 4 });          // container 1, then acct4 synchronously there
            var right = call.CallAsync(r[2], inner, new long[] { 5 });         // container 2, then acct5
            return here + await left + await right;
        });
        var result = await engine.ExecuteAsync(r[0], root, default).AsTask().WaitAsync(Deadline);

        Assert.Equal(new TxnOutcome(Outcome.Committed, AbortReason.None, 1), result.Outcome);
        Assert.Equal(2 * (Initial + 1), result.Value);
        foreach (int i in new[] { 1, 2, 3, 4, 5 }) Assert.Equal(Initial + 1, await Row(engine, r[i], 0));
    }

    /// <summary>Exactly once and results before commit: the root starts a middle sub-transaction,
    /// which starts leaves in two more containers, and neither awaits what it started; each node
    /// still runs once, and the root commits only after all of them (their writes are in the
    /// store when it returns).</summary>
    [Fact]
    public async Task EveryCalledSubTransactionRunsOnceAndCompletesBeforeTheRootCommits()
    {
        var deployment = Bank(4, 4);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 1, MaxAttempts = 1 });
        var r = deployment.Reactors;
        var runs = new int[4];
        var leaf = new ReactorFunction("leaf", async (call, _) =>
        {
            Interlocked.Increment(ref runs[call.Reactor.Id]);
            await Task.Yield();
            return call.Write(call.Reactor.Relation("balance"), 3, row => Add(row, 10));
        });
        var middle = new ReactorFunction("middle", (call, none) =>
        {
            Interlocked.Increment(ref runs[call.Reactor.Id]);
            _ = call.CallAsync(r[2], leaf, default); // never awaited
            _ = call.CallAsync(r[3], leaf, default);
            return ValueTask.FromResult(call.Write(call.Reactor.Relation("balance"), 3, row => Add(row, 10)));
        });
        var root = new ReactorFunction("fanOut", (call, none) =>
        {
            Interlocked.Increment(ref runs[0]);
            _ = call.CallAsync(r[1], middle, default); // never awaited either
            return ValueTask.FromResult(-1L);
        });
        var result = await engine.ExecuteAsync(r[0], root, default).AsTask().WaitAsync(Deadline);

        Assert.Equal(new TxnOutcome(Outcome.Committed, AbortReason.None, 1), result.Outcome);
        Assert.Equal(-1, result.Value);
        Assert.Equal(new[] { 1, 1, 1, 1 }, runs);
        for (int i = 1; i < 4; i++) Assert.Equal(Initial + 10, await Row(engine, r[i], 3));
    }

    /// <summary>A sub-transaction's logic aborts the root: UserAborted, not retried, nothing
    /// written in any container, no lock left (the next transfer over the same rows commits).</summary>
    [Fact]
    public async Task AbortRootInASubTransactionEndsTheRootAndWritesNothing()
    {
        var deployment = Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions());
        var refuse = new ReactorFunction("refuse", (call, args) =>
        {
            call.Write(call.Reactor.Relation("balance"), args.Span[0], row => Add(row, 7));
            call.AbortRoot();
            return ValueTask.FromResult(0L);
        });
        var root = new ReactorFunction("payThenRefuse", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, -7));
            return await call.CallAsync(deployment.Reactors[1], refuse, new long[] { 0 });
        });
        var r = await engine.ExecuteAsync(deployment.Reactors[0], root, default).AsTask().WaitAsync(Deadline);

        Assert.Equal(new TxnOutcome(Outcome.UserAborted, AbortReason.User, 1), r.Outcome);
        Assert.Equal(Initial, await Row(engine, deployment.Reactors[0], 0));
        Assert.Equal(Initial, await Row(engine, deployment.Reactors[1], 0));
        var after = await engine.ExecuteAsync(deployment.Reactors[0], Transfer(deployment), new long[] { 0, 3, 1, 0 });
        Assert.Equal(new TxnOutcome(Outcome.Committed, AbortReason.None, 1), after.Outcome);
        Assert.Equal(Initial - 3, await Row(engine, deployment.Reactors[0], 0));
    }

    [Fact]
    public async Task AMissingKeyInASubTransactionEndsTheRootUserAborted()
    {
        var deployment = Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions());
        var r = await engine.ExecuteAsync(deployment.Reactors[0], Transfer(deployment), new long[] { 0, 1, 1, 99 });
        Assert.Equal(new TxnOutcome(Outcome.UserAborted, AbortReason.KeyNotFound, 1), r.Outcome);
        Assert.Equal(Initial, await Row(engine, deployment.Reactors[0], 0));
    }

    /// <summary>A function that throws fails its root with the exception; the attempt is undone
    /// in every container and its locks are gone.</summary>
    [Fact]
    public async Task AThrowingFunctionFailsTheRootWithTransactionFailedAndUndoesIt()
    {
        var deployment = Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions());
        var boom = new ReactorFunction("boom", (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, 1));
            throw new InvalidOperationException("boom");
        });
        var root = new ReactorFunction("callsBoom", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, 1));
            return await call.CallAsync(deployment.Reactors[1], boom, default);
        });
        var e = await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], root, default).AsTask());
        Assert.Equal("callsBoom", e.Program);
        Assert.Equal("boom", e.InnerException!.Message);
        Assert.Equal(Initial, await Row(engine, deployment.Reactors[0], 0));
        Assert.Equal(Initial, await Row(engine, deployment.Reactors[1], 0));
        var after = await engine.ExecuteAsync(deployment.Reactors[0], Transfer(deployment), new long[] { 0, 2, 1, 0 });
        Assert.True(after.Outcome.Committed);
    }

    [Fact]
    public async Task AFunctionThatTouchesAnotherReactorsRelationIsRefusedNamingBoth()
    {
        var deployment = Bank(2, 2);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions());
        var foreign = deployment.Reactors[1].Relation("balance");
        var trespass = new ReactorFunction("trespass", (call, _) => ValueTask.FromResult(call.Write(foreign, 0, row => Add(row, 1))));
        var e = await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], trespass, default).AsTask());
        Assert.Contains("reactor acct0: relation acct1.balance is reactor acct1's", e.InnerException!.Message);
        Assert.Equal(Initial, await Row(engine, deployment.Reactors[1], 0));
    }

    /// <summary>A blind write replaces the row without reading it: the root reads its own write
    /// back, and the history records the write over the version it locked, not a read.</summary>
    [Fact]
    public async Task OverwriteReplacesTheRowWithoutReadingIt()
    {
        var deployment = Bank(1, 1);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { RecordHistory = true });
        var overwrite = new ReactorFunction("overwrite", (call, _) =>
        {
            var balance = call.Reactor.Relation("balance");
            call.Overwrite(balance, 2, row => Add(row, 42)); // the buffer starts zeroed
            return ValueTask.FromResult(call.Read(balance, 2, Value));
        });
        var r = await engine.ExecuteAsync(deployment.Reactors[0], overwrite, default);
        Assert.Equal(42, r.Value);
        Assert.Equal(42, await Row(engine, deployment.Reactors[0], 2));
        var written = Assert.Single(engine.History(), t => t.TxnProgram == "overwrite");
        var access = Assert.Single(written.Accesses);
        Assert.True(access.IsWrite);
    }

    [Fact]
    public async Task ARootThatTouchesMoreRowsThanItsContextHoldsFailsNamingTheLimit()
    {
        var deployment = Bank(1, 1);
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ContextRows = 2 });
        var e = await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], SumRows, default).AsTask());
        Assert.Contains("root sum touches more than 2 rows in container 0, the most ReactDbOptions.ContextRows allows", e.InnerException!.Message);
    }

    /// <summary>Disposal waits for the running root; a call that was waiting for a slot, and one
    /// made after, find the engine closed and do not run.</summary>
    [Fact]
    public async Task DisposeWaitsForTheRunningRootAndRefusesTheWaitingCall()
    {
        var deployment = Bank(1, 1);
        var engine = new ReactDbEngine(deployment, new ReactDbOptions { MaxRootsInFlight = 1 });
        var gate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var held = new ReactorFunction("held", async (call, _) =>
        {
            started.TrySetResult();
            await gate.Task;
            return call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, 1));
        });
        var running = engine.ExecuteAsync(deployment.Reactors[0], held, default).AsTask();
        await started.Task.WaitAsync(Deadline);
        var waiting = engine.ExecuteAsync(deployment.Reactors[0], Deposit, new long[] { 0, 1 }).AsTask(); // no slot free
        var disposal = engine.DisposeAsync().AsTask();
        Assert.False(disposal.IsCompleted);
        gate.SetResult();

        Assert.True((await running.WaitAsync(Deadline)).Outcome.Committed);
        await disposal.WaitAsync(Deadline);
        var refused = await Assert.ThrowsAsync<EngineClosedException>(() => waiting.WaitAsync(Deadline));
        Assert.False(refused.Retryable);
        Assert.Contains("engine 'reactdb' is closed", refused.Message);
        await Assert.ThrowsAsync<EngineClosedException>(() => engine.ExecuteAsync(deployment.Reactors[0], Deposit, new long[] { 0, 1 }).AsTask());
    }

    [Fact]
    public void BadDeploymentsAndOptionsAreRefusedNamingTheProblem()
    {
        using var db = new Database();
        db.Create("a.rows", 8, 4);
        var deployment = new ReactorDeployment(db, 2);
        Assert.Contains("needs table 'b.rows'", Assert.Throws<ArgumentException>(() => deployment.Add("b", 0, "rows")).Message);
        Assert.Contains("container 2 outside 0..1", Assert.Throws<ArgumentOutOfRangeException>(() => deployment.Add("a", 2, "rows")).Message);
        var a = deployment.Add("a", 1, "rows");
        Assert.Contains("the name is taken", Assert.Throws<ArgumentException>(() => deployment.Add("a", 0)).Message);
        Assert.Contains("has no relation 'stock' (its relations: rows)", Assert.Throws<ArgumentException>(() => a.Relation("stock")).Message);
        Assert.Contains("reactor b: container -1 outside 0..1", Assert.Throws<ArgumentOutOfRangeException>(() => deployment.Add("b", -1)).Message);
        Assert.Contains("1..16 containers", Assert.Throws<ArgumentOutOfRangeException>(() => new ReactorDeployment(db, 17)).Message);
        Assert.Throws<ArgumentException>(() => new ReactorFunction("", (_, _) => ValueTask.FromResult(0L)));

        // Each option out of range is named, by Validate as by the engine's constructor.
        foreach (var (options, named) in new (ReactDbOptions, string)[]
                 {
                     (new() { ExecutorsPerContainer = 0 }, "ReactDbOptions.ExecutorsPerContainer = 0: outside 1..64"),
                     (new() { ExecutorsPerContainer = 65 }, "ReactDbOptions.ExecutorsPerContainer = 65: outside 1..64"),
                     (new() { MaxRootsInFlight = 0 }, "ReactDbOptions.MaxRootsInFlight = 0: outside 1..256 for 1 containers"),
                     (new() { ContextRows = 0 }, "ReactDbOptions.ContextRows = 0: outside 1..65536"),
                     (new() { ContextBytes = 63 }, "ReactDbOptions.ContextBytes = 63: outside 64 B..64 MiB"),
                     (new() { MaxAttempts = 0 }, "ReactDbOptions.MaxAttempts = 0: at least 1"),
                 })
        {
            var alone = Assert.Throws<ArgumentOutOfRangeException>(options.Validate);
            Assert.Contains(named, alone.Message);
            Assert.Equal(alone.ParamName, Assert.Throws<ArgumentOutOfRangeException>(() => new ReactDbEngine(deployment, options)).ParamName);
        }
        Assert.Contains("ReactDbOptions.Name", Assert.Throws<ArgumentException>(new ReactDbOptions { Name = "" }.Validate).Message);
        // Within range alone, but not for this deployment: 200 roots of 2 contexts each are more than 256.
        new ReactDbOptions { MaxRootsInFlight = 200 }.Validate();
        Assert.Contains("ReactDbOptions.MaxRootsInFlight = 200: outside 1..128 for 2 containers", Assert.Throws<ArgumentOutOfRangeException>(() => new ReactDbEngine(deployment, new ReactDbOptions { MaxRootsInFlight = 200 })).Message);
    }

    /// <summary>A deployment is fixed once its engine serves it; after the engine is disposed the
    /// database is gone with it, and the deployment refuses too.</summary>
    [Fact]
    public async Task ADeploymentIsFixedOnceItsEngineServesIt()
    {
        var deployment = Bank(1, 1);
        deployment.Database.Create("late.balance", 8, 2);
        var engine = new ReactDbEngine(deployment, new ReactDbOptions { Name = "fixed" });
        var refused = Assert.Throws<InvalidOperationException>(() => deployment.Add("late", 0, "balance"));
        Assert.Contains("reactor late: engine 'fixed' serves this deployment already", refused.Message);
        Assert.Single(deployment.Reactors);
        await engine.DisposeAsync();
        Assert.Throws<ObjectDisposedException>(() => deployment.Add("late", 0, "balance"));
    }

    /// <summary>The engine keeps a copy of its options: the caller's instance stays the caller's.</summary>
    [Fact]
    public async Task TheEngineKeepsACopyOfItsOptions()
    {
        var options = new ReactDbOptions { MaxAttempts = 3, Name = "copy" };
        await using var engine = new ReactDbEngine(Bank(1, 1), options);
        options.MaxAttempts = 1;
        options.Name = "changed";
        Assert.Equal(3, engine.Options.MaxAttempts);
        Assert.Equal("copy", engine.Options.Name);
        Assert.NotSame(options, engine.Options);
    }
}
