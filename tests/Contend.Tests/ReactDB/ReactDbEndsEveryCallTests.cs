using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Microsoft.Extensions.Logging;

namespace Contend.Tests.ReactDB;

/// <summary>
/// Every ReactDB call ends: a call chain back into the container its root holds ends with the
/// chain named instead of retrying for ever, and an executor whose work throws fails the engine
/// visibly, answering every caller, instead of dying with the container's queue unserved.
/// </summary>
public class ReactDbEndsEveryCallTests
{
    static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    /// <summary>args: a reactor to call, then the reactors it calls in turn (each call goes one
    /// further down the list); deposits 1 at row 0 of each.</summary>
    static ReactorFunction Chain(ReactorDeployment deployment) => new("chain", async (call, args) =>
    {
        call.Write(call.Reactor.Relation("balance"), 0, row => { row[0]++; return 0; });
        if (args.Length == 0) return 0;
        return await call.CallAsync(deployment.Reactors[(int)args.Span[0]], Chain(deployment), args[1..]);
    });

    [Fact]
    public async Task ACallChainBackIntoTheRootsContainerEndsNamingTheChain()
    {
        var deployment = ReactDbTests.Bank(3, 2); // acct0 and acct2 in container 0, acct1 in container 1
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions());
        var root = deployment.Reactors[0];
        var cycle = await Assert.ThrowsAsync<ReactorCallCycleException>(() => engine.ExecuteAsync(root, Chain(deployment), new long[] { 1, 2 }).AsTask().WaitAsync(Patience));
        Assert.Equal("acct0 (container 0) -> acct1 (container 1) -> acct2 (container 0)", cycle.Chain);
        Assert.Equal("chain", cycle.Program);
        Assert.False(cycle.Retryable);
        Assert.Equal(0, engine.Counts().ConflictAborts);
        // A chain that does not come back commits, and the cycle wrote nothing.
        Assert.True((await engine.ExecuteAsync(root, Chain(deployment), new long[] { 1 }).AsTask().WaitAsync(Patience)).Outcome.Committed);
        Assert.Equal(new EngineCounts(1, 0, 0), engine.Counts());
    }

    [Fact]
    public async Task DisposalEndsAfterACallCycle()
    {
        var deployment = ReactDbTests.Bank(3, 2);
        var engine = new ReactDbEngine(deployment, new ReactDbOptions());
        await Assert.ThrowsAsync<ReactorCallCycleException>(() => engine.ExecuteAsync(deployment.Reactors[0], Chain(deployment), new long[] { 1, 0 }).AsTask().WaitAsync(Patience));
        await engine.DisposeAsync().AsTask().WaitAsync(Patience);
    }

    sealed class ThrowingLogger : ILogger
    {
        public int Thrown;
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
        public bool IsEnabled(LogLevel logLevel) => true;
        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (logLevel >= LogLevel.Warning && logLevel < LogLevel.Critical)
            {
                Interlocked.Increment(ref Thrown);
                throw new InvalidOperationException("the logger broke");
            }
        }
    }

    /// <summary>A logger that throws when a function's failure is logged: the executor's thread
    /// used to end there, leaving its one-thread container dead. Now the caller is answered, the
    /// engine fails and says why, and disposal ends.</summary>
    [Fact]
    public async Task AThrowingLoggerFailsTheEngineAndEveryCallEnds()
    {
        var deployment = ReactDbTests.Bank(2, 2);
        var log = new ThrowingLogger();
        var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 1 }, log);
        var throws = new ReactorFunction("throws", (_, _) => throw new ArgumentException("bad"));
        await Assert.ThrowsAsync<TransactionFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], throws, default).AsTask().WaitAsync(Patience));
        Assert.True(log.Thrown > 0);
        var refused = await Assert.ThrowsAsync<EngineFailedException>(() => engine.ExecuteAsync(deployment.Reactors[0], ReactDbTests.Deposit, new long[] { 0, 1 }).AsTask().WaitAsync(Patience));
        Assert.Contains("the logger broke", refused.Message);
        await engine.DisposeAsync().AsTask().WaitAsync(Patience);
    }
}

/// <summary>
/// Two flows of one function's logic on one context: a root on a container of two executors
/// starts two async helpers, each awaiting a call into another container and then writing rows
/// (<c>var a = H(); var b = H(); await a; await b;</c>). Their continuations resume on the two
/// executors at once. With the strand, every committed root's writes are all there; without it
/// (the twin), the two flows are inside one context's step at once.
/// </summary>
public class ReactDbTwoFlowsTests
{
    const int RowsPerFlow = 64;

    static ReactorDeployment Deployment()
    {
        var db = new Contend.Engine.Storage.Database();
        var rows = db.Create("home.rows", 8, RowsPerFlow * 2);
        for (int k = 0; k < RowsPerFlow * 2; k++) rows.Load(k, new byte[8]);
        var far = db.Create("far.rows", 8, 1);
        far.Load(0, new byte[8]);
        var deployment = new ReactorDeployment(db, 2);
        deployment.Add("home", 0, "rows");
        deployment.Add("far", 1, "rows");
        return deployment;
    }

