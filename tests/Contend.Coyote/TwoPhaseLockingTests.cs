using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Silo;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Coyote.Specifications;

namespace Contend.Coyote;

/// <summary>
/// NoWait, WaitDie, WaitsFor, Ordered, Mcs and Silo running three transactions on three shared rows: two transfers in
/// opposite lock orders (the workload that deadlocks 2PL without a policy) and an audit that
/// reads every row. Checked on every schedule: every transaction commits within the steps
/// bound (no deadlock: Mcs's wait threshold is far past the bound, so its deadlock detector
/// alone must end them), the history is serializable (the checker), the audit saw a total of
/// zero, and the rows still sum to zero.
/// </summary>
public static class TwoPhaseLockingTests
{
    const int Rows = 3;

    public static IEnumerable<CoyoteTest> All =>
    [
        new("NoWait", () => Run("NoWait", TwoPhaseLockingMutants.None)),
        new("NoWaitTwinIgnoreLock", () => Run("NoWait", TwoPhaseLockingMutants.NoWaitIgnoreLock), CaughtBy: "serializ"),
        new("WaitDie", () => Run("WaitDie", TwoPhaseLockingMutants.None)),
        new("WaitDieTwinYoungerWaits", () => Run("WaitDie", TwoPhaseLockingMutants.WaitDieYoungerWaits), CaughtBy: CoyoteSuite.StepsBound),
        new("WaitsFor", () => Run("WaitsFor", TwoPhaseLockingMutants.None), Iterations: 2_500),
        new("WaitsForTwinMissesTwoCycles", () => Run("WaitsFor", TwoPhaseLockingMutants.WaitsForMissesTwoCycles), CaughtBy: CoyoteSuite.StepsBound),
        new("Ordered", () => Run("Ordered", TwoPhaseLockingMutants.None), Iterations: 2_500),
        new("OrderedTwinInProgramOrder", () => Run("Ordered", TwoPhaseLockingMutants.OrderedInProgramOrder), CaughtBy: CoyoteSuite.StepsBound),
        new("Silo", () => Run("Silo", SiloMutants.None), Iterations: 2_500),
        new("SiloTwinSkipValidation", () => Run("Silo", SiloMutants.SkipValidation), CaughtBy: "serializ", OrCaughtBy: "rows sum"),
        new("McsDetect", () => Run("Mcs", TwoPhaseLockingMutants.None), Iterations: 2_500),
        new("McsDetectGivingUp", () => Run("Mcs", TwoPhaseLockingMutants.None, new McsOptions(GiveUpQueuedNodes: true)), Iterations: 2_500),
        new("McsTwinNoDetection", () => Run("Mcs", TwoPhaseLockingMutants.McsNoDetection), CaughtBy: CoyoteSuite.StepsBound),
        new("McsDetectThroughReaders", () => RunReadersCycle(TwoPhaseLockingMutants.None), Iterations: 2_500),
        new("McsDetectThroughReadersGivingUp", () => RunReadersCycle(TwoPhaseLockingMutants.None, new McsOptions(GiveUpQueuedNodes: true)), Iterations: 2_500),
        new("McsTwinDetectorIgnoresReaders", () => RunReadersCycle(TwoPhaseLockingMutants.McsDetectorIgnoresReaders), CaughtBy: CoyoteSuite.StepsBound),
    ];

