namespace Contend.Engine.Protocols;

/// <summary>How a protocol runs its transactions.</summary>
internal enum ProtocolKind
{
    /// <summary>One transaction to its end on the calling worker (<see cref="ITransactionProtocol"/>).</summary>
    PerTransaction,
    /// <summary>Transactions drawn into batches and scheduled over workers of its own (<see cref="IBatchProtocol"/>).</summary>
    Batch,
}

/// <summary>A protocol's knobs. Each protocol that has knobs has its own options record; its
/// descriptor's <see cref="ProtocolDescriptor.OptionsType"/> names it.</summary>
public abstract record ProtocolOptions
{
    /// <summary>Throws <see cref="ArgumentException"/>, naming the knob, when one is out of range
    /// for a run on <paramref name="workers"/> workers.</summary>
    internal abstract void Validate(int workers);
}

/// <summary>A knob of a protocol's options record as a command line offers it.</summary>
/// <param name="Flag">the option's name, <c>--</c> first</param>
/// <param name="Description">what it sets, in words that fit every protocol taking it</param>
/// <param name="Default">its value when it is not given: an <see cref="int"/>, a <see cref="double"/>,
/// or false for a switch (a <see cref="bool"/> that giving the flag turns on)</param>
internal sealed record ProtocolKnob(string Flag, string Description, object Default)
{
    /// <summary>The queue locks' wait threshold, one knob of every protocol that waits on them (Mcs, the StealDB family).</summary>
    public static ProtocolKnob WaitThreshold(int @default) =>
        new("--wait-threshold", "idle rounds of a lock wait before it aborts (the deadlock detector's last resort)", @default);
}

/// <summary>What a command line needs of an options record: its knobs, and the record made from
/// their values (each one given, or its <see cref="ProtocolKnob.Default"/>).</summary>
internal sealed record ProtocolKnobs(IReadOnlyList<ProtocolKnob> Knobs, Func<Func<string, object>, ProtocolOptions> Make)
{
    /// <summary>The options the protocol runs with when <paramref name="given"/> says which knobs
    /// were given (a value) and which not (null).</summary>
    public ProtocolOptions From(Func<string, object?> given) =>
        Make(flag => given(flag) ?? Knobs.Single(k => k.Flag == flag).Default);
}

/// <summary>A counter a protocol keeps of itself, published as an instrument of the engine's
/// meter (<see cref="Diagnostics.EngineMetrics"/>) with the protocol's name as a tag.</summary>
/// <param name="Instrument">the instrument's name, <c>contend.</c> first</param>
/// <param name="Read">the protocol's count so far, monotonic over the instance's life; read while
/// its workers run, a plain read of a word they bump (approximate, never torn)</param>
internal sealed record ProtocolCounter(string Instrument, string Unit, string Description, Func<IProtocol, long> Read);

/// <summary>What a protocol tells of a run beyond the engine's counts: shares in [0, 1] by name
/// (the columns of a study's results) and a line in words.</summary>
internal sealed record ProtocolReport(IReadOnlyDictionary<string, double> Shares, string? Detail)
{
    public static readonly ProtocolReport None = new(new Dictionary<string, double>(), null);
}

/// <summary>
/// Everything the engine and the harness know about one protocol: its name, what it does, its
/// kind, the type of its options, how to build it, the counters it keeps and what it reports of
/// a run, the knobs a command line offers for its options, and (test builds) the mutants it
/// honours. A protocol is one folder that declares its descriptor and one line in
/// <see cref="ProtocolRegistry"/>; nothing else names it.
/// </summary>
internal sealed class ProtocolDescriptor
{
    readonly Func<ProtocolSetup, IProtocol> _make;
    readonly Func<IProtocol, double, ProtocolReport>? _report;
    readonly Func<Programs.TxnProgram, string?>? _refuses;

