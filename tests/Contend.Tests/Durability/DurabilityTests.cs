using System.Buffers.Binary;
using Contend.Engine.Durability;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests.Durability;

/// <summary>
/// A durable engine over the simulated disk and the real one: what a caller was told committed is
/// there after a crash, whatever the crash kept of what was not synced; what is recovered is a
/// serial execution of committed transfers (the balances are the opening ones moved by exactly
/// the ledger rows recovered); a damaged record stops recovery there and says so; a failed sync
/// fails the engine and nothing is acknowledged after it.
/// </summary>
public class DurabilityTests
{
    const int Accounts = 8, Opening = 1_000, LedgerRows = 64 * 1024;

    /// <summary>The harness's bank (<see cref="Harness.CrashCommand.Bank"/>): a transfer debits one
    /// account, credits another, and inserts a ledger row keyed by the transfer's id.</summary>
    static (Database Db, TxnProgram Transfer) Bank()
    {
        var db = new Database();
        return (db, Harness.CrashCommand.Bank(db, Accounts, Opening, LedgerRows));
    }

    public static TheoryData<string> Protocols() =>
        [.. ProtocolRegistry.Descriptors.Where(d => d.Serializable).Select(d => d.Name)];

    static EngineOptions Durable(string protocol, ILogStorage disk, int loggers = 1) =>
        new() { Protocol = protocol, Workers = 2, Loggers = loggers, Durability = DurabilityMode.Durable, Storage = disk, EpochLength = TimeSpan.FromMilliseconds(2), Name = "durable-bank" };

    sealed record Run(List<long> Acknowledged, int Submitted, int Failed);

