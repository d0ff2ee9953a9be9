using System.Buffers.Binary;
using System.Diagnostics;
using Contend.Engine.Protocols;
using Contend.Engine.Storage;

namespace Contend.Engine.Durability;

/// <summary>What an engine found in its data directory when it opened it.</summary>
/// <param name="Transactions">commits replayed from the log (after the checkpoint's)</param>
/// <param name="Epoch">the durable epoch recovered: every commit acknowledged before the crash was of it or earlier</param>
/// <param name="Rows">rows in the checkpoint written after recovery</param>
/// <param name="Elapsed">from opening the directory to serving</param>
/// <param name="StoppedAt">where a log file could not be read to its end (a record torn by the crash,
/// or damaged), in words; null: every file was read whole</param>
public sealed record RecoveryReport(long Transactions, long Epoch, long Rows, TimeSpan Elapsed, string? StoppedAt)
{
    /// <summary>True when the directory was empty: nothing was recovered, and the loaded rows are its first checkpoint.</summary>
    public bool Fresh { get; init; }
}

/// <summary>
/// Opening a data directory (spec: RecoverRead, RecoverInstall): the checkpoint, then the log of its
/// generation up to the durable epoch its files show, the newest commit id of a row winning; then a
/// checkpoint of what was recovered and a new generation of log files. Until that checkpoint's
/// rename nothing on the disk changes, so a crash during recovery leaves it to be done again.
/// </summary>
internal static class DirectoryRecovery
{
    public sealed class Opened(IDisposable claim, EpochLog log, RecoveryReport report)
    {
        public IDisposable Claim => claim;
        public EpochLog Log => log;
        public RecoveryReport Report => report;
    }

    /// <param name="mutants">the tests' broken steps (<see cref="DurabilityMutants"/>), or null</param>
    public static Opened Open(ILogStorage storage, Database db, string name, int workers, int loggers, TimeSpan epochLength, Action<Exception> onFailed, Enum? mutants = null)
    {
        var inFileOrder = new MutantFlag(mutants, DurabilityMutants.ApplyInFileOrder);
        var clock = Stopwatch.StartNew();
        var claim = storage.Claim();
        try
        {
            foreach (var table in db.Tables) table.EnsureCommitIds();
            long schema = LogFormat.SchemaHash(db);
            var files = storage.Files();
            long generation = 0, epoch = 0, replayed = 0;
            string? stopped = null;
            bool fresh = !files.Contains(LogFormat.CheckpointName);
            if (fresh)
            {
                if (files.FirstOrDefault(f => f.StartsWith("log-", StringComparison.Ordinal)) is { } stray)
                    throw new DataDirectoryException(storage.Where, $"it holds log file {stray} but no checkpoint: it was not written by this engine, or its checkpoint was removed");
            }
            else
            {
                (generation, epoch) = ReadCheckpoint(storage, db, schema);
                (epoch, replayed, stopped) = ReplayLogs(storage, db, schema, generation, epoch, files, inFileOrder);
            }
            generation++;
            long rows = WriteCheckpoint(storage, db, schema, generation, epoch);
            foreach (var file in files)
                if (file.StartsWith("log-", StringComparison.Ordinal) || file == LogFormat.CheckpointTemporaryName) storage.Delete(file);
            var logs = new (ILogFile, uint)[loggers];
            for (int l = 0; l < loggers; l++)
            {
                var file = storage.Create(LogFormat.LogName(generation, l));
                var header = LogFormat.LogHeader(l, generation, schema);
                file.Append(header);
                file.Sync();
                logs[l] = (file, BinaryPrimitives.ReadUInt32LittleEndian(header.AsSpan(LogFormat.LogHeaderSize - 4)));
            }
            var log = new EpochLog(name, workers, logs, epoch + 1, epochLength, onFailed, mutants);
            return new Opened(claim, log, new RecoveryReport(replayed, epoch, rows, clock.Elapsed, stopped) { Fresh = fresh });
        }
        catch
        {
            claim.Dispose();
            throw;
        }
    }