    /// <summary>Mcs with reader-writer locks: two transactions each read one row and then write
    /// the other, so that each writer waits at the head of its queue for the other's share, a
    /// cycle through shared holds only. Every transaction must commit within the steps bound
    /// (the detector must see a writer's wait for readers) and the history be serializable.</summary>
    static async Task RunReadersCycle(TwoPhaseLockingMutants mutants, McsOptions? options = null)
    {
        using var db = new Database();
        var table = db.Create("account", sizeof(long), 2);
        for (int key = 0; key < 2; key++) table.Load(key);
        var readThenWrite = new ProgramBuilder("read-then-write", db, 2)
            .Read("read", "account", KeySource.FromArg(0), (row, a, r) => Value(row))
            .Write("write", "account", KeySource.FromArg(1), (row, a, r) => Add(row, 1))
            .Build();
        var recorder = new HistoryRecorder(2);
        var protocol = (ITransactionProtocol)ProtocolRegistry.Create("Mcs", new ProtocolSetup(db, 2) { Mutants = mutants, Options = options });
        var timestamps = new long[1];
        Task Start(int worker, params long[] args) => Task.Run(() =>
        {
            var ctx = new TxnContext(worker, recorder);
            args.CopyTo(ctx.Args, 0);
            ctx.Start(readThenWrite, Interlocked.Increment(ref timestamps[0]));
            ulong rng = Rng.Seed(7, worker);
            for (int retries = 0; protocol.Run(ctx, out _) != Outcome.Committed; retries++) Spin.Backoff(retries, ref rng);
        });
        await Task.WhenAll(Start(0, 0, 1), Start(1, 1, 0));
        var report = SerializabilityChecker.Check(recorder.Collect());
        Specification.Assert(report.Serializable, $"Mcs: history not serializable: {report.Anomalies.FirstOrDefault()?.Kind} {report.Anomalies.FirstOrDefault()?.Description}");
        long total = Value(table.Payload(table.Find(0))) + Value(table.Payload(table.Find(1)));
        Specification.Assert(total == 2, $"Mcs: the rows sum to {total}, not 2: a write was lost or doubled");
    }

    static async Task Run(string protocolName, Enum mutants, ProtocolOptions? options = null)
    {
        using var db = new Database();
        var table = db.Create("account", sizeof(long), Rows);
        for (int key = 0; key < Rows; key++) table.Load(key);
        var transfer = new ProgramBuilder("transfer", db, 2)
            .Write("debit", "account", KeySource.FromArg(0), (row, a, r) => Add(row, -1))
            .Write("credit", "account", KeySource.FromArg(1), (row, a, r) => Add(row, +1))
            .Build();
        var audit = new ProgramBuilder("audit", db, Rows);
        for (int i = 0; i < Rows; i++) audit.Read($"read{i}", "account", KeySource.FromArg(i), (row, a, r) => Value(row));
        var auditProgram = audit.Build();

        var recorder = new HistoryRecorder(3);
        var protocol = (ITransactionProtocol)ProtocolRegistry.Create(protocolName, new ProtocolSetup(db, 3) { Mutants = mutants, Options = options });
        var timestamps = new long[1];
        var auditSum = new long[1];

        Task Start(int worker, TxnProgram program, params long[] args) => Task.Run(() =>
        {
            var ctx = new TxnContext(worker, recorder);
            args.CopyTo(ctx.Args, 0);
            ctx.Start(program, Interlocked.Increment(ref timestamps[0]));
            ulong rng = Rng.Seed(7, worker);
            for (int retries = 0; protocol.Run(ctx, out _) != Outcome.Committed; retries++) Spin.Backoff(retries, ref rng);
            if (program == auditProgram) auditSum[0] = ctx.Results.AsSpan(0, Rows).ToArray().Sum();
        });

        await Task.WhenAll(Start(0, transfer, 0, 1), Start(1, transfer, 1, 0), Start(2, auditProgram, 0, 1, 2));

        var report = SerializabilityChecker.Check(recorder.Collect());
        Specification.Assert(report.Serializable, $"{protocolName}: history not serializable: {report.Anomalies.FirstOrDefault()?.Kind} {report.Anomalies.FirstOrDefault()?.Description}");
        Specification.Assert(auditSum[0] == 0, $"{protocolName}: the audit saw a total of {auditSum[0]}, not 0 (not serializable)");
        long total = 0;
        for (int key = 0; key < Rows; key++) total += Value(table.Payload(table.Find(key)));
        Specification.Assert(total == 0, $"{protocolName}: the rows sum to {total}, not 0 (not serializable)");
    }

    static long Value(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    static long Add(Span<byte> row, long delta)
    {
        long v = Value(row) + delta;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }
}
