using System.Buffers.Binary;

namespace Contend.Harness.Workloads;

/// <summary>Op bodies over a row's first 8-byte field, shared by the workloads that use one.</summary>
public static class Fields
{
    public static long ReadFirst(Span<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results) =>
        BinaryPrimitives.ReadInt64LittleEndian(row);

    public static long IncrementFirst(Span<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }
}