    /// <summary>Transfers from a few callers until <paramref name="stop"/> says so; returns the ids
    /// of those whose task said committed.</summary>
    static async Task<Run> Transfer(ContendEngine engine, TxnProgram transfer, int firstId, int count, Func<int, bool>? stopAfter = null)
    {
        var acknowledged = new List<long>();
        int submitted = 0, failed = 0, next = firstId;
        var rng = new Random(firstId);
        async Task Caller()
        {
            while (true)
            {
                int id;
                lock (acknowledged)
                {
                    if (next >= firstId + count || stopAfter?.Invoke(acknowledged.Count) == true) return;
                    id = next++;
                    submitted++;
                }
                int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                try
                {
                    var outcome = await engine.ExecuteAsync(transfer, [from, to, 1 + id % 7, id]);
                    Assert.True(outcome.Committed, $"transfer {id}: {outcome}");
                    lock (acknowledged) acknowledged.Add(id);
                }
                catch (ContendException)
                {
                    lock (acknowledged) failed++;
                    return;
                }
            }
        }
        await Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Task.Run(Caller))).WaitAsync(ContendEngineTests.Patience);
        return new Run(acknowledged, submitted, failed);
    }

    /// <summary>The recovered state is the opening balances moved by exactly the transfers whose
    /// ledger rows are there, and every acknowledged transfer's row is there.</summary>
    static void CheckRecovered(Database db, IEnumerable<long> acknowledged, string what)
    {
        var ledger = db.Tables.Single(t => t.Name == "ledger");
        var balances = new long[Accounts];
        Array.Fill(balances, Opening);
        var present = new HashSet<long>();
        for (long id = 0; id < LedgerRows; id++)
        {
            int row = ledger.Find(id);
            if (row < 0) continue;
            var entry = ledger.Payload(row);
            present.Add(id);
            long from = BinaryPrimitives.ReadInt64LittleEndian(entry), to = BinaryPrimitives.ReadInt64LittleEndian(entry[8..]), amount = BinaryPrimitives.ReadInt64LittleEndian(entry[16..]);
            balances[from] -= amount;
            balances[to] += amount;
        }
        var lost = acknowledged.Where(id => !present.Contains(id)).Take(5).ToList();
        Assert.True(lost.Count == 0, $"{what}: acknowledged transfers not recovered: {string.Join(", ", lost)}");
        var account = db.Tables.Single(t => t.Name == "account");
        for (int a = 0; a < Accounts; a++)
        {
            long balance = BinaryPrimitives.ReadInt64LittleEndian(account.Payload(account.Find(a)));
            Assert.True(balances[a] == balance, $"{what}: account {a} holds {balance}, and the {present.Count} ledger rows recovered make it {balances[a]}");
        }
    }

    /// <summary>Opens an engine on the disk's state with a fresh load, checks what it recovered,
    /// and closes it.</summary>
    static RecoveryReport Reopen(string protocol, ILogStorage disk, IEnumerable<long> acknowledged, string what, DurabilityMutants mutant = DurabilityMutants.None, int loggers = 1)
    {
        var (db, _) = Bank();
        using var engine = new ContendEngine(db, Durable(protocol, disk, loggers), mutants: mutant == DurabilityMutants.None ? null : mutant, taskRequests: false);
        engine.Drain();
        CheckRecovered(db, acknowledged, what);
        return engine.Recovery!;
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task EveryAcknowledgedTransferSurvivesACrash(string protocol)
    {
        for (int round = 0; round < 3; round++)
        {
            var disk = new SimulatedDisk((ulong)(round * 7919 + protocol.Length));
            var (db, transfer) = Bank();
            var engine = new ContendEngine(db, Durable(protocol, disk), mutants: null, taskRequests: false);
            Assert.True(engine.Recovery!.Fresh);
            int crashAt = 20 + round * 60;
            string kept = "";
            var run = await Transfer(engine, transfer, 0, 2_000, stopAfter: acked =>
            {
                if (acked < crashAt || kept != "") return kept != "";
                kept = disk.Crash();
                return true;
            });
            await engine.DisposeAsync();
            Assert.True(run.Acknowledged.Count >= crashAt, $"{protocol}: only {run.Acknowledged.Count} acknowledged before the crash");
            var report = Reopen(protocol, disk, run.Acknowledged, $"{protocol}, crash {round} ({kept})");
            Assert.False(report.Fresh);
            Assert.True(report.Transactions >= run.Acknowledged.Count, $"{protocol}: {report.Transactions} replayed, {run.Acknowledged.Count} acknowledged");
        }
    }

    /// <summary>One crash of <paramref name="protocol"/>'s engine with two loggers, a worker each,
    /// then the check of what comes back; the error it finds, or null. The second logger's file
    /// syncs slowly, so the first logger's syncs end well before its own.</summary>
    static async Task<string?> CrashAndRecover(string protocol, ulong seed, int crashAt, DurabilityMutants mutant)
    {
        var disk = new SimulatedDisk(seed) { SlowSuffix = "-001", SlowSync = TimeSpan.FromMilliseconds(5) };
        var (db, transfer) = Bank();
        var engine = new ContendEngine(db, Durable(protocol, disk, loggers: 2), mutants: mutant == DurabilityMutants.None ? null : mutant, taskRequests: false);
        string kept = "";
        var run = await Transfer(engine, transfer, 0, 2_000, stopAfter: acked =>
        {
            if (acked < crashAt || kept != "") return kept != "";
            kept = disk.Crash();
            return true;
        });
        await engine.DisposeAsync();
        try
        {
            Reopen(protocol, disk, run.Acknowledged, $"{protocol}, seed {seed} ({kept})", mutant, loggers: 2);
            return null;
        }
        catch (Xunit.Sdk.XunitException e)
        {
            return e.Message;
        }
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task TwoLoggersLoseNothingAcknowledged(string protocol)
    {
        for (ulong seed = 1; seed <= 3; seed++)
        {
            var error = await CrashAndRecover(protocol, seed, crashAt: 30 * (int)seed, DurabilityMutants.None);
            Assert.True(error is null, error);
        }
    }

    static readonly string[] s_mutants =
    [
        nameof(DurabilityMutants.AcknowledgeAtCommit), nameof(DurabilityMutants.DurableIsMax),
        nameof(DurabilityMutants.ApplyInFileOrder), nameof(DurabilityMutants.CommitIdWithoutEpoch),
    ];

    public static TheoryData<string> Mutants() => [.. s_mutants];

    [Fact]
    public void EveryBrokenStepHasItsTest() =>
        Assert.Equal(Enum.GetNames<DurabilityMutants>().Where(n => n != nameof(DurabilityMutants.None)).Order(), s_mutants.Order());

    /// <summary>Each broken step of the log or recovery (the spec's mutants) loses a transfer a
    /// caller was told committed, or recovers a state no serial execution leaves, within a few crashes.</summary>
    [Theory]
    [MemberData(nameof(Mutants))]
    public async Task EachBrokenStepIsCaught(string name)
    {
        var mutant = Enum.Parse<DurabilityMutants>(name);
        var errors = new List<string>();
        for (ulong seed = 1; seed <= 20 && errors.Count == 0; seed++)
            if (await CrashAndRecover("NoWait", seed, crashAt: 40, mutant) is { } error) errors.Add(error);
        Assert.True(errors.Count > 0, $"{mutant}: 20 crashes and every one recovered what was acknowledged, serially");
    }

    [Theory]
    [MemberData(nameof(Protocols))]
    public async Task ACleanRestartKeepsEveryCommitAndGoesOn(string protocol)
    {
        var disk = new SimulatedDisk(17);
        var (db, transfer) = Bank();
        await using (var engine = new ContendEngine(db, Durable(protocol, disk), mutants: null, taskRequests: false))
        {
            var run = await Transfer(engine, transfer, 0, 300);
            Assert.Equal(300, run.Acknowledged.Count);
        }
        // The second run's transfers take ids after the first's, and a third open sees both.
        var (db2, transfer2) = Bank();
        await using (var engine = new ContendEngine(db2, Durable(protocol, disk), mutants: null, taskRequests: false))
        {
            Assert.Equal(300, engine.Recovery!.Transactions);
            var run = await Transfer(engine, transfer2, 300, 200);
            Assert.Equal(200, run.Acknowledged.Count);
        }
        disk.Crash(keepUnsynced: false);
        var report = Reopen(protocol, disk, Enumerable.Range(0, 500).Select(i => (long)i), protocol);
        Assert.Equal(200, report.Transactions);
    }

    [Fact]
    public async Task AFlippedByteStopsRecoveryThereAndSaysSo()
    {
        var disk = new SimulatedDisk(3);
        var (db, transfer) = Bank();
        await using (var engine = new ContendEngine(db, Durable("NoWait", disk), mutants: null, taskRequests: false))
            await Transfer(engine, transfer, 0, 400);
        var log = disk.Files().Single(f => f.StartsWith("log-", StringComparison.Ordinal));
        int length = disk.LengthOf(log);
        disk.Flip(log, length / 2);
        var report = Reopen("NoWait", disk, [], "after a flipped byte");
        Assert.NotNull(report.StoppedAt);
        Assert.Contains(log, report.StoppedAt);
        Assert.Contains("checksum", report.StoppedAt);
        Assert.InRange(report.Transactions, 1, 399);
    }

    [Fact]
    public async Task AFailedSyncFailsTheEngineAndNothingIsAcknowledgedAfterIt()
    {
        var disk = new SimulatedDisk(5);
        var (db, transfer) = Bank();
        var engine = new ContendEngine(db, Durable("Silo", disk), mutants: null, taskRequests: false);
        int syncsBefore = -1;
        var run = await Transfer(engine, transfer, 0, 5_000, stopAfter: acked =>
        {
            if (acked >= 50 && syncsBefore < 0)
            {
                syncsBefore = disk.Syncs;
                disk.FailSyncs = 1_000;
            }
            return false;
        });
        Assert.True(run.Failed > 0, "no call failed after the syncs did");
        var error = await Assert.ThrowsAnyAsync<ContendException>(async () => await engine.ExecuteAsync(transfer, [0, 1, 1, 9_999]));
        Assert.True(error is DurabilityFailedException or EngineFailedException, error.ToString());
        await engine.DisposeAsync();
        Assert.Equal(syncsBefore, disk.Syncs); // no sync returned after the first that failed
        disk.FailSyncs = 0;
        disk.Crash();
        Reopen("Silo", disk, run.Acknowledged, "after EIO");
    }

    [Fact]
    public async Task TheDiskKeepsBalancesAcrossARestartAndRefusesASecondEngineOrAnotherSchema()
    {
        string directory = Path.Combine(Path.GetTempPath(), $"contend-durability-{Guid.NewGuid():N}");
        try
        {
            var options = new EngineOptions { Protocol = "WaitDie", Workers = 2, Durability = DurabilityMode.Durable, DataDirectory = directory, Name = "disk-bank" };
            var (db, transfer) = Bank();
            await using (var engine = new ContendEngine(db, options))
            {
                var run = await Transfer(engine, transfer, 0, 200);
                Assert.Equal(200, run.Acknowledged.Count);
                var (other, _) = Bank();
                var refused = Assert.Throws<DataDirectoryException>(() => new ContendEngine(other, options));
                Assert.Contains("another engine holds it", refused.Message);
            }
            var (again, _) = Bank();
            using (var engine = new ContendEngine(again, options))
            {
                Assert.Equal(200, engine.Recovery!.Transactions);
                engine.Drain();
                CheckRecovered(again, Enumerable.Range(0, 200).Select(i => (long)i), "after a restart on disk");
            }

            var wider = new Database();
            wider.Create("account", 2 * sizeof(long), Accounts);
            var schema = Assert.Throws<DataDirectoryException>(() => new ContendEngine(wider, options));
            Assert.Contains("another schema", schema.Message);
            Assert.Contains("account (16 B)", schema.Message);
        }
        finally
        {
            if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
        }
    }

    [Fact]
    public void DurableOptionsAreCheckedAndNamed()
    {
        var noDirectory = Assert.Throws<ArgumentException>(() => new EngineOptions { Durability = DurabilityMode.Durable }.Validate());
        Assert.Contains("DataDirectory", noDirectory.Message);
        var notDurable = Assert.Throws<ArgumentException>(() => new EngineOptions { DataDirectory = "/tmp/x" }.Validate());
        Assert.Contains("Durability", notDurable.Message);
        var epoch = Assert.Throws<ArgumentOutOfRangeException>(() => new EngineOptions { Durability = DurabilityMode.Durable, DataDirectory = "/tmp/x", EpochLength = TimeSpan.FromSeconds(5) }.Validate());
        Assert.Contains("EpochLength", epoch.Message);
    }
}
