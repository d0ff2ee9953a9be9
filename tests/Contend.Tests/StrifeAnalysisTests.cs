using System.Buffers.Binary;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
// The harness's Orleans packages bring a global `using Orleans;`, which has a BatchWorker too.
using BatchWorker = Contend.Engine.Runtime.BatchWorker;

namespace Contend.Tests;

/// <summary>
/// Strife's analysis on one thread (<see cref="StrifeProtocol.AnalyseAlone"/>): a transaction with
/// a key the index does not hold is left to the residual, since the key may be inserted before
/// it runs (the overlap analyses a batch while the one before it inserts); the others are
/// clustered as their rows say.
/// </summary>
public class StrifeAnalysisTests
{
    const long Missing = 999;

    sealed class Alternating(TxnProgram onRow, TxnProgram withMissing) : ITransactionSource
    {
        int _drawn;

        public TxnProgram Next(TxnContext ctx)
        {
            bool missing = _drawn++ % 2 == 1;
            ctx.Args[0] = _drawn % 4; // onRow on rows 1 and 3, withMissing on rows 0 and 2: they never share a row
            ctx.Args[1] = Missing;
            return missing ? withMissing : onRow;
        }
    }

    static long Increment(Span<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }

    static long Read(ReadOnlySpan<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results) => BinaryPrimitives.ReadInt64LittleEndian(row);

    /// <summary>A database whose table "rec" holds keys 0 to 7.</summary>
    static Database EightRows()
    {
        var db = new Database();
        var table = db.Create("rec", sizeof(long), 16);
        for (int key = 0; key < 8; key++) table.Load(key);
        return db;
    }

    /// <summary>One batch of eight transactions drawn from the source, analysed on one thread.</summary>
    static StrifeBatchView AnalyseOneBatch(Database db, ITransactionSource source)
    {
        var strife = new StrifeProtocol(ProtocolSetup.For(db, 2), new StrifeOptions(BatchSize: 8, Alpha: 1.0, SpotRounds: 8));
        var worker = new BatchWorker(new TxnContext(0, null), source, new WorkerStats(), 1, RunControl.Fixed(long.MaxValue));
        return strife.AnalyseAlone(worker);
    }

    [Fact]
    public void TransactionWithAMissingKeyIsResidual()
    {
        using var db = EightRows();
        var onRow = new ProgramBuilder("onRow", db, 2).Write("w", "rec", KeySource.FromArg(0), Increment).Build();
        var withMissing = new ProgramBuilder("withMissing", db, 2)
            .Write("w", "rec", KeySource.FromArg(0), Increment)
            .Read("r", "rec", KeySource.FromArg(1), Read)
            .Build();

        var view = AnalyseOneBatch(db, new Alternating(onRow, withMissing));

        Assert.Equal(8, view.Count);
        for (int slot = 0; slot < view.Count; slot++)
        {
            if (view.Program(slot) == withMissing) Assert.True(view.Cluster(slot) == -1, $"slot {slot} reads missing key {Missing} but is in cluster {view.Cluster(slot)}");
            else Assert.True(view.Cluster(slot) > 0, $"slot {slot} touches one row only, yet is residual");
        }
        Assert.Equal(4, view.Residuals);
    }

    /// <summary>One program on two distinct rows of eight, drawn in turn.</summary>
    sealed class OnTwoRows(TxnProgram program) : ITransactionSource
    {
        int _drawn;

        public TxnProgram Next(TxnContext ctx)
        {
            ctx.Args[0] = _drawn % 8;
            ctx.Args[1] = (_drawn + 3) % 8;
            _drawn++;
            return program;
        }
    }

    [Fact]
    public void ARowReadAndWrittenIsListedOnce()
    {
        using var db = EightRows();
        var program = new ProgramBuilder("readThenWrite", db, 2)
            .Read("r0", "rec", KeySource.FromArg(0), Read)
            .Read("r1", "rec", KeySource.FromArg(1), Read)
            .Write("w0", "rec", KeySource.FromArg(0), Increment)
            .Read("r0again", "rec", KeySource.FromArg(0), Read)
            .Build();

        var view = AnalyseOneBatch(db, new OnTwoRows(program));

        for (int slot = 0; slot < view.Count; slot++) Assert.Equal(2, view.Rows(slot));
    }
}
