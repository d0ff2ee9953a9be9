using System.Buffers.Binary;
using Contend.Engine.Programs;
using Contend.Engine.Storage;

namespace Contend.Samples.Bank;

/// <summary>The bank's schema and programs: one table of accounts, each a balance in cents.</summary>
public sealed class Bank
{
    /// <summary>Most accounts an audit reads in one transaction (a transaction has at most 64 ops).</summary>
    public const int MaxAccounts = 64;

    public int Accounts { get; }
    public long Opening { get; }

    /// <summary>Moves args[2] from account args[0] to account args[1]; results: the two balances after.</summary>
    public TxnProgram Transfer { get; }

    /// <summary>Reads account args[0]; result: its balance.</summary>
    public TxnProgram Balance { get; }

    /// <summary>Reads every account in one transaction; results: each balance.</summary>
    public TxnProgram Audit { get; }

    static readonly OpBody Withdraw = (row, args, _) =>
    {
        long balance = BinaryPrimitives.ReadInt64LittleEndian(row);
        if (balance < args[2]) return TxnProgram.UserAbort; // not enough money: nothing is written
        BinaryPrimitives.WriteInt64LittleEndian(row, balance - args[2]);
        return balance - args[2];
    };

    static readonly OpBody Deposit = (row, args, _) =>
    {
        long balance = BinaryPrimitives.ReadInt64LittleEndian(row) + args[2];
        BinaryPrimitives.WriteInt64LittleEndian(row, balance);
        return balance;
    };

    static readonly ReadBody Read = (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row);

    Bank(Database db, int accounts, long opening)
    {
        Accounts = accounts;
        Opening = opening;
        Transfer = new ProgramBuilder("transfer", db, 3)
            .Write("withdraw", "account", KeySource.FromArg(0), Withdraw)
            .Write("deposit", "account", KeySource.FromArg(1), Deposit)
            .Build();
        Balance = new ProgramBuilder("balance", db, 1).Read("read", "account", KeySource.FromArg(0), Read).BodiesNeverAbort().Build();
        var audit = new ProgramBuilder("audit", db, accounts);
        for (int a = 0; a < accounts; a++) audit.Read($"read{a}", "account", KeySource.FromArg(a), Read);
        Audit = audit.BodiesNeverAbort().Build();
    }

    /// <summary>Creates and loads the accounts table of <paramref name="db"/> and builds the programs.</summary>
    public static Bank Open(Database db, int accounts, long opening)
    {
        if (accounts is < 2 or > MaxAccounts)
            throw new ArgumentOutOfRangeException(nameof(accounts), accounts, $"Bank:Accounts {accounts}: must be 2..{MaxAccounts}");
        if (opening < 0)
            throw new ArgumentOutOfRangeException(nameof(opening), opening, $"Bank:Opening {opening}: must not be negative");
        var table = db.Create("account", sizeof(long), accounts);
        var balance = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(balance, opening);
        for (long a = 0; a < accounts; a++) table.Load(a, balance);
        return new Bank(db, accounts, opening);
    }

    /// <summary>Null when <paramref name="account"/> is one of the bank's; else what is wrong.</summary>
    public string? Unknown(long account) =>
        account >= 0 && account < Accounts ? null : $"account {account} does not exist (accounts are 0..{Accounts - 1})";
}
