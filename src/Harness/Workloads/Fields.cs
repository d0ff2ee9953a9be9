using System.Buffers.Binary;
using Contend.Engine.Programs;

namespace Contend.Harness.Workloads;

/// <summary>Op bodies over a row's first 8-byte field, shared by the workloads that use one.</summary>
/// <remarks>Delegates made from lambdas, not from static methods: a delegate over a static method
/// is called through a shuffle thunk that moves every argument one register along (4-7% of a
/// YCSB worker's samples under Strife), a lambda's is a plain instance call.</remarks>
internal static class Fields
{
    public static readonly ReadBody ReadFirst = (row, args, results) => BinaryPrimitives.ReadInt64LittleEndian(row);

    public static readonly OpBody IncrementFirst = (row, args, results) =>
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + 1;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    };
}