    static readonly ReactorFunction Touch = new("touch", (call, _) =>
        ValueTask.FromResult(call.Read(call.Reactor.Relation("rows"), 0, row => row[0])));

    /// <param name="whileWriting">runs inside each write of either flow</param>
    static ReactorFunction TwoFlows(ReactorDeployment deployment, Func<int> whileWriting) => new("twoFlows", async (call, _) =>
    {
        async Task<long> Flow(int first)
        {
            await call.CallAsync(deployment.Reactors[1], Touch, default);
            for (int k = first; k < first + RowsPerFlow; k++)
                call.Write(call.Reactor.Relation("rows"), k, row =>
                {
                    whileWriting();
                    long v = System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
                    System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(row, v);
                    return v;
                });
            return 0;
        }
        var a = Flow(0);
        var b = Flow(RowsPerFlow);
        return await a + await b;
    });

    static long Sum(ReactDbEngine engine, ReactorDeployment deployment)
    {
        var sum = new ReactorFunction("sum", (call, _) =>
        {
            long total = 0;
            for (int k = 0; k < RowsPerFlow * 2; k++)
                total += call.Read(call.Reactor.Relation("rows"), k, System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian);
            return ValueTask.FromResult(total);
        });
        return engine.ExecuteAsync(deployment.Reactors[0], sum, default).AsTask().Result.Value;
    }

    [Fact]
    public async Task TwoFlowsOfOneFunctionKeepEveryWrite()
    {
        var deployment = Deployment();
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 2, MaxRootsInFlight = 4 });
        var function = TwoFlows(deployment, () => 0);
        var roots = Enumerable.Range(0, 400).Select(_ => engine.ExecuteAsync(deployment.Reactors[0], function, default).AsTask());
        var results = await Task.WhenAll(roots).WaitAsync(TimeSpan.FromSeconds(60));
        long commits = results.Count(r => r.Outcome.Committed);
        Assert.True(commits > 0);
        Assert.All(results, r => Assert.True(r.Outcome.Committed || r.Outcome.Outcome == Outcome.Aborted, $"a root ended {r.Outcome}"));
        Assert.Equal(commits * RowsPerFlow * 2, Sum(engine, deployment));
    }

    /// <summary>The twin: a write of one flow waits (up to a bound) for the other flow to start a
    /// write too. Without the strand it does, and the two are inside the context at once; with
    /// it (the test above, and the guard here) the wait runs out alone.</summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task WithoutTheStrandTwoFlowsAreInsideOneContextAtOnce(bool unguarded)
    {
        // A root has one attempt, which may abort before its second flow writes; so the twin has
        // up to ten roots to show two flows inside at once, and the guarded run up to ten to
        // commit one (a root aborted for its shared context may end before it writes), none of
        // them ever with two inside.
        var roots = new List<(int Most, TxnOutcome Outcome)>();
        while (roots.Count < 10 && !roots.Any(r => unguarded ? r.Most >= 2 : r.Outcome.Committed)) roots.Add(await MostInsideAtOnce(unguarded));
        string seen = string.Join(", ", roots.Select(r => $"{r.Most} inside, {r.Outcome}"));
        if (unguarded) Assert.True(roots.Any(r => r.Most == 2), seen);
        else Assert.True(roots.All(r => r.Most <= 1) && roots.Any(r => r.Outcome.Committed && r.Most == 1), seen);
    }

    /// <summary>One root of the two flows: the most of them inside the context at once, and how it ended.</summary>
    async Task<(int Most, TxnOutcome Outcome)> MostInsideAtOnce(bool unguarded)
    {
        var deployment = Deployment();
        // One attempt: the twin's flows can lose an access set entry, and with it a lock that no
        // abort then releases, so a retry would meet that lock for ever.
        await using var engine = new ReactDbEngine(deployment, new ReactDbOptions { ExecutorsPerContainer = 2, MaxAttempts = 1 },
                                                   unguarded ? ReactDbMutants.UnguardedFlows : ReactDbMutants.None, taskAnswers: false);
        int inside = 0, most = 0;
        var function = TwoFlows(deployment, () =>
        {
            int now = Interlocked.Increment(ref inside);
            InterlockedMax(ref most, now);
            // Only the first write of a root waits, so a guarded run stays short.
            if (Volatile.Read(ref most) < 2) SpinWait.SpinUntil(() => Volatile.Read(ref most) >= 2, TimeSpan.FromMilliseconds(unguarded ? 5_000 : 200));
            Interlocked.Decrement(ref inside);
            return 0;
        });
        var result = await engine.ExecuteAsync(deployment.Reactors[0], function, default).AsTask().WaitAsync(TimeSpan.FromSeconds(60));
        return (most, result.Outcome);
    }

    static void InterlockedMax(ref int target, int value)
    {
        int seen;
        while ((seen = Volatile.Read(ref target)) < value && Interlocked.CompareExchange(ref target, value, seen) != seen) { }
    }
}
