using System.Diagnostics.Metrics;
using Contend.Engine.Diagnostics;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.StealDB;
using Contend.Engine.Protocols.Strife;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Contend.Harness;
using Contend.Harness.Workloads;

namespace Contend.Tests;

/// <summary>
/// A protocol is its descriptor: what it builds is of the kind and name it declares, its options
/// and mutants are its own (another's are refused, naming both), its counters are the meter's
/// instruments, and what it reports of a run reaches the runner's row by the names it gives.
/// </summary>
public class ProtocolRegistryTests
{
    [Fact]
    public void EveryDescriptorBuildsAProtocolOfItsKindAndName()
    {
        using var db = new Database();
        new Ycsb(1_000, 4, 0.5, 0.5).Load(db);
        foreach (var descriptor in ProtocolRegistry.Descriptors)
        {
            var protocol = descriptor.Create(ProtocolSetup.For(db, 2));
            Assert.Equal(descriptor.Name, protocol.Name);
            Assert.Same(descriptor, ProtocolRegistry.Of(protocol));
            Assert.IsAssignableFrom(descriptor.Kind == ProtocolKind.Batch ? typeof(IBatchProtocol) : typeof(ITransactionProtocol), protocol);
            Assert.Equal(descriptor.Serializable, ProtocolRegistry.Names.Contains(descriptor.Name));
        }
    }

    [Fact]
    public void AnotherProtocolsOptionsAreRefusedNamingBoth()
    {
        using var db = new Database();
        var refused = Assert.Throws<ArgumentException>(() => ProtocolRegistry.Create("NoWait", new ProtocolSetup(db, 2, new StrifeOptions())));
        Assert.Contains("protocol NoWait takes no options; the setup has StrifeOptions", refused.Message);
    }

    [Fact]
    public void OptionsOutOfRangeAreRefusedNamingTheKnob()
    {
        using var db = new Database();
        var refused = Assert.Throws<ArgumentOutOfRangeException>(() => ProtocolRegistry.Create("Strife", new ProtocolSetup(db, 2, new StrifeOptions(Alpha: 2))));
        Assert.Contains("Strife alpha 2: must be in (0, 1]", refused.Message);
    }

    [Fact]
    public void AnotherProtocolsMutantIsRefused()
    {
        using var db = new Database();
        var setup = ProtocolSetup.For(db, 2) with { Mutants = StealDbMutants.EarlyRelease };
        var refused = Assert.Throws<ArgumentException>(() => ProtocolRegistry.Create("NoWait", setup));
        Assert.Contains("mutant EarlyRelease (StealDbMutants) is not one protocol NoWait honours", refused.Message);
        // The core's mutants go with every op-by-op protocol; a protocol's own with its own.
        Assert.NotNull(ProtocolRegistry.Create("Silo", setup with { Mutants = OpByOpMutants.PrepareOutsideUndo }));
        Assert.NotNull(ProtocolRegistry.Create("WaitDie", setup with { Mutants = TwoPhaseLockingMutants.WaitDieYoungerWaits }));
    }

    [Fact]
    public void UnknownNameIsRefusedNamingTheKnownOnes()
    {
        var refused = Assert.Throws<ArgumentException>(() => ProtocolRegistry.Find("Nope"));
        Assert.Contains("unknown protocol 'Nope' (known: NoWait,", refused.Message);
        Assert.True(ProtocolRegistry.TryFind("nowait", out var found)); // any case, as on the command line
        Assert.Equal("NoWait", found.Name);
    }

    /// <summary>What a host checks at start-up is what the engine's constructor checks: the
    /// protocol's name in any case (configuration is not the command line's spelling), and the
    /// protocol's own knobs; and an embedded engine does not pin its workers unless told to.</summary>
    [Fact]
    public async Task OptionsAreCheckedWholeByValidateAndNamesInAnyCase()
    {
        Assert.Contains("alpha", Assert.Throws<ArgumentOutOfRangeException>(() => new EngineOptions { Protocol = "Strife", ProtocolOptions = new StrifeOptions(Alpha: 2) }.Validate()).Message);
        Assert.Contains("protocol Mcs takes McsOptions; the setup has StrifeOptions",
                        Assert.Throws<ArgumentException>(() => new EngineOptions { Protocol = "mcs", ProtocolOptions = new StrifeOptions() }.Validate()).Message);
        Assert.False(new EngineOptions().Pin);
        var db = new Database();
        db.Create("t", 8, 1).Load(0);
        await using var engine = new ContendEngine(db, new EngineOptions { Protocol = "stealdbnosteal", Workers = 1 });
        Assert.Equal("StealDBNoSteal", engine.Options.Protocol);
    }