    /// <param name="optionsType">the <see cref="ProtocolOptions"/> record the protocol takes; null: none</param>
    /// <param name="make">builds the protocol from a setup whose options are null or of <paramref name="optionsType"/></param>
    /// <param name="report">what the protocol reports of its runs so far, given the worker-seconds they took</param>
    /// <param name="mutants">the enum of mutants the protocol honours besides the core's</param>
    /// <param name="refuses">why the protocol can never run a program, whatever its arguments (null: it can)</param>
    /// <param name="knobs">the command line's knobs of <paramref name="optionsType"/>; null: it offers none</param>
    internal ProtocolDescriptor(string name, string description, ProtocolKind kind, Type? optionsType, Func<ProtocolSetup, IProtocol> make,
                                IReadOnlyList<ProtocolCounter>? counters = null, Func<IProtocol, double, ProtocolReport>? report = null,
                                Type? mutants = null, bool serializable = true, Func<Programs.TxnProgram, string?>? refuses = null,
                                ProtocolKnobs? knobs = null)
    {
        if (optionsType is not null && !optionsType.IsSubclassOf(typeof(ProtocolOptions)))
            throw new ArgumentException($"protocol {name}: options type {optionsType.Name} is not a {nameof(ProtocolOptions)}", nameof(optionsType));
        if (knobs is not null && optionsType is null)
            throw new ArgumentException($"protocol {name}: has knobs but no options type", nameof(knobs));
        if (mutants is not null && !mutants.IsEnum)
            throw new ArgumentException($"protocol {name}: mutants type {mutants.Name} is not an enum", nameof(mutants));
        Name = name;
        Description = description;
        Kind = kind;
        OptionsType = optionsType;
        Counters = counters ?? [];
        Serializable = serializable;
        Mutants = mutants;
        _make = make;
        _report = report;
        _refuses = refuses;
        Knobs = knobs;
    }

    /// <summary>The knobs a command line offers for the protocol's options; null: none.</summary>
    public ProtocolKnobs? Knobs { get; }

    /// <summary>Why the protocol can never run <paramref name="program"/> (every call of it would
    /// fail the same way), or null.</summary>
    public string? Refuses(Programs.TxnProgram program) => _refuses?.Invoke(program);

    public string Name { get; }
    public string Description { get; }
    public ProtocolKind Kind { get; }
    /// <summary>The options record the protocol takes (<see cref="ProtocolSetup.Options"/>); null: it takes none.</summary>
    public Type? OptionsType { get; }
    public IReadOnlyList<ProtocolCounter> Counters { get; }
    /// <summary>False for the history checker's control only.</summary>
    public bool Serializable { get; }
    /// <summary>The protocol's own mutants (test builds only: <see cref="MutantFlag"/>).</summary>
    internal Type? Mutants { get; }

    /// <summary>Builds the protocol. Throws <see cref="ArgumentException"/> when the setup's options
    /// are of another protocol's type or out of range, or its mutants are not this protocol's.</summary>
    public IProtocol Create(ProtocolSetup setup)
    {
        ArgumentNullException.ThrowIfNull(setup);
        if (setup.Options is { } options)
        {
            if (options.GetType() != OptionsType)
                throw new ArgumentException(OptionsType is null
                    ? $"protocol {Name} takes no options; the setup has {options.GetType().Name}"
                    : $"protocol {Name} takes {OptionsType.Name}; the setup has {options.GetType().Name}", nameof(setup));
            options.Validate(setup.Workers);
        }
        if (setup.Mutants is { } mutants && mutants.GetType() != Mutants && mutants.GetType() != typeof(OpByOpMutants))
            throw new ArgumentException($"mutant {mutants} ({mutants.GetType().Name}) is not one protocol {Name} honours", nameof(setup));
        return _make(setup);
    }

    /// <summary>What <paramref name="protocol"/>, built by this descriptor, reports of its runs so far.</summary>
    /// <param name="workerSeconds">the worker time those runs took, summed over workers</param>
    public ProtocolReport Report(IProtocol protocol, double workerSeconds)
    {
        if (protocol.Name != Name) throw new ArgumentException($"protocol {protocol.Name} was not built by the descriptor of {Name}", nameof(protocol));
        return _report?.Invoke(protocol, workerSeconds) ?? ProtocolReport.None;
    }

    public override string ToString() => Name;
}
