using System.Buffers.Binary;
using System.CommandLine;
using System.Diagnostics;
using System.Globalization;
using System.Reflection;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Harness;

/// <summary>
/// <c>contend crashes</c>: a durable bank in a child process, killed with SIGKILL at random
/// moments and started again on its directory, over and over. The parent records every transfer
/// the child's callers were told committed (the child prints each as its task completes); each
/// child first checks, against that record, what it recovered: every acknowledged transfer's ledger
/// row is there, and the balances are the opening ones moved by exactly the ledger rows there (so
/// the total is kept and no transfer is half there).
/// </summary>
internal static class CrashCommand
{
    const int Accounts = 8, Opening = 1_000_000;

    public static Command Create()
    {
        var rounds = new Option<int>("--rounds") { Description = "crashes: the child is killed this many times, then checked once more", DefaultValueFactory = _ => 20 };
        var protocol = new Option<string>("--protocol") { Description = "a protocol behind ContendEngine, or all: each round the next of them", DefaultValueFactory = _ => "all" };
        var data = new Option<string?>("--data") { Description = "the child's data directory (default: a new one under the temporary folder, removed after)" };
        var seed = new Option<int>("--seed") { Description = "when each kill comes", DefaultValueFactory = _ => 1 };
        var maxSeconds = new Option<double>("--max-seconds") { Description = "stop starting rounds after this long", DefaultValueFactory = _ => 600 };
        var child = new Option<string?>("--child") { Description = "internal: run as the child, with this file of acknowledged ids", Hidden = true };
        var first = new Option<long>("--first-id") { Description = "internal: the child's first transfer id", Hidden = true };
        var capacity = new Option<int>("--ledger") { Description = "internal: the ledger's rows", Hidden = true, DefaultValueFactory = _ => 1 << 20 };
        var transfers = new Option<int>("--transfers") { Description = "transfers each child makes at most before it is killed", DefaultValueFactory = _ => 20_000 };
        var command = new Command("crashes", "a durable bank killed with SIGKILL and restarted on its directory, again and again: nothing a caller was told committed may be lost")
        { rounds, protocol, data, seed, maxSeconds, child, first, capacity, transfers };
        command.SetAction(parse =>
        {
            string name = parse.GetValue(protocol)!;
            if (parse.GetValue(child) is { } acknowledged)
                return Child(name, parse.GetValue(data)!, acknowledged, parse.GetValue(first), parse.GetValue(capacity), parse.GetValue(transfers));
            return Parent(name, parse.GetValue(data), parse.GetValue(rounds), parse.GetValue(seed), parse.GetValue(maxSeconds), parse.GetValue(transfers));
        });
        return command;
    }

    static string[] Protocols(string name)
    {
        var frontDoor = ProtocolRegistry.Descriptors.Where(d => d.Serializable).Select(d => d.Name).ToArray();
        if (name.Equals("all", StringComparison.OrdinalIgnoreCase)) return frontDoor;
        if (!ProtocolRegistry.TryFind(name, out var d) || !d.Serializable)
            throw new UsageException($"--protocol {name}: one of {string.Join(", ", frontDoor)}, or all");
        return [d.Name];
    }

