using System.Buffers.Binary;
using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Harness.Workloads;

/// <summary>
/// YCSB as DBx1000 runs it: one table of <c>rows</c> records of 100 bytes; a transaction
/// draws <c>requests</c> keys from DBx1000's Zipf generator over 1..rows-1 and makes one
/// request per distinct key (a key drawn again is dropped, as DBx1000's gen_requests does,
/// so skewed transactions are shorter), each a read with probability <c>readFraction</c> and
/// otherwise an update of the record.
/// With <c>partitions</c> P > 1 (Strife's YCSB, seed 002 Section 4.3), the rows are split into P
/// equal ranges, a transaction belongs to one range chosen uniformly, and its keys are drawn
/// by the Zipf generator within that range: each range has its own hot keys, and no
/// transaction crosses ranges.
/// </summary>
/// <remarks>Across a cluster (<see cref="IPartitionedWorkload"/>) the records are spread by the
/// cluster's map instead, each partition loading its share, and a transaction's keys fall
/// wherever the map puts them: with P partitions, most touch several.</remarks>
/// <param name="table">the table's name: a ReactDB reactor's relation is named "reactor.relation"</param>
internal sealed class Ycsb(long rows, int requests, double readFraction, double theta, int partitions = 1, string table = "usertable") : IWorkload, IPartitionedWorkload
{
    public const int RecordSize = 100;
    readonly int _requests = requests;
    readonly double _readFraction = readFraction;
    /// <summary>By request count: a transaction with k distinct keys runs _programs[k].</summary>
    readonly TxnProgram[] _programs = new TxnProgram[requests + 1];
    Zipf _zipf = null!;
    long _partitionRows;
    readonly int _partitions = partitions;

    public string Name => "ycsb";

    public string Describe() =>
        $"YCSB: {rows:N0} rows x {RecordSize} B{(_partitions > 1 ? $" in {_partitions} partitions" : "")}, {_requests} requests per transaction, {_readFraction:P0} reads, theta {theta}; " +
        "a key drawn twice in a transaction is dropped (DBx1000's rule); no inserts, scans or deletes";

    public void Load(Database db)
    {
        Prepare();
        var usertable = db.Create(table, RecordSize, (int)rows);
        for (long key = 0; key < rows; key++) LoadRecord(usertable, key);
        BuildPrograms(db);
    }

    public IReadOnlyList<TxnProgram> Programs => _programs[1..];

    /// <summary>One partition's share of the records, as the cluster's map places them.</summary>
    public void Load(Database db, int partition, IPartitionMap map)
    {
        Prepare();
        // A hash map's shares differ by a few standard deviations at most: a quarter more than
        // the even share, and a little for small tables, holds any of them.
        long capacity = Math.Min(rows, rows / map.Partitions + rows / map.Partitions / 4 + 1024);
        var usertable = db.Create(table, RecordSize, (int)capacity);
        for (long key = 0; key < rows; key++)
            if (map.PartitionOf(usertable.Id, key) == partition) LoadRecord(usertable, key);
        BuildPrograms(db);
    }

    void Prepare()
    {
        if (rows < 2 || rows > int.MaxValue) throw new ArgumentOutOfRangeException(nameof(rows), $"ycsb: rows = {rows} must be in 2..{int.MaxValue}");
        if (_requests < 1 || _requests > TxnContext.MaxOps) throw new ArgumentOutOfRangeException("requests", $"ycsb: requests = {_requests} must be in 1..{TxnContext.MaxOps}");
        if (_readFraction is < 0 or > 1) throw new ArgumentOutOfRangeException("readFraction", $"ycsb: read fraction {_readFraction} must be in [0, 1]");
        if (_partitions < 1 || _partitions > rows / 2) throw new ArgumentOutOfRangeException("partitions", $"ycsb: partitions = {_partitions} must be in 1..rows/2");
        _partitionRows = rows / _partitions;
        _zipf = new Zipf(_partitionRows - 1, theta);
    }

    static void LoadRecord(Table table, long key)
    {
        int row = table.Load(key);
        BinaryPrimitives.WriteInt64LittleEndian(table.Payload(row), key);
    }

    void BuildPrograms(Database db)
    {
        for (int count = 1; count <= _requests; count++)
        {
            var builder = new ProgramBuilder($"ycsb_{count}", db, 2 * _requests);
            for (int i = 0; i < count; i++)
                builder.ReadOrWrite($"request{i}", table, KeySource.FromArg(i), _requests + i, Fields.ReadFirst, Fields.IncrementFirst);
            _programs[count] = builder.BodiesNeverAbort().Build();
        }
    }

    /// <summary>A worker's stream, or a cluster coordinator slot's (<paramref name="worker"/> is then the slot's stream number).</summary>
    public ITransactionSource CreateSource(int worker, ulong seed) => new Source(this, Rng.Seed(seed, worker));

    /// <summary>A cluster coordinator slot's stream: YCSB's transactions have no home, so every slot draws over all keys.</summary>
    public ITransactionSource CreateSource(int stream, ulong seed, IReadOnlyList<int> homePartitions) => CreateSource(stream, seed);

    sealed class Source(Ycsb w, ulong rng) : ITransactionSource
    {
        ulong _rng = rng;

        public TxnProgram Next(TxnContext ctx)
        {
            var args = ctx.Args;
            int n = w._requests, count = 0;
            long first = w._partitions == 1 ? 0 : (long)(Rng.Next(ref _rng) % (ulong)w._partitions) * w._partitionRows;
            for (int draw = 0; draw < n; draw++)
            {
                long write = Rng.NextDouble(ref _rng) < w._readFraction ? 0 : 1;
                long key = first + w._zipf.Next(ref _rng);
                bool fresh = true;
                for (int j = 0; j < count; j++) fresh &= args[j] != key;
                if (!fresh) continue;
                args[count] = key;
                args[n + count] = write;
                count++;
            }
            return w._programs[count];
        }
    }
}
