using System.Buffers.Binary;
using Contend.Engine.Programs;
using Contend.Engine.Storage;

namespace Contend.Tests.Fuzzing;

/// <summary>The database and programs of a front-door case: accounts opened with
/// <see cref="Opening"/> each, and a ledger whose entries hold the key they were posted under.</summary>
public sealed class FuzzBank
{
    public const long Opening = 1_000;

    public Database Db { get; }
    public Table Account { get; }
    public Table Ledger { get; }
    public int Accounts { get; }
    public int LoadedEntries { get; }
    readonly TxnProgram[] _programs;
    readonly bool _holdClaims;
    string? _heldTooLong;

    /// <summary>How long a slow post holds its claim for inserts that wait for it, at most.</summary>
    public static TimeSpan HoldLimit => FrontDoorFuzzer.Bound / 4;

    /// <summary>What a slow post saw when the inserts waiting for its claim did not give up
    /// within <see cref="HoldLimit"/>, though every one had a deadline; null if they always did.</summary>
    public string? HeldTooLong => Volatile.Read(ref _heldTooLong);

    /// <param name="holdClaims">a slow post's second insert keeps its transaction's claims until
    /// no insert waits for a claim: every wait must end at its deadline (the case has one, and a
    /// per-transaction protocol gives up wherever it waits), or the hold outlasts its limit</param>
    public FuzzBank(FrontDoorCase c, bool holdClaims = false)
    {
        _holdClaims = holdClaims;
        Accounts = c.Accounts;
        LoadedEntries = c.LoadedEntries;
        Db = new Database();
        Account = Db.Create("account", sizeof(long), c.Accounts);
        var opening = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(opening, Opening);
        for (int a = 0; a < c.Accounts; a++) Account.Load(a, opening);
        Ledger = Db.Create("ledger", sizeof(long), c.EntryCapacity);
        for (int k = 0; k < c.LoadedEntries; k++) Ledger.Load(k, Value(k));
        _programs = [Transfer(), Post(), Read(), Audit()];
    }

    public TxnProgram this[FuzzProgram program] => _programs[(int)program];

    /// <summary>The sweep that writes every account: it commits only if no lock on one is left held.</summary>
    public TxnProgram Sweep()
    {
        var sweep = new ProgramBuilder("sweep", Db, 0);
        for (int a = 0; a < Accounts; a++)
        {
            long key = a;
            sweep.Write($"touch{a}", "account", KeySource.Computed((_, _) => key), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row));
        }
        return sweep.Build();
    }

    static byte[] Value(long key)
    {
        var bytes = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, key * 7 + 1);
        return bytes;
    }

    static long Add(Span<byte> row, long amount)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + amount;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }

    /// <summary>What a body does before its work, as its mode says: nothing (false), an abort
    /// (true), or a throw. It runs after the op before it wrote, so an abort or a throw undoes a written row.</summary>
    static bool Refuses(long mode) => mode switch
    {
        FuzzMode.Abort => true,
        FuzzMode.Throw => throw new FuzzBodyException(),
        _ => false,
    };

    /// <summary>The slow mode's spin, in the first op's body: its row (or an insert's key) stays
    /// held meanwhile, so others queue behind it, and an op of the same transaction queues after them.</summary>
    static void Slow(long mode, long amount)
    {
        if (mode == FuzzMode.Slow) Spin(TimeSpan.FromMilliseconds(amount % 10 + 1));
    }

    static void Spin(TimeSpan time)
    {
        var clock = System.Diagnostics.Stopwatch.StartNew();
        while (clock.Elapsed < time) Thread.SpinWait(100);
    }

    TxnProgram Transfer() => new ProgramBuilder("transfer", Db, 4)
        .Write("withdraw", "account", KeySource.FromArg(0), (row, args, _) =>
        {
            Slow(args[3], args[2]);
            return Add(row, -args[2]);
        })
        .Write("deposit", "account", KeySource.FromArg(1), (row, args, _) => Refuses(args[3]) ? TxnProgram.UserAbort : Add(row, args[2]), "withdraw")
        .Build();

    TxnProgram Post() => new ProgramBuilder("post", Db, 4)
        .Write("touch", "account", KeySource.FromArg(0), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row))
        .Insert("first", "ledger", KeySource.FromArg(1), (row, args, _) => Refuses(args[3]) ? TxnProgram.UserAbort : Fill(row, args[1]), "touch")
        .Insert("second", "ledger", KeySource.FromArg(2), (row, args, _) =>
        {
            Slow(args[3], args[2]); // claimed in key order: the lower key's claim is held meanwhile
            if (_holdClaims && args[3] == FuzzMode.Slow) HoldWhileClaimsAwaited(args);
            return Fill(row, args[2]);
        }, "touch")
        .Build();

    /// <summary>Spins while any insert waits for a claim (this post's lower key's, or another's),
    /// up to <see cref="HoldLimit"/>: with a deadline on every call, those waits must end by
    /// themselves, whatever holds the claims they wait for.</summary>
    void HoldWhileClaimsAwaited(ReadOnlySpan<long> args)
    {
        var clock = System.Diagnostics.Stopwatch.StartNew();
        while (Ledger.ClaimWaiters > 0)
        {
            if (clock.Elapsed > HoldLimit)
            {
                Interlocked.CompareExchange(ref _heldTooLong,
                    $"post({string.Join(", ", args[..4].ToArray())}) held its claims {HoldLimit.TotalSeconds} s while {Ledger.ClaimWaiters} insert(s) still waited for a claim, though every call had a deadline", null);
                return;
            }
            Thread.SpinWait(100);
        }
    }

    static long Fill(Span<byte> row, long key)
    {
        BinaryPrimitives.WriteInt64LittleEndian(row, key * 7 + 1);
        return key;
    }

    TxnProgram Read() => new ProgramBuilder("read", Db, 2)
        .Read("first", "account", KeySource.FromArg(0), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row))
        .Read("second", "account", KeySource.FromArg(1), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row))
        .Build();

    TxnProgram Audit()
    {
        var audit = new ProgramBuilder("audit", Db, 0);
        for (int a = 0; a < Accounts; a++)
        {
            long key = a;
            audit.Read($"balance{a}", "account", KeySource.Computed((_, _) => key), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row));
        }
        return audit.Build();
    }

    /// <summary>Whether an entry holds what its key's post wrote.</summary>
    public bool EntryHolds(long key)
    {
        int row = Ledger.Find(key);
        return row >= 0 && BinaryPrimitives.ReadInt64LittleEndian(Ledger.Payload(row)) == key * 7 + 1;
    }
}

/// <summary>What a body of a case throws when its mode says so.</summary>
public sealed class FuzzBodyException() : Exception("a body of the case threw, as its mode says");
