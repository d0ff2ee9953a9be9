using System.Buffers.Binary;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

// Two accounts, one transfer through the packed engine, and what it left.
var db = new Database();
var accounts = db.Create("account", sizeof(long), capacity: 2);
var opening = new byte[sizeof(long)];
BinaryPrimitives.WriteInt64LittleEndian(opening, 1_000);
accounts.Load(0, opening);
accounts.Load(1, opening);

OpBody withdraw = (row, args, _) =>
{
    long balance = BinaryPrimitives.ReadInt64LittleEndian(row);
    if (balance < args[2]) return TxnProgram.UserAbort;
    BinaryPrimitives.WriteInt64LittleEndian(row, balance - args[2]);
    return balance - args[2];
};
OpBody deposit = (row, args, _) =>
{
    long balance = BinaryPrimitives.ReadInt64LittleEndian(row) + args[2];
    BinaryPrimitives.WriteInt64LittleEndian(row, balance);
    return balance;
};
var transfer = new ProgramBuilder("transfer", db, 3)
    .Write("withdraw", "account", KeySource.FromArg(0), withdraw)
    .Write("deposit", "account", KeySource.FromArg(1), deposit)
    .Build();

await using var engine = new ContendEngine(db, new EngineOptions { Protocol = args.FirstOrDefault() ?? "StealDB", Workers = 2, Pin = false });
var results = new long[2];
var outcome = await engine.ExecuteAsync(transfer, [0, 1, 250], results);
var refused = await engine.ExecuteAsync(transfer, [0, 1, 5_000]);
Console.WriteLine($"transfer: {outcome.Outcome}, balances {results[0]} and {results[1]}; overdraft: {refused.Outcome} ({refused.Reason})");
return outcome.Committed ? 0 : 1;
