using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Tests;

public class ProgramBuilderTests
{
    static readonly ReadBody Nothing = (row, a, r) => 0;
    static readonly KeyFunction FromFirst = (a, r) => r[0];

    static Database Db()
    {
        var db = new Database();
        db.Create("t", 8, 4);
        return db;
    }

    [Fact]
    public void AReadBodySeesItsRowReadOnly()
    {
        // A read holds no write lock and saves no before-image, so a write through its span would be
        // kept by a commit and missed by an abort: the span it gets is read-only, for every read body.
        foreach (var method in typeof(ProgramBuilder).GetMethods().Where(m => m.Name is "Read" or "ReadOrWrite"))
        {
            var readBody = method.GetParameters().First(p => p.Name is "body" or "readBody").ParameterType;
            Assert.Equal(typeof(ReadBody), readBody);
            Assert.Equal(typeof(ReadOnlySpan<byte>), readBody.GetMethod("Invoke")!.GetParameters()[0].ParameterType);
        }
    }

    [Fact]
    public void AMissingBodyIsRefusedNamingTheOp()
    {
        using var db = Db();
        var read = Assert.Throws<ArgumentNullException>(() => new ProgramBuilder("p", db, 1).Read("look", "t", KeySource.FromArg(0), null!));
        Assert.Equal("body", read.ParamName);
        Assert.Contains("program p, op look", read.Message);
        var write = Assert.Throws<ArgumentNullException>(() => new ProgramBuilder("p", db, 2).ReadOrWrite("either", "t", KeySource.FromArg(0), 1, Nothing, null!));
        Assert.Equal("writeBody", write.ParamName);
        Assert.Contains("op either", write.Message);
    }

    [Fact]
    public void RejectsUnknownTableNamingProgramAndOp()
    {
        using var db = Db();
        var e = Assert.Throws<ProgramException>(() => new ProgramBuilder("p", db, 1).Read("a", "missing", KeySource.FromArg(0), Nothing).Build());
        Assert.Equal("program p, op a: unknown table 'missing' (known: t)", e.Message);
    }

    [Fact]
    public void RejectsMoreOpsOrArgumentsThanATransactionHolds()
    {
        using var db = Db();
        var wide = new ProgramBuilder("wide", db, 1);
        for (int i = 0; i <= TxnContext.MaxOps; i++) wide.Read($"r{i}", "t", KeySource.FromArg(0), Nothing);
        Assert.Equal("program wide: 65 ops, more than the 64 a transaction may have", Assert.Throws<ProgramException>(() => wide.Build()).Message);
        var many = new ProgramBuilder("many", db, TxnContext.MaxArgs + 1).Read("a", "t", KeySource.FromArg(0), Nothing);
        Assert.Equal("program many: 129 arguments, outside the 0..128 a transaction may take", Assert.Throws<ProgramException>(() => many.Build()).Message);
        Assert.Equal(TxnContext.MaxArgs, new ProgramBuilder("most", db, TxnContext.MaxArgs).Read("a", "t", KeySource.FromArg(0), Nothing).Build().ArgCount);
    }

    [Fact]
    public void RejectsForwardKeyDependency()
    {
        using var db = Db();
        var e = Assert.Throws<ProgramException>(() => new ProgramBuilder("p", db, 1)
            .Read("a", "t", KeySource.Computed(FromFirst, "b"), Nothing)
            .Read("b", "t", KeySource.FromArg(0), Nothing).Build());
        Assert.StartsWith("program p, op a: key depends on op b, which comes after it", e.Message);
    }

    [Fact]
    public void RejectsKeyDependingOnItself()
    {
        using var db = Db();
        var e = Assert.Throws<ProgramException>(() => new ProgramBuilder("p", db, 1)
            .Read("a", "t", KeySource.Computed(FromFirst, "a"), Nothing).Build());
        Assert.StartsWith("program p, op a: key depends on op a, which comes at it", e.Message);
    }

