using System.Buffers.Binary;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

/// <summary>
/// A transaction that inserts one key twice, and inserts that are refused, under every protocol
/// behind the front door: the call ends, as a duplicate that names both ops; nothing is written;
/// the refused inserts give their rows back, so a table never fills with rows no key reaches;
/// and a wait for another insert's claim on a key ends with the waiter's deadline.
/// </summary>
public class DuplicateInsertTests
{
    static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    public static TheoryData<string> Protocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable).Select(d => d.Name)];

    static readonly OpBody Fill = (row, args, _) =>
    {
        BinaryPrimitives.WriteInt64LittleEndian(row, args[^1]);
        return args[^1];
    };

    static (Database Db, Table Entry, TxnProgram Twice, TxnProgram Once) Ledger(int capacity)
    {
        var db = new Database();
        var entry = db.Create("entry", sizeof(long), capacity);
        var twice = new ProgramBuilder("twice", db, 3)
            .Insert("first", "entry", KeySource.FromArg(0), Fill)
            .Insert("second", "entry", KeySource.FromArg(1), Fill)
            .Build();
        var once = new ProgramBuilder("once", db, 2).Insert("only", "entry", KeySource.FromArg(0), Fill).Build();
        return (db, entry, twice, once);
    }

    static EngineOptions Options(string protocol) => new() { Protocol = protocol, Workers = 2, Pin = false, Deadline = TimeSpan.FromSeconds(5) };

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task TwoInsertsOfOneKeyEndAsADuplicateNamingBothOps(string protocol)
    {
        var (db, entry, twice, once) = Ledger(16);
        var engine = new ContendEngine(db, Options(protocol));
        var outcome = await engine.ExecuteAsync(twice, [6, 6, 1]).AsTask().WaitAsync(Patience);
        Assert.Equal((Outcome.UserAborted, AbortReason.DuplicateKey), (outcome.Outcome, outcome.Reason));
        Assert.Equal(new DuplicateKey("twice", "second", "entry", 6) { InsertedBy = "first" }, outcome.Duplicate);
        Assert.Equal("program twice: ops first and second both insert key 6 into table entry", outcome.Duplicate!.ToString());
        Assert.Equal(0, entry.Count);
        // Nothing of it was claimed: the key is free for the next insert, and the table is whole.
        Assert.True((await engine.ExecuteAsync(once, [6, 2]).AsTask().WaitAsync(Patience)).Committed);
        Assert.True((await engine.ExecuteAsync(twice, [7, 8, 3]).AsTask().WaitAsync(Patience)).Committed);
        Assert.Equal(3, entry.Count);
        await engine.DisposeAsync().AsTask().WaitAsync(Patience);
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task RefusedInsertsGiveTheirRowsBack(string protocol)
    {
        const int Capacity = 50;
        var (db, entry, twice, once) = Ledger(Capacity);
        await using var engine = new ContendEngine(db, Options(protocol));
        Assert.True((await engine.ExecuteAsync(once, [1, 1]).AsTask().WaitAsync(Patience)).Committed);
        for (int i = 0; i < 60; i++)
        {
            var refused = await engine.ExecuteAsync(i % 2 == 0 ? once : twice, i % 2 == 0 ? [1, 9] : [30, 30, 9]).AsTask().WaitAsync(Patience);
            Assert.Equal(AbortReason.DuplicateKey, refused.Reason);
        }
        Assert.Equal(1, entry.Count);
        for (long key = 2; key <= Capacity; key++)
            Assert.True((await engine.ExecuteAsync(once, [key, key]).AsTask().WaitAsync(Patience)).Committed, $"{protocol}: insert of key {key} refused with {entry.Count} of {Capacity} rows in use");
        Assert.Equal(AbortReason.TableFull, (await engine.ExecuteAsync(once, [Capacity + 1, 0]).AsTask().WaitAsync(Patience)).Reason);
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task ConcurrentInsertsOfOneKeyCommitOnceAndUseOneRow(string protocol)
    {
        const int Callers = 200;
        var (db, entry, _, once) = Ledger(Callers);
        await using var engine = new ContendEngine(db, Options(protocol));
        var outcomes = await Task.WhenAll(Enumerable.Range(0, Callers).Select(i => engine.ExecuteAsync(once, [42, i]).AsTask())).WaitAsync(Patience);
        Assert.Equal(1, outcomes.Count(o => o.Committed));
        Assert.All(outcomes.Where(o => !o.Committed), o => Assert.Equal(AbortReason.DuplicateKey, o.Reason));
        Assert.Equal(1, entry.Count);
        for (long key = 1000; key < 1000 + Callers - 1; key++)
            Assert.True((await engine.ExecuteAsync(once, [key, key]).AsTask().WaitAsync(Patience)).Committed, $"{protocol}: key {key} refused with {entry.Count} rows in use");
    }

    /// <summary>A claim another attempt holds is waited out until that attempt ends, or until the
    /// waiter gives up. The holder claims key 5 with its first insert and then stays in its second
    /// insert's body; the waiter's insert of key 5 must end at its deadline, not when the holder does.</summary>
    [Theory]
    [MemberData(nameof(PerTransactionProtocols))]
    public async Task ADeadlineEndsAWaitForAnotherInsertsClaim(string protocol)
    {
        var db = new Database();
        var entry = db.Create("entry", sizeof(long), 16);
        using var inBody = new SemaphoreSlim(0);
        using var release = new SemaphoreSlim(0);
        var holder = new ProgramBuilder("holder", db, 2)
            .Insert("claim", "entry", KeySource.FromArg(0), Fill)
            .Insert("stay", "entry", KeySource.FromArg(1), (row, args, _) =>
            {
                inBody.Release();
                release.Wait(Patience);
                return 0;
            })
            .Build();
        var waiter = new ProgramBuilder("waiter", db, 1).Insert("same", "entry", KeySource.FromArg(0), Fill).Build();
        await using var engine = new ContendEngine(db, Options(protocol) with { Deadline = TimeSpan.FromMilliseconds(300) });
        var held = engine.ExecuteAsync(holder, [5, 6]).AsTask();
        Assert.True(await inBody.WaitAsync(Patience), "the holder never reached its second insert");
        var waited = await engine.ExecuteAsync(waiter, [5]).AsTask().WaitAsync(Patience);
        Assert.Equal((Outcome.Aborted, AbortReason.Deadline), (waited.Outcome, waited.Reason));
        release.Release();
        Assert.True((await held.WaitAsync(Patience)).Committed);
        Assert.Equal(AbortReason.DuplicateKey, (await engine.ExecuteAsync(waiter, [5]).AsTask().WaitAsync(Patience)).Reason);
        Assert.Equal(2, entry.Count);
    }

    /// <summary>The fuzzer's find: an insert whose attempt aborts after claiming its key leaves a
    /// tombstone in the index, and when its row was given back too, tombstones outgrew the rows
    /// until no slot was empty and a probe went round the index for ever. Such a row is retired
    /// now: the table fills (TableFull) and every lookup and claim still ends.</summary>
    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task InsertsAbortedAfterTheirClaimFillTheTableAndEveryLookupEnds(string protocol)
    {
        const int Capacity = 6;
        var db = new Database();
        var entry = db.Create("entry", sizeof(long), Capacity);
        // Claimed in key order: the lower key (arg 0) is claimed, then the higher one's body aborts.
        var claimThenAbort = new ProgramBuilder("claimThenAbort", db, 2)
            .Insert("low", "entry", KeySource.FromArg(0), Fill)
            .Insert("high", "entry", KeySource.FromArg(1), (_, _, _) => TxnProgram.UserAbort)
            .Build();
        var read = new ProgramBuilder("read", db, 1).Read("look", "entry", KeySource.FromArg(0), (row, _, _) => row[0]).Build();
        var once = new ProgramBuilder("once", db, 2).Insert("only", "entry", KeySource.FromArg(0), Fill).Build();
        await using var engine = new ContendEngine(db, Options(protocol));
        var reasons = new List<AbortReason>();
        for (long k = 0; k < 40; k++)
            reasons.Add((await engine.ExecuteAsync(claimThenAbort, [k, 1000 + k]).AsTask().WaitAsync(Patience)).Reason);
        Assert.Contains(AbortReason.User, reasons);
        Assert.Equal(AbortReason.TableFull, reasons[^1]);
        // Each attempt needs two rows: the last row left is given back by the attempt that found no second.
        Assert.Equal((Capacity - 1, Capacity - 1), (entry.Count, entry.Retired));
        Assert.True((await engine.ExecuteAsync(once, [5000, 1]).AsTask().WaitAsync(Patience)).Committed);
        Assert.Equal(AbortReason.TableFull, (await engine.ExecuteAsync(once, [5001, 1]).AsTask().WaitAsync(Patience)).Reason);
        Assert.Equal(AbortReason.KeyNotFound, (await engine.ExecuteAsync(read, [6000]).AsTask().WaitAsync(Patience)).Reason);
        Assert.True((await engine.ExecuteAsync(read, [5000]).AsTask().WaitAsync(Patience)).Committed);
    }

    /// <summary>The protocols that claim an insert's key while the deadline applies (a batch runs
    /// its transactions to their end).</summary>
    public static TheoryData<string> PerTransactionProtocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable && d.Kind == ProtocolKind.PerTransaction).Select(d => d.Name)];
}
