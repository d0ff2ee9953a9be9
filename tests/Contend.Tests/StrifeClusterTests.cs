using System.Buffers.Binary;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

/// <summary>
/// Strife's conflict-free phase writes in place with no before-image when a program declares
/// that its bodies never abort, so a full table must be found before the first write: every
/// transaction here increments a counter and inserts one row into a table with room for 20,
/// and whatever aborted for want of room must have left its counter alone.
/// </summary>
public class StrifeClusterTests
{
    const int Counters = 4, Room = 20, PerWorker = 32;

    sealed class IncrementAndLog : IWorkload
    {
        public TxnProgram Program = null!;
        public string Name => "increment-and-log";
        public string Describe() => $"increment one of {Counters} counters and insert a row into a table with room for {Room}";

        public void Load(Database db)
        {
            var counters = db.Create("counter", sizeof(long), Counters);
            for (int key = 0; key < Counters; key++) counters.Load(key);
            db.Create("log", sizeof(long), Room);
            Program = new ProgramBuilder("incrementAndLog", db, 2)
                .Write("increment", "counter", KeySource.FromArg(0), (row, a, r) =>
                {
                    BinaryPrimitives.WriteInt64LittleEndian(row, BinaryPrimitives.ReadInt64LittleEndian(row) + 1);
                    return 0;
                })
                .Insert("log", "log", KeySource.FromArg(1), (row, a, r) =>
                {
                    BinaryPrimitives.WriteInt64LittleEndian(row, a[0]);
                    return 0;
                })
                .BodiesNeverAbort()
                .Build();
        }

        public ITransactionSource CreateSource(int worker, ulong seed) => new Source(Program, worker);

        sealed class Source(TxnProgram program, int worker) : ITransactionSource
        {
            int _drawn;

            public TxnProgram Next(TxnContext ctx)
            {
                ctx.Args[0] = _drawn % Counters; // a counter each: transactions on one counter form a cluster
                ctx.Args[1] = LogKey(worker, _drawn++);
                return program;
            }
        }
    }

    static long LogKey(int worker, int drawn) => worker * 1_000_000L + drawn;

    /// <summary>The twin (<see cref="StrifeMutants.ImagelessNoReserve"/>) must leave writes behind.</summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void AFullTableAbortsAClusteredTransactionBeforeItWrites(bool twin)
    {
        var workload = new IncrementAndLog();
        using var db = new Database();
        workload.Load(db);
        var setup = ProtocolSetup.For(db, 2) with { Mutants = twin ? StrifeMutants.ImagelessNoReserve : StrifeMutants.None };
        var strife = new StrifeProtocol(setup, new StrifeOptions(BatchSize: 16));
        var result = WorkerPool.Run(strife, workload, new RunOptions(Threads: 2, Seconds: 0, RecordHistory: true, Pin: false, TransactionsPerWorker: PerWorker));

        Assert.True(strife.Counts.Residuals < strife.Counts.Transactions, "every transaction went to the residual: the conflict-free phase never ran");
        Assert.Equal(Room, result.Total.Commits);
        Assert.Equal(2 * PerWorker - Room, result.Total.Aborts[(int)AbortReason.TableFull]);
        db.TryGet("counter", out var counters);
        db.TryGet("log", out var log);
        long increments = Enumerable.Range(0, Counters).Sum(row => BinaryPrimitives.ReadInt64LittleEndian(counters.Payload(row)));
        if (twin)
        {
            Assert.True(increments > result.Total.Commits, $"the twin's aborted transactions left no write behind ({increments} increments, {result.Total.Commits} commits)");
            return;
        }
        Assert.True(increments == result.Total.Commits, $"the counters hold {increments} increments for {result.Total.Commits} commits: an aborted transaction left its write behind");
        int logged = Enumerable.Range(0, 2).Sum(worker => Enumerable.Range(0, PerWorker).Count(drawn => log.Find(LogKey(worker, drawn)) >= 0));
        Assert.Equal(Room, logged);
        // Written without an image is still written: the commit installs its version, and the
        // history counts the write (else every transaction would look like a reader).
        Assert.All(result.History!, t => Assert.True(t.Accesses.Any(a => a.IsWrite && a.Version != HistoryRecorder.NewRow),
                                                     $"committed transaction {t.Id} overwrote no counter in the history"));
        for (int row = 0; row < Counters; row++)
        {
            bool written = BinaryPrimitives.ReadInt64LittleEndian(counters.Payload(row)) > 0;
            Assert.True(!written || Volatile.Read(ref counters.Version(row)) != 0, $"counter {row} was incremented, but its version is still the loaded one");
        }
        Assert.True(SerializabilityChecker.Check(result.History!).Serializable);
    }
}
