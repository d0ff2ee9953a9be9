using System.Buffers.Binary;
using CsCheck;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Storage;

namespace Contend.Tests.Fuzzing;

/// <summary>The functions a ReactDB case calls.</summary>
public enum ReactorFuzzFunction
{
    /// <summary>args: row, target reactor, target row, amount, mode. Takes the amount from a row
    /// here and deposits it on the target by a call (in this container: synchronous), whose logic
    /// aborts the root, throws or works as the mode says.</summary>
    Transfer,
    /// <summary>args: reactor, reactor, row. Two flows of one function at once: each calls a
    /// reactor, then moves 1 between two rows here (the flows in opposite directions).</summary>
    TwoFlows,
    /// <summary>args: reactors to call in a chain, each calling the next.</summary>
    Chain,
    /// <summary>args: none. Sums every reactor's rows through calls: a committed one sees the whole total.</summary>
    Audit,
}

/// <summary>One call of a ReactDB case: the function, the reactor it runs on, its arguments, and
/// when its caller cancels (-1: never; 0: before the call; n: n ms after it).</summary>
public sealed record ReactorFuzzCall(ReactorFuzzFunction Function, int Reactor, long[] Args, int CancelAfterMs)
{
    public override string ToString() => $"{Function}@r{Reactor}({string.Join(", ", Args)}){(CancelAfterMs < 0 ? "" : $" cancelled at {CancelAfterMs} ms")}";
}

/// <summary>A ReactDB case: a deployment of reactors over containers, the engine's options, the
/// calls made at it all at once, and whether it is disposed while they run.</summary>
/// <param name="ThrowingLogger">the engine's logger throws at a warning (a function that threw is one)</param>
public sealed record ReactDbCase(int Containers, int Executors, int Reactors, int? MaxAttempts, int MaxRoots, ReactorFuzzCall[] Calls, int DisposeAfter,
                                 bool ThrowingLogger)
{
    public const int Rows = 4;
    public const long Opening = 1_000;

    public int ContainerOf(long reactor) => (int)(reactor % Containers);

    public override string ToString() =>
        $"ReactDB, {Containers} containers of {Executors} executors, {Reactors} reactors, attempts {(MaxAttempts is int a ? a : "any")}, " +
        $"{MaxRoots} roots in flight, {(ThrowingLogger ? "a logger that throws, " : "")}{(DisposeAfter < 0 ? "not disposed" : $"disposed after call {DisposeAfter}")}; calls: {string.Join("; ", Calls.AsEnumerable())}";

    public static Gen<ReactDbCase> Generator { get; } =
        from containers in Gen.Int[1, 3]
        from executors in Gen.Int[1, 2]
        from reactors in Gen.Int[2, 5]
        from attempts in Gen.Frequency((3, Gen.Const((int?)null)), (1, Gen.Int[1, 3].Select(n => (int?)n)))
        from roots in Gen.Int[1, 8]
        from calls in Call(reactors).Array[1, 24]
        from dispose in Gen.Frequency((5, Gen.Const(-1)), (1, Gen.Int[0, 24]))
        from throwingLogger in Gen.Frequency((9, Gen.Const(false)), (1, Gen.Const(true)))
        select new ReactDbCase(containers, executors, reactors, attempts, roots, calls, dispose, throwingLogger);

    static Gen<ReactorFuzzCall> Call(int reactors)
    {
        var reactor = Gen.Int[0, reactors - 1];
        var row = Gen.Int[0, Rows + 1].Select(r => (long)r); // the last two are missing
        var mode = Gen.Frequency((8, Gen.Const(FuzzMode.Work)), (1, Gen.Const(FuzzMode.Abort)), (1, Gen.Const(FuzzMode.Throw)));
        var cancel = Gen.Frequency((8, Gen.Const(-1)), (1, Gen.Const(0)), (1, Gen.Int[1, 20]));
        var transfer = Gen.Select(row, reactor, row, Gen.Int[1, 50], mode, (r, t, tr, amount, m) => (ReactorFuzzFunction.Transfer, new long[] { r, t, tr, amount, m }));
        var twoFlows = Gen.Select(reactor, reactor, Gen.Int[0, Rows - 2], (a, b, r) => (ReactorFuzzFunction.TwoFlows, new long[] { a, b, r }));
        var chain = reactor.Select(r => (long)r).Array[1, 4].Select(chain => (ReactorFuzzFunction.Chain, chain));
        var audit = Gen.Const((ReactorFuzzFunction.Audit, Array.Empty<long>()));
        var function = Gen.Frequency((4, transfer), (2, twoFlows), (2, chain), (1, audit));
        return Gen.Select(function, reactor, cancel, (f, r, c) => new ReactorFuzzCall(f.Item1, r, f.Item2, c));
    }
}

