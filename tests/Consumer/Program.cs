using Contend.Engine.Protocols.ReactDB;
// docs: engine begin
using System.Buffers.Binary;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

// Two accounts of 1,000, a transfer of 250 and an overdraft of 5,000.
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

await using var engine = new ContendEngine(db, new EngineOptions { Protocol = "StealDB", Workers = 2 });
var results = new long[2];
var outcome = await engine.ExecuteAsync(transfer, [0, 1, 250], results);
var refused = await engine.ExecuteAsync(transfer, [0, 1, 5_000]);
Console.WriteLine($"transfer: {outcome.Outcome}, balances {results[0]} and {results[1]}; overdraft: {refused.Outcome} ({refused.Reason})");
// docs: engine end

// docs: reactdb begin
// The same transfer between two reactors in two containers: a root on alice's container and a
// sub-transaction queued on bob's, committed by ReactDB's two-container commit.
var mart = new Database();
foreach (var owner in new[] { "alice", "bob" }) mart.Create($"{owner}.balance", sizeof(long), capacity: 1).Load(0, opening);
var deployment = new ReactorDeployment(mart, containers: 2);
var (alice, bob) = (deployment.Add("alice", 0, "balance"), deployment.Add("bob", 1, "balance"));
var credit = new ReactorFunction("credit", (call, amount) =>
    ValueTask.FromResult(call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, amount.Span[0]))));
var pay = new ReactorFunction("pay", async (call, amount) =>
{
    long left = call.Write(call.Reactor.Relation("balance"), 0, row => Add(row, -amount.Span[0]));
    if (left < 0) call.AbortRoot(); // nothing of the root is written, here or at bob's
    long theirs = await call.CallAsync(bob, credit, amount);
    return left * 10_000 + theirs; // a root returns one number: both balances in it
});
await using var reactors = new ReactDbEngine(deployment, new ReactDbOptions());
var paid = await reactors.ExecuteAsync(alice, pay, new long[] { 250 });
var unpaid = await reactors.ExecuteAsync(alice, pay, new long[] { 5_000 });
Console.WriteLine($"reactor transfer: {paid.Outcome.Outcome}, balances {paid.Value / 10_000} and {paid.Value % 10_000}; overdraft: {unpaid.Outcome.Outcome} ({unpaid.Outcome.Reason})");
// docs: reactdb end
return outcome.Committed && paid.Outcome.Committed ? 0 : 1;

static long Add(Span<byte> row, long amount)
{
    long balance = BinaryPrimitives.ReadInt64LittleEndian(row) + amount;
    BinaryPrimitives.WriteInt64LittleEndian(row, balance);
    return balance;
}