    [Fact]
    public void RejectsValueDependencyCycle()
    {
        using var db = Db();
        var e = Assert.Throws<ProgramException>(() => new ProgramBuilder("p", db, 1)
            .Read("a", "t", KeySource.FromArg(0), Nothing, "c")
            .Read("b", "t", KeySource.FromArg(0), Nothing, "a")
            .Read("c", "t", KeySource.FromArg(0), Nothing, "b").Build());
        // Any rotation names the same cycle: each op comes before the next one.
        Assert.Contains(e.Message, new[] { "a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c" }.Select(c => $"program p: dependency cycle {c}"));
    }

    [Fact]
    public void RejectsUnknownDependencyAndArgumentOutOfRange()
    {
        using var db = Db();
        Assert.Equal("program p, op a: value depends on unknown op 'zz'",
            Assert.Throws<ProgramException>(() => new ProgramBuilder("p", db, 1).Read("a", "t", KeySource.FromArg(0), Nothing, "zz").Build()).Message);
        Assert.Equal("program p, op a: key argument 3 outside 0..0",
            Assert.Throws<ProgramException>(() => new ProgramBuilder("p", db, 1).Read("a", "t", KeySource.FromArg(3), Nothing).Build()).Message);
    }

    [Fact]
    public void OrdersByDependenciesThenIndex()
    {
        using var db = Db();
        var p = new ProgramBuilder("p", db, 1)
            .Read("a", "t", KeySource.FromArg(0), Nothing, "c")
            .Read("b", "t", KeySource.FromArg(0), Nothing)
            .Read("c", "t", KeySource.FromArg(0), Nothing)
            .Read("d", "t", KeySource.Computed(FromFirst, "b"), Nothing).Build();
        Assert.Equal([1, 2, 0, 3], p.Order);
        Assert.True(p.HasKeyDependencies);
    }

    [Fact]
    public void BodyThatAbortsAgainstItsDeclarationThrowsNamingProgramAndOp()
    {
        using var db = Db();
        db.TryGet("t", out var table);
        table.Load(0);
        var p = new ProgramBuilder("p", db, 1).Write("a", "t", KeySource.FromArg(0), (row, a, r) => TxnProgram.UserAbort).BodiesNeverAbort().Build();
        Assert.False(p.BodiesMayAbort);
        var protocol = (ITransactionProtocol)ProtocolRegistry.Create("NoWait", ProtocolSetup.For(db, 1));
        var ctx = new TxnContext(0, null);
        ctx.Start(p, 1);
        ctx.Args[0] = 0;
        var e = Assert.Throws<InvalidOperationException>(() => protocol.Run(ctx, out _));
        Assert.Equal("program p, op a: the body returned UserAbort, but the program declared it never aborts (BodiesNeverAbort)", e.Message);
    }

    /// <summary>NeverAborts declares single ops: the others may still abort, a declared one that
    /// aborts throws naming it, and an unknown name is refused at build.</summary>
    [Fact]
    public void NeverAbortsDeclaresOneOpAndRefusesAnUnknownName()
    {
        using var db = Db();
        db.TryGet("t", out var table);
        table.Load(0);
        var p = new ProgramBuilder("p", db, 1)
            .Write("a", "t", KeySource.FromArg(0), (row, a, r) => TxnProgram.UserAbort)
            .Read("b", "t", KeySource.FromArg(0), (row, a, r) => 0)
            .NeverAborts("a").Build();
        Assert.True(p.BodiesMayAbort);
        Assert.True(p.Ops[0].NeverAborts);
        Assert.False(p.Ops[1].NeverAborts);
        var protocol = (ITransactionProtocol)ProtocolRegistry.Create("NoWait", ProtocolSetup.For(db, 1));
        var ctx = new TxnContext(0, null);
        ctx.Start(p, 1);
        ctx.Args[0] = 0;
        var e = Assert.Throws<InvalidOperationException>(() => protocol.Run(ctx, out _));
        Assert.Equal("program p, op a: the body returned UserAbort, but the program declared it never aborts (NeverAborts)", e.Message);
        var unknown = Assert.Throws<ProgramException>(() => new ProgramBuilder("q", db, 1)
            .Read("b", "t", KeySource.FromArg(0), (row, a, r) => 0).NeverAborts("c").Build());
        Assert.Equal("program q: NeverAborts names op 'c', which the program does not have", unknown.Message);
    }
}
