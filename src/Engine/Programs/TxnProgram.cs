using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using Contend.Engine.Storage;

namespace Contend.Engine.Programs;

internal enum AccessMode : byte
{
    Read,
    Write,
    /// <summary>Read or write, chosen per instance by an argument (YCSB's per-request coin).</summary>
    ReadOrWrite,
    /// <summary>A new row; its key must not exist. Applied at commit, under the protocol's locks.</summary>
    Insert,
}

/// <summary>A key computed from the instance's arguments and the results of earlier ops.</summary>
public delegate long KeyFunction(ReadOnlySpan<long> args, ReadOnlySpan<long> results);

/// <summary>
/// The logic of an op that writes or inserts its row: it may change <paramref name="row"/> in
/// place. Returns the op's result (readable by later ops), or <see cref="TxnProgram.UserAbort"/>
/// to abort the transaction as its logic demands.
/// </summary>
public delegate long OpBody(Span<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results);

/// <summary>
/// The logic of an op that reads its row: it sees the row and cannot change it. Returns the
/// op's result (readable by later ops), or <see cref="TxnProgram.UserAbort"/> to abort the
/// transaction as its logic demands.
/// </summary>
public delegate long ReadBody(ReadOnlySpan<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results);

/// <summary>One operation of a program: a node of its DAG.</summary>
internal sealed class Op
{
    public required string Name { get; init; }
    public required int Index { get; init; }
    public required int TableId { get; init; }
    public required AccessMode Mode { get; init; }
    /// <summary>For <see cref="AccessMode.ReadOrWrite"/>: args[ModeArg] != 0 means write.</summary>
    public int ModeArg { get; init; } = -1;
    /// <summary>The key is args[KeyArg] when set; otherwise <see cref="KeyFn"/>.</summary>
    public int KeyArg { get; init; } = -1;
    public KeyFunction? KeyFn { get; init; }
    /// <summary>pk-dependencies: ops whose results the key is computed from (all earlier).</summary>
    public required int[] KeyDeps { get; init; }
    /// <summary>v-dependencies: ops whose results the body reads.</summary>
    public required int[] ValueDeps { get; init; }
    /// <summary>The body when the instance reads (<see cref="AccessMode.Read"/>, and
    /// <see cref="AccessMode.ReadOrWrite"/> when args say read); a read-only span, so that a read
    /// cannot change a row it holds no write lock on.</summary>
    public ReadBody? Reader { get; init; }
    /// <summary>The body when the instance writes or inserts.</summary>
    public OpBody? Writer { get; init; }
    /// <summary>Declared never to return <see cref="TxnProgram.UserAbort"/> (<see cref="ProgramBuilder.NeverAborts"/>,
    /// or every op by <see cref="ProgramBuilder.BodiesNeverAbort"/>).</summary>
    public bool NeverAborts { get; init; }

    public long ResolveKey(ReadOnlySpan<long> args, ReadOnlySpan<long> results) =>
        KeyArg >= 0 ? args[KeyArg] : KeyFn!(args, results);

    public bool Writes(ReadOnlySpan<long> args) => Mode switch
    {
        AccessMode.Read => false,
        AccessMode.ReadOrWrite => args[ModeArg] != 0,
        _ => true,
    };
}

/// <summary>
/// A transaction program: a DAG of ops checked once by <see cref="ProgramBuilder"/>.
/// Instances differ only in their arguments, so running one allocates nothing.
/// </summary>
public sealed class TxnProgram
{
    /// <summary>A body's result that aborts the transaction by its own logic.</summary>
    public const long UserAbort = long.MinValue;

