using System.Buffers.Binary;
using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests.TwoPhaseCommit;

/// <summary>
/// A bank split over partitions by a hash of the account: transfers between two accounts
/// (usually on two partitions; refused by the logic when the payer would go below zero),
/// audits that read several accounts, and account openings whose keys are drawn from a small
/// range, so that many collide with an opened one and are refused at prepare. Money is only
/// moved, never made: the balances' sum is the loaded sum after any run that is atomic.
/// </summary>
/// <param name="throwingKey">an opening of this key has an insert body that throws (a bug of the
/// program, met at prepare); -1: none does</param>
internal sealed class Bank(int accounts, int hot, long throwingKey = -1) : IPartitionedWorkload
{
    public const long Opening = 100;
    /// <summary>Opened accounts take keys from here up, a few times more keys than openings fit.</summary>
    public const long OpenedKeys = 1_000_000;
    const int OpenRange = 64;

    TxnProgram[] _programs = [];

    public string Name => "bank";

    public IReadOnlyList<TxnProgram> Programs => _programs;

    public long LoadedSum => _accounts * Opening;

    /// <summary>A transfer's debit of args[2] from the row's balance, refused (a user abort) when it
    /// would go below zero.</summary>
    internal static readonly OpBody Debit = (row, args, _) =>
    {
        long balance = BinaryPrimitives.ReadInt64LittleEndian(row);
        if (balance < args[2]) return TxnProgram.UserAbort;
        BinaryPrimitives.WriteInt64LittleEndian(row, balance - args[2]);
        return balance - args[2];
    };

    /// <summary>A transfer's credit of args[2] to the row's balance; never refuses.</summary>
    internal static readonly OpBody Credit = (row, args, _) =>
    {
        long balance = BinaryPrimitives.ReadInt64LittleEndian(row) + args[2];
        BinaryPrimitives.WriteInt64LittleEndian(row, balance);
        return balance;
    };

    public void Load(Database db, int partition, IPartitionMap map)
    {
        var account = db.Create("account", sizeof(long), _accounts + 4096);
        for (long a = 0; a < _accounts; a++)
            if (map.PartitionOf(account.Id, a) == partition)
                BinaryPrimitives.WriteInt64LittleEndian(account.Payload(account.Load(a)), Opening);
        var transfer = new ProgramBuilder("transfer", db, 3)
            .Write("debit", "account", KeySource.FromArg(0), Debit)
            .Write("credit", "account", KeySource.FromArg(1), Credit, "debit")
            // Under Chiller the credit can run after the inner region (the debit) commits.
            .NeverAborts("credit")
            .Build();
        var audit = new ProgramBuilder("audit", db, 3);
        for (int i = 0; i < 3; i++)
            audit.Read($"read{i}", "account", KeySource.FromArg(i), (row, _, _) => BinaryPrimitives.ReadInt64LittleEndian(row));
        // An opening moves money from an existing account into the new one, so a half-made
        // opening shows in the sum too.
        var open = new ProgramBuilder("open", db, 2)
            .Write("fund", "account", KeySource.FromArg(0), (row, _, _) =>
            {
                long balance = BinaryPrimitives.ReadInt64LittleEndian(row);
                if (balance < 1) return TxnProgram.UserAbort;
                BinaryPrimitives.WriteInt64LittleEndian(row, balance - 1);
                return balance - 1;
            })
            .Insert("new", "account", KeySource.FromArg(1), (row, args, _) =>
            {
                if (args[1] == throwingKey) throw new InvalidOperationException($"account {args[1]} may not be opened");
                BinaryPrimitives.WriteInt64LittleEndian(row, 1);
                return 1;
            })
            .Build();
        _programs = [transfer, audit.Build(), open];
    }

    public ITransactionSource CreateSource(int stream, ulong seed, IReadOnlyList<int> homePartitions) => new Source(this, new Random((int)(seed ^ (seed >> 29))));

    /// <summary>Every account's balance, on whichever partition holds it.</summary>
    public static long Sum(IReadOnlyList<Database> partitions)
    {
        long sum = 0;
        foreach (var db in partitions)
        {
            var t = db.Tables[0];
            for (int row = 0; row < t.RowsEverUsed; row++)
                if (t.Find(t.Key(row)) == row) sum += BinaryPrimitives.ReadInt64LittleEndian(t.Payload(row));
        }
        return sum;
    }

    sealed class Source(Bank bank, Random random) : ITransactionSource
    {
        public TxnProgram Next(TxnContext ctx)
        {
            int pick = random.Next(10);
            if (pick < 6)
            {
                long from = Account(), to;
                do to = Account(); while (to == from);
                ctx.Args[0] = from;
                ctx.Args[1] = to;
                ctx.Args[2] = 1 + random.Next(60);
                return bank._programs[0];
            }
            if (pick < 9)
            {
                for (int i = 0; i < 3; i++) ctx.Args[i] = Account();
                return bank._programs[1];
            }
            ctx.Args[0] = Account();
            ctx.Args[1] = OpenedKeys + random.Next(OpenRange);
            return bank._programs[2];
        }

        /// <summary>Half the draws from the first <c>hot</c> accounts, so that transfers conflict.</summary>
        long Account() => random.Next(2) == 0 ? random.Next(bank._hot) : random.Next(bank._accounts);
    }

    readonly int _accounts = accounts, _hot = hot;
}