    static int Parent(string protocol, string? data, int rounds, int seed, double maxSeconds, int transfers)
    {
        var protocols = Protocols(protocol);
        if (rounds is < 1 or > 100_000) throw new UsageException($"--rounds {rounds}: must be in 1..100000");
        if (transfers is < 1 or > 1_000_000) throw new UsageException($"--transfers {transfers}: must be in 1..1000000");
        string directory = data ?? Path.Combine(Path.GetTempPath(), $"contend-crashes-{Environment.ProcessId}");
        if (Directory.Exists(directory) && Directory.EnumerateFileSystemEntries(directory).Any())
            throw new UsageException($"--data {directory}: not empty; the bank starts from its opening balances, so give an empty or new directory");
        string acknowledged = Path.Combine(Path.GetTempPath(), $"contend-crashes-{Environment.ProcessId}-acknowledged.txt");
        File.WriteAllText(acknowledged, "");
        int ledger = checked((rounds + 1) * transfers + 1);
        var rng = new Random(seed);
        var clock = Stopwatch.StartNew();
        long total = 0;
        int round = 0;
        try
        {
            for (; round <= rounds; round++)
            {
                bool last = round == rounds || clock.Elapsed.TotalSeconds > maxSeconds;
                string p = protocols[round % protocols.Length];
                // The kill comes at a random moment after the child is ready: while its callers commit,
                // while its logger writes or syncs.
                int killAfterMs = last ? -1 : rng.Next(20, 400);
                var (acks, ready, exit) = RunChild(p, directory, acknowledged, (long)round * transfers, ledger, last ? 0 : transfers, killAfterMs);
                total += acks;
                Console.WriteLine($"round {round}: {p}, {ready}; {acks} acknowledged{(last ? "" : $", killed after {killAfterMs} ms")}");
                if (exit != 0 && !(exit == 137 && !last) && !(exit == -1 && !last))
                    throw new InvalidOperationException($"round {round}: the child ({p}) exited {exit} before it was killed: {ready}");
                if (last) break;
            }
        }
        catch (InvalidOperationException e)
        {
            Console.Error.WriteLine($"contend crashes: {e.Message}");
            return 1;
        }
        finally
        {
            if (data is null && Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
            File.Delete(acknowledged);
        }
        Console.WriteLine($"{round} crashes, {total} transfers acknowledged, every one recovered, the money kept");
        return 0;
    }

    /// <summary>Runs one child until it is killed (or, with no transfers, until it has checked and
    /// exited); returns the acknowledgements it printed, appended to the record as they came.</summary>
    static (long Acks, string Ready, int Exit) RunChild(string protocol, string directory, string acknowledged, long firstId, int ledger, int transfers, int killAfterMs)
    {
        var start = new ProcessStartInfo(Environment.ProcessPath!) { RedirectStandardOutput = true, RedirectStandardError = true };
        if (Path.GetFileNameWithoutExtension(Environment.ProcessPath!) == "dotnet") start.ArgumentList.Add(Assembly.GetEntryAssembly()!.Location);
        foreach (var a in new[] { "crashes", "--protocol", protocol, "--data", directory, "--child", acknowledged, "--first-id", firstId.ToString(CultureInfo.InvariantCulture),
                                  "--ledger", ledger.ToString(CultureInfo.InvariantCulture), "--transfers", transfers.ToString(CultureInfo.InvariantCulture) })
            start.ArgumentList.Add(a);
        using var process = Process.Start(start)!;
        var errors = process.StandardError.ReadToEndAsync();
        string ready = process.StandardOutput.ReadLine() ?? $"no line: {errors.Result}";
        if (!ready.StartsWith("ready", StringComparison.Ordinal) || ready.Contains("LOST", StringComparison.Ordinal) || ready.Contains("WRONG", StringComparison.Ordinal))
        {
            process.WaitForExit();
            throw new InvalidOperationException($"the child ({protocol}) did not come up: {ready} {errors.Result}");
        }
        long acks = 0;
        using (var record = new StreamWriter(acknowledged, append: true))
        {
            var reader = Task.Run(() =>
            {
                // Each line is one call the child's caller saw complete "committed": the client's view.
                while (process.StandardOutput.ReadLine() is { } line)
                {
                    if (!line.StartsWith("ack ", StringComparison.Ordinal)) continue;
                    lock (record) record.WriteLine(line[4..]);
                    acks++;
                }
            });
            if (killAfterMs >= 0)
            {
                Thread.Sleep(killAfterMs);
                process.Kill(); // SIGKILL
            }
            if (!process.WaitForExit(TimeSpan.FromSeconds(120)))
            {
                process.Kill();
                throw new InvalidOperationException($"the child ({protocol}) did not end in 120 s");
            }
            reader.Wait(TimeSpan.FromSeconds(30));
        }
        return (acks, ready, process.ExitCode);
    }

    static int Child(string protocol, string directory, string acknowledged, long firstId, int ledgerRows, int transfers)
    {
        var db = new Database();
        var transfer = Bank(db, Accounts, Opening, ledgerRows);
        var engine = new ContendEngine(db, new EngineOptions
        {
            Protocol = protocol, Workers = 2, Name = "crashes", Durability = DurabilityMode.Durable, DataDirectory = directory,
            EpochLength = TimeSpan.FromMilliseconds(5),
        });
        var check = Check(db, acknowledged);
        Console.WriteLine($"ready: recovered {engine.Recovery!.Transactions} commits to epoch {engine.Recovery.Epoch}; {check}");
        Console.Out.Flush();
        if (check.StartsWith("LOST", StringComparison.Ordinal) || check.StartsWith("WRONG", StringComparison.Ordinal)) return 1;
        long next = firstId;
        var output = Console.Out;
        async Task Caller(int c)
        {
            var rng = new Random(c + (int)firstId);
            while (true)
            {
                long id = Interlocked.Increment(ref next) - 1;
                if (id >= firstId + transfers) return;
                int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                var outcome = await engine.ExecuteAsync(transfer, [from, to, 1 + id % 97, id]);
                if (!outcome.Committed) throw new InvalidOperationException($"transfer {id}: {outcome}");
                lock (output) output.WriteLine($"ack {id}"); // the line is the caller's answer
            }
        }
        Task.WhenAll(Enumerable.Range(0, 64).Select(c => Task.Run(() => Caller(c)))).Wait();
        lock (output) output.Flush();
        engine.Dispose();
        return 0;
    }

    /// <summary>The bank: <paramref name="accounts"/> accounts of <paramref name="opening"/> each,
    /// and a transfer (args: from, to, amount, id) that debits one, credits another, and inserts a
    /// ledger row keyed by the id that says so (from, to, amount): so what is recovered can be
    /// checked against the ledger rows recovered.</summary>
    internal static TxnProgram Bank(Database db, int accounts, long opening, int ledgerRows)
    {
        var table = db.Create("account", sizeof(long), accounts);
        for (int a = 0; a < accounts; a++) BinaryPrimitives.WriteInt64LittleEndian(table.Payload(table.Load(a)), opening);
        db.Create("ledger", 3 * sizeof(long), ledgerRows);
        return new ProgramBuilder("transfer", db, 4)
            .Write("debit", "account", KeySource.FromArg(0), (row, args, _) =>
            {
                BinaryPrimitives.WriteInt64LittleEndian(row, BinaryPrimitives.ReadInt64LittleEndian(row) - args[2]);
                return 0;
            })
            .Write("credit", "account", KeySource.FromArg(1), (row, args, _) =>
            {
                BinaryPrimitives.WriteInt64LittleEndian(row, BinaryPrimitives.ReadInt64LittleEndian(row) + args[2]);
                return 0;
            })
            .Insert("record", "ledger", KeySource.FromArg(3), (row, args, _) =>
            {
                for (int i = 0; i < 3; i++) BinaryPrimitives.WriteInt64LittleEndian(row[(i * 8)..], args[i]);
                return 0;
            })
            .Build();
    }

    /// <summary>The recovered bank against the record of acknowledgements: in words, LOST or WRONG
    /// first when it is not right. Read before any transfer is submitted, with the workers idle, so
    /// the rows are those recovery left.</summary>
    static string Check(Database db, string acknowledged)
    {
        var ledger = db.Tables.Single(t => t.Name == "ledger");
        var accounts = db.Tables.Single(t => t.Name == "account");
        long[] balances = Enumerable.Repeat((long)Opening, Accounts).ToArray();
        var ids = File.ReadAllLines(acknowledged).Where(l => l.Length > 0).Select(long.Parse).ToList();
        foreach (long id in ids)
            if (ledger.Find(id) < 0) return $"LOST: transfer {id} was acknowledged and is not in the ledger";
        long rows = 0;
        for (int row = 0; row < ledger.RowsEverUsed; row++)
        {
            if (ledger.Find(ledger.Key(row)) != row) continue;
            var entry = ledger.Payload(row);
            long from = BinaryPrimitives.ReadInt64LittleEndian(entry), to = BinaryPrimitives.ReadInt64LittleEndian(entry[8..]);
            long amount = BinaryPrimitives.ReadInt64LittleEndian(entry[16..]);
            balances[from] -= amount;
            balances[to] += amount;
            rows++;
        }
        for (int a = 0; a < Accounts; a++)
        {
            long held = BinaryPrimitives.ReadInt64LittleEndian(accounts.Payload(accounts.Find(a)));
            if (held != balances[a]) return $"WRONG: account {a} holds {held}, and the {rows} ledger rows make it {balances[a]}";
        }
        return $"all {ids.Count} acknowledged transfers there, {rows} ledger rows, every balance what they make";
    }
}