    /// <summary>A program its protocol can never run is refused at its first call, or at start-up
    /// by <see cref="ContendEngine.Check"/>, with the reason; the others run it. An engine with more
    /// workers than the process's cores says so in the log.</summary>
    [Fact]
    public async Task AProgramTheProtocolCannotRunIsRefusedAtItsFirstCall()
    {
        var db = new Database();
        db.Create("t", 8, 2).Load(0);
        var twice = new ProgramBuilder("twice", db, 1)
            .Write("a", "t", KeySource.FromArg(0), (_, _, _) => 0)
            .Write("b", "t", KeySource.FromArg(0), (_, _, _) => 0, "a")
            .Build();
        Assert.Equal(2, twice.ResultCount);
        var log = new EngineTelemetryTests.ListLogger();
        await using (var steal = new ContendEngine(db, new EngineOptions { Protocol = "StealDB", Workers = Environment.ProcessorCount + 1 }, log))
        {
            var refused = Assert.Throws<ArgumentException>(() => { steal.Check(twice); });
            Assert.Contains("protocol StealDB cannot run it: program twice: ops a and b always use one row (both keyed by argument 0 of the same table)", refused.Message);
            Assert.Throws<ArgumentException>(() => { _ = steal.ExecuteAsync(twice, [0]); });
            Assert.Contains(log.Entries, e => e.Level == Microsoft.Extensions.Logging.LogLevel.Warning && e.Message.Contains($"{Environment.ProcessorCount + 1} workers on the {Environment.ProcessorCount} cores this process may run on"));
        }
        var other = new Database();
        other.Create("t", 8, 2).Load(0);
        var again = new ProgramBuilder("twice", other, 1)
            .Write("a", "t", KeySource.FromArg(0), (_, _, _) => 0)
            .Write("b", "t", KeySource.FromArg(0), (_, _, _) => 0, "a")
            .Build();
        await using var noWait = new ContendEngine(other, new EngineOptions { Protocol = "NoWait", Workers = 1 });
        noWait.Check(again);
        Assert.True((await noWait.ExecuteAsync(again, [0])).Committed);
    }

    /// <summary>A protocol with options declares its command-line knobs in its descriptor: with none
    /// given they make the record's defaults, and each knob given changes the record.</summary>
    [Fact]
    public void EveryOptionsRecordIsReachedByItsKnobs()
    {
        foreach (var descriptor in ProtocolRegistry.Descriptors.Where(d => d.OptionsType is not null))
        {
            Assert.True(descriptor.Knobs is not null, $"{descriptor.Name} takes {descriptor.OptionsType!.Name} but declares no knobs");
            var constructor = descriptor.OptionsType!.GetConstructors().Single(c => c.GetParameters().All(p => p.HasDefaultValue));
            var defaults = constructor.Invoke(constructor.GetParameters().Select(p => p.DefaultValue).ToArray());
            Assert.Equal(defaults, descriptor.Knobs!.From(_ => null));
            foreach (var knob in descriptor.Knobs.Knobs)
            {
                object other = knob.Default switch { int i => i + 1, double x => x / 2, false => true, _ => throw new InvalidOperationException(knob.Flag) };
                Assert.True(!Equals(defaults, descriptor.Knobs.From(f => f == knob.Flag ? other : null)), $"{descriptor.Name}: {knob.Flag} changes nothing");
            }
        }
    }

    /// <summary>Ordered locks every row before any op runs: a key computed from an earlier op's
    /// result is refused before the program runs, naming it; WaitDie runs the same program.</summary>
    [Theory]
    [InlineData("Ordered", false)]
    [InlineData("WaitDie", true)]
    public async Task AKeyFromAResultIsRefusedByOrderedBeforeItRuns(string protocol, bool runs)
    {
        var db = new Database();
        var table = db.Create("t", 8, 2);
        table.Load(0);
        table.Load(1);
        var chained = new ProgramBuilder("chained", db, 1)
            .Read("first", "t", KeySource.FromArg(0), (_, _, _) => 1)
            .Write("second", "t", KeySource.Computed((_, r) => r[0], "first"), (_, _, _) => 0)
            .Build();
        await using var engine = new ContendEngine(db, new EngineOptions { Protocol = protocol, Workers = 1 });
        if (runs)
        {
            engine.Check(chained);
            Assert.True((await engine.ExecuteAsync(chained, [0])).Committed);
            return;
        }
        var refused = Assert.Throws<ArgumentException>(() => engine.Check(chained));
        Assert.Contains("protocol Ordered cannot run it: program chained computes keys from earlier ops' results", refused.Message);
        Assert.Throws<ArgumentException>(() => { _ = engine.ExecuteAsync(chained, [0]); });
    }

    [Fact]
    public void EveryDeclaredCounterIsAnInstrumentOfTheMeter()
    {
        var published = new HashSet<string>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                if (instrument.Meter.Name == EngineMetrics.MeterName)
                    lock (published) published.Add(instrument.Name);
            },
        };
        listener.Start();
        System.Runtime.CompilerServices.RuntimeHelpers.RunClassConstructor(typeof(EngineMetrics).TypeHandle); // the meter's instruments exist from its first use
        var declared = ProtocolRegistry.Descriptors.SelectMany(d => d.Counters).Select(c => c.Instrument).ToHashSet();
        Assert.NotEmpty(declared);
        Assert.Subset(published, declared);
    }

    [Fact]
    public void WhatAProtocolReportsReachesTheRunnersRowByItsNames()
    {
        var options = new RunOptions(Threads: 2, Seconds: 0, Pin: false, TransactionsPerWorker: 2_000);
        var steal = Runner.RunOne("StealDB", () => new StealDbMicro(2, 1_000, 2, 2), options);
        Assert.InRange(steal.Shares[StealDb.StolenShareName], 0, 1);
        Assert.Null(steal.Detail);

        var strife = Runner.RunOne("Strife", () => new Ycsb(1_000, 4, 0.5, 0.9), options, protocolOptions: new StrifeOptions(BatchSize: 100));
        Assert.InRange(strife.Shares[StrifeProtocol.ResidualShareName], 0, 1);
        Assert.Contains("batches of up to 100", strife.Detail);
        Assert.DoesNotContain(StealDb.StolenShareName, strife.Shares.Keys);

        Assert.Empty(Runner.RunOne("NoWait", () => new Ycsb(1_000, 4, 0.5, 0.5), options).Shares);
    }
}
