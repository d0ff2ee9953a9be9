using System.CommandLine;
using System.Globalization;
using Contend.Engine.Protocols;

namespace Contend.Harness;

/// <summary>
/// The protocols' knobs as command-line options, read from the registry: each flag a descriptor
/// declares (<see cref="ProtocolDescriptor.Knobs"/>) is one option, described with the protocols
/// that take it, so a protocol's knobs reach <c>contend run</c> with no line here.
/// </summary>
internal sealed class ProtocolKnobOptions
{
    /// <summary>One flag: its option, the protocols that take it, and its value when given.</summary>
    sealed record Knob(Option Option, string[] Owners, Func<ParseResult, object?> Given);

    readonly Knob[] _knobs;

    public ProtocolKnobOptions()
    {
        _knobs = ProtocolRegistry.Descriptors
            .Where(d => d.Knobs is not null)
            .SelectMany(d => d.Knobs!.Knobs.Select(k => (Descriptor: d, Knob: k)))
            .GroupBy(x => x.Knob.Flag)
            .Select(g => Make(g.Key, g.Select(x => x.Descriptor.Name).ToArray(), g.Select(x => x.Knob).ToArray()))
            .ToArray();
    }

    public void AddTo(Command command)
    {
        foreach (var knob in _knobs) command.Options.Add(knob.Option);
    }

    /// <summary>The options <paramref name="descriptor"/>'s protocol runs with, from the knobs given;
    /// a knob of another protocol is refused, naming the protocols it belongs to.</summary>
    public ProtocolOptions? For(ProtocolDescriptor? descriptor, string protocol, ParseResult parse)
    {
        var given = _knobs.Where(k => k.Given(parse) is not null).ToArray();
        foreach (var knob in given)
            if (descriptor is null || !knob.Owners.Contains(descriptor.Name))
                throw new UsageException($"{knob.Option.Name} is a knob of {string.Join(", ", knob.Owners)}; this run's protocol is {protocol}");
        if (descriptor?.Knobs is not { } knobs) return null;
        return knobs.From(flag => given.FirstOrDefault(k => k.Option.Name == flag)?.Given(parse));
    }

    static Knob Make(string flag, string[] owners, ProtocolKnob[] declared)
    {
        var first = declared[0];
        if (declared.Any(k => k.Default.GetType() != first.Default.GetType() || k.Description != first.Description))
            throw new InvalidOperationException($"{flag}: the protocols {string.Join(", ", owners)} declare it with different types or descriptions");
        // A default is shown only when every protocol that takes the knob has the same one.
        bool oneDefault = declared.All(k => Equals(k.Default, first.Default));
        string description = $"{string.Join(", ", owners)}: {first.Description}";
        switch (first.Default)
        {
            case int d:
                var integer = new Option<int>(flag) { Description = description };
                if (oneDefault) integer.DefaultValueFactory = _ => d;
                return new Knob(integer, owners, p => p.GetResult(integer) is { Implicit: false } ? p.GetValue(integer) : null);
            case double d:
                var real = new Option<double>(flag) { Description = description };
                if (oneDefault) real.DefaultValueFactory = _ => d;
                return new Knob(real, owners, p => p.GetResult(real) is { Implicit: false } ? p.GetValue(real) : null);
            case false:
                var flagged = new Option<bool>(flag) { Description = description };
                return new Knob(flagged, owners, p => p.GetResult(flagged) is { Implicit: false } && p.GetValue(flagged) ? true : null);
            default:
                throw new InvalidOperationException($"{flag}: a knob's default is an int, a double or false, not {Convert.ToString(first.Default, CultureInfo.InvariantCulture)}");
        }
    }
}