    static (long Generation, long Epoch) ReadCheckpoint(ILogStorage storage, Database db, long schema)
    {
        var bytes = storage.Read(LogFormat.CheckpointName);
        var where = $"{storage.Where}, {LogFormat.CheckpointName}";
        if (bytes.Length < LogFormat.CheckpointHeaderSize + 4 || !bytes.AsSpan(0, 8).SequenceEqual(LogFormat.CheckpointMagic))
            throw new DataDirectoryException(storage.Where, $"{LogFormat.CheckpointName} is not a Contend checkpoint");
        int format = BinaryPrimitives.ReadInt32LittleEndian(bytes.AsSpan(8));
        if (format != LogFormat.Version)
            throw new DataDirectoryException(storage.Where, $"written in format {format}; this engine reads format {LogFormat.Version}");
        uint crc = LogFormat.Crc(0, bytes.AsSpan(0, LogFormat.CheckpointHeaderSize - 4));
        if (crc != BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(LogFormat.CheckpointHeaderSize - 4)))
            throw new DataDirectoryException(storage.Where, $"{LogFormat.CheckpointName}'s header is damaged (checksum)");
        long generation = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(12));
        long epoch = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(20));
        long written = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(28));
        long count = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(36));
        if (written != schema)
            throw new DataDirectoryException(storage.Where, $"written for another schema than this database's ({LogFormat.DescribeSchema(db)})");
        int at = LogFormat.CheckpointHeaderSize;
        uint rowsCrc = crc;
        for (long i = 0; i < count; i++)
        {
            if (at + LogFormat.WriteHeaderSize + 8 > bytes.Length) throw Damaged(where, at, "ends inside a row");
            int tableId = BinaryPrimitives.ReadUInt16LittleEndian(bytes.AsSpan(at));
            if (tableId >= db.Tables.Count) throw Damaged(where, at, $"names table {tableId}, and the schema has {db.Tables.Count}");
            var table = db[tableId];
            int size = LogFormat.WriteHeaderSize + 8 + table.PayloadSize;
            if (at + size > bytes.Length) throw Damaged(where, at, "ends inside a row");
            long key = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(at + 2));
            long commitId = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(at + 10));
            Put(table, key, commitId, bytes.AsSpan(at + 18, table.PayloadSize), always: true);
            rowsCrc = LogFormat.Crc(rowsCrc, bytes.AsSpan(at, size));
            at += size;
        }
        if (at + 4 != bytes.Length || BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(at)) != rowsCrc)
            throw Damaged(where, at, "its rows' checksum does not match");
        return (generation, epoch);
    }

    static DataDirectoryException Damaged(string where, int at, string what) =>
        new(where, $"damaged at byte {at}: {what} (a checkpoint is synced before it is renamed into place, so no crash leaves it so)");

    /// <summary>One log file as far as it reads: its commit records and its last mark.</summary>
    sealed record LogFile(string Name, byte[] Bytes, List<int> Commits, long LastMark, string? Stopped);

    static (long Epoch, long Replayed, string? Stopped) ReplayLogs(ILogStorage storage, Database db, long schema, long generation, long checkpointEpoch, IReadOnlyList<string> files, bool inFileOrder)
    {
        string prefix = $"log-{generation:D6}-";
        var logs = files.Where(f => f.StartsWith(prefix, StringComparison.Ordinal)).Select(f => ReadLog(storage, db, schema, generation, f)).ToList();
        if (logs.Count == 0) return (checkpointEpoch, 0, null);
        long durable = Math.Max(checkpointEpoch, logs.Min(l => l.LastMark));
        long replayed = 0;
        foreach (var log in logs)
        {
            foreach (int at in log.Commits)
            {
                long commitId = BinaryPrimitives.ReadInt64LittleEndian(log.Bytes.AsSpan(at + LogFormat.FrameSize));
                long epoch = LogFormat.EpochOf(commitId);
                if (epoch <= checkpointEpoch || epoch > durable) continue;
                replayed++;
                int writes = BinaryPrimitives.ReadUInt16LittleEndian(log.Bytes.AsSpan(at + LogFormat.FrameSize + 8));
                int w = at + LogFormat.FrameSize + LogFormat.CommitHeaderSize;
                for (int i = 0; i < writes; i++)
                {
                    var table = db[BinaryPrimitives.ReadUInt16LittleEndian(log.Bytes.AsSpan(w))];
                    long key = BinaryPrimitives.ReadInt64LittleEndian(log.Bytes.AsSpan(w + 2));
                    Put(table, key, commitId, log.Bytes.AsSpan(w + LogFormat.WriteHeaderSize, table.PayloadSize), always: inFileOrder);
                    w += LogFormat.WriteHeaderSize + table.PayloadSize;
                }
            }
        }
        var stops = logs.Where(l => l.Stopped is not null).Select(l => l.Stopped).ToList();
        return (durable, replayed, stops.Count == 0 ? null : string.Join("; ", stops));
    }

    /// <summary>Reads a log file's records in order, checking each one's checksum against the chain;
    /// stops at the first that does not read, and says where and why.</summary>
    static LogFile ReadLog(ILogStorage storage, Database db, long schema, long generation, string name)
    {
        var bytes = storage.Read(name);
        if (bytes.Length < LogFormat.LogHeaderSize || !bytes.AsSpan(0, 8).SequenceEqual(LogFormat.LogMagic))
            throw new DataDirectoryException(storage.Where, $"{name} is not a Contend log file");
        int format = BinaryPrimitives.ReadInt32LittleEndian(bytes.AsSpan(8));
        if (format != LogFormat.Version)
            throw new DataDirectoryException(storage.Where, $"{name} is in format {format}; this engine reads format {LogFormat.Version}");
        uint crc = LogFormat.Crc(0, bytes.AsSpan(0, LogFormat.LogHeaderSize - 4));
        if (crc != BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(LogFormat.LogHeaderSize - 4)))
            throw new DataDirectoryException(storage.Where, $"{name}'s header is damaged (checksum)");
        if (BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(16)) != generation || BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(24)) != schema)
            throw new DataDirectoryException(storage.Where, $"{name} belongs to another generation or schema than the checkpoint");
        var commits = new List<int>();
        long lastMark = 0;
        int at = LogFormat.LogHeaderSize;
        string? stopped = null;
        while (at < bytes.Length)
        {
            string? why = null;
            int body = at + LogFormat.FrameSize <= bytes.Length ? BinaryPrimitives.ReadInt32LittleEndian(bytes.AsSpan(at)) : -1;
            if (body < 0 || at + LogFormat.FrameSize + (long)body > bytes.Length) why = "the file ends inside it (a write the crash cut short)";
            else
            {
                uint expected = LogFormat.Crc(crc, bytes.AsSpan(at + 8, 1 + body));
                byte kind = bytes[at + 8];
                if (expected != BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(at + 4))) why = "its checksum does not match (torn or damaged)";
                else if (kind == LogFormat.MarkKind && body == LogFormat.MarkBodySize)
                    lastMark = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(at + LogFormat.FrameSize));
                else if (kind == LogFormat.CommitKind && WellFormed(db, bytes.AsSpan(at + LogFormat.FrameSize, body))) commits.Add(at);
                else why = $"its kind {kind} and length {body} do not make a record of this schema";
                if (why is null) crc = expected;
            }
            if (why is not null)
            {
                stopped = $"{name} at byte {at} of {bytes.Length}: {why}; recovery read it no further";
                break;
            }
            at += LogFormat.FrameSize + body;
        }
        return new LogFile(name, bytes, commits, lastMark, stopped);
    }

    static bool WellFormed(Database db, ReadOnlySpan<byte> body)
    {
        if (body.Length < LogFormat.CommitHeaderSize) return false;
        int writes = BinaryPrimitives.ReadUInt16LittleEndian(body[8..]);
        int at = LogFormat.CommitHeaderSize;
        for (int i = 0; i < writes; i++)
        {
            if (at + LogFormat.WriteHeaderSize > body.Length) return false;
            int table = BinaryPrimitives.ReadUInt16LittleEndian(body[at..]);
            if (table >= db.Tables.Count) return false;
            at += LogFormat.WriteHeaderSize + db[table].PayloadSize;
        }
        return at == body.Length;
    }

    /// <summary>The row of this key takes the value, if its commit id is newer than the row's
    /// (spec: ApplyOne); a key not in the table is inserted.</summary>
    static void Put(Table table, long key, long commitId, ReadOnlySpan<byte> payload, bool always)
    {
        int row = table.Find(key);
        if (row < 0) row = table.Load(key);
        else if (!always && commitId <= table.CommitId(row)) return;
        payload.CopyTo(table.Payload(row));
        table.CommitId(row) = commitId;
        table.Version(row) = 0; // as loaded: the history's versions are this process's transaction ids
    }

    /// <summary>Writes every row as the checkpoint of <paramref name="epoch"/> (a new file, synced,
    /// then renamed over the old one); returns how many rows.</summary>
    public static long WriteCheckpoint(ILogStorage storage, Database db, long schema, long generation, long epoch)
    {
        long count = 0;
        foreach (var table in db.Tables)
            for (int row = 0; row < table.RowsEverUsed; row++)
                if (table.Find(table.Key(row)) == row) count++;
        var header = new byte[LogFormat.CheckpointHeaderSize];
        LogFormat.CheckpointMagic.CopyTo(header);
        BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(8), LogFormat.Version);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(12), generation);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(20), epoch);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(28), schema);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(36), count);
        uint crc = LogFormat.Crc(0, header.AsSpan(0, LogFormat.CheckpointHeaderSize - 4));
        BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(LogFormat.CheckpointHeaderSize - 4), crc);
        using (var file = storage.Create(LogFormat.CheckpointTemporaryName))
        {
            file.Append(header);
            var chunk = new byte[1 << 20];
            int used = 0;
            foreach (var table in db.Tables)
            {
                int size = LogFormat.WriteHeaderSize + 8 + table.PayloadSize;
                for (int row = 0; row < table.RowsEverUsed; row++)
                {
                    long key = table.Key(row);
                    if (table.Find(key) != row) continue;
                    if (used + size > chunk.Length)
                    {
                        file.Append(chunk.AsSpan(0, used));
                        used = 0;
                    }
                    var into = chunk.AsSpan(used, size);
                    BinaryPrimitives.WriteUInt16LittleEndian(into, checked((ushort)table.Id));
                    BinaryPrimitives.WriteInt64LittleEndian(into[2..], key);
                    BinaryPrimitives.WriteInt64LittleEndian(into[10..], table.CommitId(row));
                    table.Payload(row).CopyTo(into[18..]);
                    crc = LogFormat.Crc(crc, into);
                    used += size;
                }
            }
            if (used + 4 > chunk.Length)
            {
                file.Append(chunk.AsSpan(0, used));
                used = 0;
            }
            BinaryPrimitives.WriteUInt32LittleEndian(chunk.AsSpan(used), crc);
            file.Append(chunk.AsSpan(0, used + 4));
            file.Sync();
        }
        storage.Replace(LogFormat.CheckpointTemporaryName, LogFormat.CheckpointName);
        return count;
    }
}
