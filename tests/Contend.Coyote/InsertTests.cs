using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote;

/// <summary>
/// Inserts refused at prepare, among concurrent transactions: one post's insert body throws,
/// two others race to insert the same key, all over the same two accounts. Checked on every
/// schedule: the throw reaches its caller, exactly one of the racing posts commits and the
/// other ends DuplicateKey naming the key, the thrown post's key is absent and its deposit
/// undone, the history is serializable, and a sweep over both accounts then commits (a lock
/// left held makes it, or a racing post, wait or retry past the steps bound).
/// </summary>
public static class InsertTests
{
    const int Accounts = 2;
    const long Thrown = 5, Raced = 6;

    public static IEnumerable<CoyoteTest> All =>
    [
        new("InsertsNoWait", () => Run("NoWait", OpByOpMutants.None)),
        new("InsertsNoWaitTwinPrepareOutsideUndo", () => Run("NoWait", OpByOpMutants.PrepareOutsideUndo), CaughtBy: CoyoteSuite.StepsBound),
        new("InsertsSilo", () => Run("Silo", OpByOpMutants.None)),
        new("InsertsSiloTwinPrepareOutsideUndo", () => Run("Silo", OpByOpMutants.PrepareOutsideUndo), CaughtBy: CoyoteSuite.StepsBound),
    ];

    static long Amount(long key) => key * 7 + 3;

    static async Task Run(string protocolName, OpByOpMutants mutants)
    {
        using var db = new Database();
        var account = db.Create("account", sizeof(long), Accounts);
        for (int a = 0; a < Accounts; a++) account.Load(a);
        var entry = db.Create("entry", sizeof(long), 8);
        entry.Load(0);
        // args: account deposited into, entry key, 1 when the insert body throws, account touched
        var post = new ProgramBuilder("post", db, 4)
            .Write("deposit", "account", KeySource.FromArg(0), (row, _, _) => Add(row, 1))
            .Write("touch", "account", KeySource.FromArg(3), (row, _, _) => Add(row, 0))
            .Insert("record", "entry", KeySource.FromArg(1), (row, a, _) => a[2] != 0 ? throw new InvalidOperationException("boom") : Add(row, Amount(a[1])), "deposit")
            .Build();
        var sweep = new ProgramBuilder("sweep", db, 2)
            .Write("first", "account", KeySource.FromArg(0), (row, _, _) => Add(row, 0))
            .Write("second", "account", KeySource.FromArg(1), (row, _, _) => Add(row, 0))
            .Build();

        var recorder = new HistoryRecorder(4);
        var protocol = (ITransactionProtocol)ProtocolRegistry.Create(protocolName, new ProtocolSetup(db, 4) { Mutants = mutants });
        var timestamps = new long[1];
        var ended = new TxnOutcome[3];
        var raised = new bool[3];

        TxnOutcome Execute(int worker, TxnProgram program, long[] args)
        {
            var ctx = new TxnContext(worker, recorder);
            args.CopyTo(ctx.Args, 0);
            ctx.Start(program, Interlocked.Increment(ref timestamps[0]));
            ulong rng = Rng.Seed(11, worker);
            for (int attempt = 1; ; attempt++)
            {
                var outcome = protocol.Run(ctx, out var reason);
                if (outcome != Outcome.Aborted) return new TxnOutcome(outcome, reason, attempt, ctx.Duplicate);
                Spin.Backoff(attempt - 1, ref rng);
            }
        }

        Task Start(int worker, params long[] args) => Task.Run(() =>
        {
            try
            {
                ended[worker] = Execute(worker, post, args);
            }
            catch (InvalidOperationException e) when (e.Message == "boom")
            {
                raised[worker] = true;
            }
        });

        await Task.WhenAll(Start(0, 0, Thrown, 1, 1), Start(1, 1, Raced, 0, 0), Start(2, 0, Raced, 0, 1));
        // First, before anything reads the rows: a lock left held makes the sweep wait or retry for ever.
        Specification.Assert(Execute(3, sweep, [0, 1]).Committed, $"{protocolName}: the sweep did not commit");

        Specification.Assert(raised[0] && !raised[1] && !raised[2], $"{protocolName}: the throw reached {string.Join(",", raised)}");
        int winners = ended.Skip(1).Count(o => o.Committed);
        var loser = ended.Skip(1).FirstOrDefault(o => !o.Committed);
        Specification.Assert(winners == 1 && loser.Reason == AbortReason.DuplicateKey && loser.Duplicate == new DuplicateKey("post", "record", "entry", Raced),
                             $"{protocolName}: the racing inserts ended {ended[1]} and {ended[2]}: one must commit, the other end DuplicateKey");
        Specification.Assert(entry.Find(Thrown) < 0, $"{protocolName}: the thrown post's key is in the table");
        Specification.Assert(Value(entry.Payload(entry.Find(Raced))) == Amount(Raced), $"{protocolName}: the raced key's entry is not its committer's");
        long units = Value(account.Payload(account.Find(0))) + Value(account.Payload(account.Find(1)));
        Specification.Assert(units == 1, $"{protocolName}: the accounts hold {units} units, not the one committed post's");
        var report = SerializabilityChecker.Check(recorder.Collect());
        Specification.Assert(report.Serializable, $"{protocolName}: history not serializable: {report.Anomalies.FirstOrDefault()}");
    }

    static long Value(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    static long Add(Span<byte> row, long delta)
    {
        long v = Value(row) + delta;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }
}
