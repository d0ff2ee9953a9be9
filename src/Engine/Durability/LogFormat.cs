using System.Buffers.Binary;
using System.Numerics;
using System.Text;
using Contend.Engine.Storage;

namespace Contend.Engine.Durability;

/// <summary>
/// The bytes of a data directory's files: the log's framed records and the checkpoint's rows.
/// Every record is checksummed with CRC-32C, chained from the one before it in its file, so a
/// torn or corrupted record, or one from another file, stops a reader where it is.
/// </summary>
/// <remarks>
/// A log file (<c>log-GENERATION-LOGGER</c>):
/// <code>
///   header   magic "CNTDLOG\0" 8 B | format 4 B | logger 4 B | generation 8 B | schema 8 B | crc 4 B
///   record   length 4 B | crc 4 B | kind 1 B | body (length B)
///     kind 1, a commit:   commit id 8 B | writes 2 B | per write: table 2 B | key 8 B | payload (the table's size)
///     kind 2, an epoch mark: epoch 8 B   (every commit of this logger's workers of that epoch or earlier is before it)
/// </code>
/// A record's crc is CRC-32C over its kind and body, seeded with the crc of the record before it
/// (the header's, for the first). Integers are little-endian.
/// A checkpoint file (<c>checkpoint</c>):
/// <code>
///   header   magic "CNTDCKP\0" 8 B | format 4 B | generation 8 B | epoch 8 B | schema 8 B | rows 8 B | crc 4 B
///   row      table 2 B | key 8 B | commit id 8 B | payload (the table's size)
///   trailer  crc 4 B: CRC-32C over every row, seeded with the header's
/// </code>
/// </remarks>
internal static class LogFormat
{
    /// <summary>Bumped when a file's bytes change meaning; a directory of another format is refused.</summary>
    public const int Version = 1;

    public static ReadOnlySpan<byte> LogMagic => "CNTDLOG\0"u8;
    public static ReadOnlySpan<byte> CheckpointMagic => "CNTDCKP\0"u8;

    public const int LogHeaderSize = 8 + 4 + 4 + 8 + 8 + 4;
    public const int CheckpointHeaderSize = 8 + 4 + 8 + 8 + 8 + 8 + 4;
    public const int FrameSize = 4 + 4 + 1;
    public const byte CommitKind = 1, MarkKind = 2;
    public const int CommitHeaderSize = 8 + 2;
    public const int WriteHeaderSize = 2 + 8;
    public const int MarkBodySize = 8;

    /// <summary>The commit id's bits below the epoch: a commit id of epoch e is e &lt;&lt; 32 or more,
    /// and less than (e + 1) &lt;&lt; 32.</summary>
    public const int EpochShift = 32;

    public static long EpochOf(long commitId) => commitId >>> EpochShift;

    public static string LogName(long generation, int logger) => $"log-{generation:D6}-{logger:D3}";

    public const string CheckpointName = "checkpoint", CheckpointTemporaryName = "checkpoint.new", LockName = "lock";

    /// <summary>CRC-32C of <paramref name="bytes"/>, continuing from <paramref name="crc"/>.</summary>
    public static uint Crc(uint crc, ReadOnlySpan<byte> bytes)
    {
        while (bytes.Length >= 8)
        {
            crc = BitOperations.Crc32C(crc, BinaryPrimitives.ReadUInt64LittleEndian(bytes));
            bytes = bytes[8..];
        }
        foreach (byte b in bytes) crc = BitOperations.Crc32C(crc, b);
        return crc;
    }

    /// <summary>What a directory's files were written for: every table's name and payload size,
    /// in order. A directory written for another schema is refused.</summary>
    public static long SchemaHash(Database db)
    {
        var text = new StringBuilder();
        foreach (var table in db.Tables) text.Append(table.Name).Append(':').Append(table.PayloadSize).Append(';');
        var bytes = Encoding.UTF8.GetBytes(text.ToString());
        uint low = Crc(0, bytes), high = Crc(0x9E3779B9, bytes);
        return (long)((ulong)high << 32 | low);
    }

    public static string DescribeSchema(Database db) =>
        string.Join(", ", db.Tables.Select(t => $"{t.Name} ({t.PayloadSize} B)"));

    public static byte[] LogHeader(int logger, long generation, long schema)
    {
        var header = new byte[LogHeaderSize];
        LogMagic.CopyTo(header);
        BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(8), Version);
        BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(12), logger);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(16), generation);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(24), schema);
        BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(32), Crc(0, header.AsSpan(0, 32)));
        return header;
    }

    /// <summary>Writes a mark record's frame and body into <paramref name="into"/> (its crc left to
    /// <see cref="Seal"/>); returns its length.</summary>
    public static int Mark(Span<byte> into, long epoch)
    {
        BinaryPrimitives.WriteInt32LittleEndian(into, MarkBodySize);
        into[8] = MarkKind;
        BinaryPrimitives.WriteInt64LittleEndian(into[FrameSize..], epoch);
        return FrameSize + MarkBodySize;
    }

    /// <summary>Fills in the crc of every record in <paramref name="records"/>, a run of whole
    /// records, chaining from <paramref name="crc"/>; returns the last one's.</summary>
    public static uint Seal(Span<byte> records, uint crc)
    {
        while (!records.IsEmpty)
        {
            int body = BinaryPrimitives.ReadInt32LittleEndian(records);
            crc = Crc(crc, records.Slice(8, 1 + body));
            BinaryPrimitives.WriteUInt32LittleEndian(records[4..], crc);
            records = records[(FrameSize + body)..];
        }
        return crc;
    }
}

/// <summary>A directory Contend cannot open: written by another format or for another schema,
/// served by another engine, or damaged where no crash could have damaged it.</summary>
public sealed class DataDirectoryException : Runtime.ContendException
{
    internal DataDirectoryException(string directory, string problem, Exception? inner = null)
        : base($"data directory {directory}: {problem}", inner)
    {
        Directory = directory;
    }

    /// <summary>The directory refused.</summary>
    public string Directory { get; }

    /// <inheritdoc/>
    public override bool Retryable => false;
}

/// <summary>The engine's log could not be made durable (a write or a sync failed): the engine
/// failed and answers nothing after it. A transaction that ends with this committed in memory
/// but was not acknowledged: after a restart it may or may not be there.</summary>
public sealed class DurabilityFailedException : Runtime.ContendException
{
    internal DurabilityFailedException(string name, Exception cause)
        : base($"engine '{name}': the log could not be made durable ({cause.Message}); the engine takes no more transactions, " +
               "and this one's commit is unknown: a restart on the directory recovers what was durable", cause)
    {
    }

    /// <inheritdoc/>
    public override bool Retryable => false;
}