    /// <summary>The name it was built with, in outcomes, errors and histories.</summary>
    public string Name { get; }
    internal Op[] Ops { get; }
    /// <summary>A topological order of the DAG, by op index where the DAG leaves a choice.</summary>
    internal int[] Order { get; }
    /// <summary>How many arguments a call passes (<see cref="Runtime.ContendEngine.ExecuteAsync(TxnProgram, ReadOnlySpan{long}, CancellationToken)"/>).</summary>
    public int ArgCount { get; }
    /// <summary>How many result slots a call's results span needs, at least (one per op, by op index;
    /// <see cref="Runtime.ContendEngine.ExecuteAsync(TxnProgram, ReadOnlySpan{long}, Memory{long}, CancellationToken)"/>).</summary>
    public int ResultCount => Ops.Length;
    /// <summary>True when the key of some row the program reads or writes depends on an earlier
    /// op's result, so the rows to lock are not known up front (inserted keys do not count:
    /// nothing locks a row that does not exist yet).</summary>
    internal bool HasKeyDependencies { get; }
    /// <summary>Dependents[i]: the ops that depend on op i (by key or value), each once, in index order.</summary>
    internal int[][] Dependents { get; }
    /// <summary>DependencyCount[i]: how many distinct ops op i depends on.</summary>
    internal int[] DependencyCount { get; }
    /// <summary>The ops that depend on nothing, in index order.</summary>
    internal int[] Roots { get; }
    /// <summary>False when the program was built declaring that no body returns
    /// <see cref="UserAbort"/> (<see cref="ProgramBuilder.BodiesNeverAbort"/>, or every op named
    /// by <see cref="ProgramBuilder.NeverAborts"/>): a protocol that
    /// can rule out every other abort may then write rows without keeping their before-images.</summary>
    internal bool BodiesMayAbort { get; }
    /// <summary>The insert ops in <see cref="Order"/>: the order in which the op loop collects them.</summary>
    internal int[] InsertsInOrder { get; }

    /// <summary>The protocol instance that last found it can run the program (<see cref="Runtime.ContendEngine.Check"/>), so that only a program's first call is checked.</summary>
    internal object? CheckedFor;

    /// <summary>The database whose schema the program was built against: its ops name that
    /// database's tables by id, so an engine over another refuses it.</summary>
    internal Storage.Database Schema { get; }

    internal TxnProgram(string name, Storage.Database schema, Op[] ops, int[] order, int argCount, bool bodiesMayAbort)
    {
        Name = name;
        Schema = schema;
        Ops = ops;
        Order = order;
        ArgCount = argCount;
        BodiesMayAbort = bodiesMayAbort;
        InsertsInOrder = order.Where(i => ops[i].Mode == AccessMode.Insert).ToArray();
        HasKeyDependencies = ops.Any(o => o.KeyDeps.Length > 0 && o.Mode != AccessMode.Insert);
        DependencyCount = ops.Select(o => o.KeyDeps.Concat(o.ValueDeps).Distinct().Count()).ToArray();
        Dependents = ops.Select(o => ops.Where(d => d.KeyDeps.Contains(o.Index) || d.ValueDeps.Contains(o.Index))
                                        .Select(d => d.Index).ToArray()).ToArray();
        Roots = ops.Where(o => DependencyCount[o.Index] == 0).Select(o => o.Index).ToArray();
    }

    /// <summary>A program whose logic is code that a protocol runs itself, not a DAG of ops (a
    /// ReactDB reactor function): it has no ops, and names its transactions in histories and errors.</summary>
    internal static TxnProgram OfCode(string name, Storage.Database schema) => new(name, schema, [], [], 0, bodiesMayAbort: true);

    /// <summary>Runs op <paramref name="op"/>'s body; a body that aborts against the program's
    /// declaration is a bug in the program, and throws rather than leave a half-written row.</summary>
    internal long RunBody(Op op, bool write, Span<byte> row, ReadOnlySpan<long> args, ReadOnlySpan<long> results)
    {
        long result = write ? op.Writer!(row, args, results) : op.Reader!(row, args, results);
        if (result == UserAbort && op.NeverAborts) ThrowAbortedThoughNeverAborts(op);
        return result;
    }

    /// <summary>Out of line: <see cref="RunBody"/> is inlined into every protocol's op loop, and
    /// the message's interpolation handler, inlined with it, was a stack slot of several hundred
    /// bytes that each call zeroed on entry (docs/measured/StealDB.md, "Frames without zeroing").</summary>
    [DoesNotReturn, MethodImpl(MethodImplOptions.NoInlining)]
    void ThrowAbortedThoughNeverAborts(Op op) =>
        throw new InvalidOperationException($"program {Name}, op {op.Name}: the body returned UserAbort, but the program declared it never aborts ({(BodiesMayAbort ? "NeverAborts" : "BodiesNeverAbort")})");

    /// <summary>The program's name.</summary>
    public override string ToString() => Name;
}