/// <summary>The deployment and functions of a ReactDB case: reactor i has relation "rows" of
/// <see cref="ReactDbCase.Rows"/> rows opened with <see cref="ReactDbCase.Opening"/> each, in container i mod the containers.</summary>
public sealed class ReactorFuzzBank
{
    public ReactorDeployment Deployment { get; }
    readonly ReactorFunction[] _functions;
    readonly ReactorFunction _deposit, _touch, _sum;

    public ReactorFuzzBank(ReactDbCase c)
    {
        var db = new Database();
        var opening = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(opening, ReactDbCase.Opening);
        for (int i = 0; i < c.Reactors; i++)
        {
            var table = db.Create($"r{i}.rows", sizeof(long), ReactDbCase.Rows);
            for (int k = 0; k < ReactDbCase.Rows; k++) table.Load(k, opening);
        }
        Deployment = new ReactorDeployment(db, c.Containers);
        for (int i = 0; i < c.Reactors; i++) Deployment.Add($"r{i}", c.ContainerOf(i), "rows");
        _deposit = new("deposit", (call, args) =>
        {
            if (args.Span[2] == FuzzMode.Abort) call.AbortRoot();
            if (args.Span[2] == FuzzMode.Throw) throw new FuzzBodyException();
            long amount = args.Span[1];
            return ValueTask.FromResult(call.Write(Rows(call), args.Span[0], row => Add(row, amount)));
        });
        _touch = new("touch", (call, _) => ValueTask.FromResult(call.Read(Rows(call), 0, Value)));
        _sum = new("sum", (call, _) =>
        {
            long sum = 0;
            for (int k = 0; k < ReactDbCase.Rows; k++) sum += call.Read(Rows(call), k, Value);
            return ValueTask.FromResult(sum);
        });
        ReactorFunction chain = null!;
        chain = new("chain", async (call, args) =>
        {
            call.Read(Rows(call), 0, Value);
            if (args.Length <= 1) return 0;
            return await call.CallAsync(Deployment.Reactors[(int)args.Span[1]], chain, args[1..]);
        });
        _functions =
        [
            new("transfer", async (call, args) =>
            {
                long amount = args.Span[3];
                call.Write(Rows(call), args.Span[0], row => Add(row, -amount));
                return await call.CallAsync(Deployment.Reactors[(int)args.Span[1]], _deposit, new[] { args.Span[2], amount, args.Span[4] });
            }),
            new("twoFlows", async (call, args) =>
            {
                var first = Flow(call, Deployment.Reactors[(int)args.Span[0]], (int)args.Span[2], +1);
                var second = Flow(call, Deployment.Reactors[(int)args.Span[1]], (int)args.Span[2], -1);
                return await first + await second;
            }),
            chain,
            new("audit", async (call, _) =>
            {
                long total = 0;
                foreach (var reactor in Deployment.Reactors) total += await call.CallAsync(reactor, _sum, default);
                return total;
            }),
        ];
    }

    async Task<long> Flow(ReactorCall call, Reactor other, int row, long direction)
    {
        await call.CallAsync(other, _touch, default);
        call.Write(Rows(call), row, r => Add(r, direction));
        call.Write(Rows(call), row + 1, r => Add(r, -direction));
        return 0;
    }

    public ReactorFunction this[ReactorFuzzFunction function] => _functions[(int)function];

    static Relation Rows(ReactorCall call) => call.Reactor.Relation("rows");

    static long Value(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    static long Add(Span<byte> row, long amount)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + amount;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }
}
