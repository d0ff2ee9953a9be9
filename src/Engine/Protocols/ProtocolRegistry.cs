namespace Contend.Engine.Protocols;

/// <summary>Chooses protocols by name at run time: one line per protocol, its descriptor
/// declared in the protocol's own folder.</summary>
public static class ProtocolRegistry
{
    static readonly ProtocolDescriptor[] Known =
    [
        TwoPhaseLocking.TwoPhaseLockingProtocols.NoWait,
        TwoPhaseLocking.TwoPhaseLockingProtocols.WaitDie,
        TwoPhaseLocking.TwoPhaseLockingProtocols.WaitsFor,
        TwoPhaseLocking.TwoPhaseLockingProtocols.Ordered,
        TwoPhaseLocking.TwoPhaseLockingProtocols.Mcs,
        Silo.SiloOcc.Descriptor,
        StealDB.StealDbProtocols.StealDB,
        StealDB.StealDbProtocols.BasicWorkStealing,
        StealDB.StealDbProtocols.NoSteal,
        Strife.StrifeProtocol.Descriptor,
        Broken.EarlyRelease.Descriptor,
    ];

    /// <summary>A protocol that is not serializable, kept as the history checker's positive control.</summary>
    internal static string BrokenControl => Broken.EarlyRelease.Descriptor.Name;

    /// <summary>Every protocol's descriptor, the control's included (<see cref="ProtocolDescriptor.Serializable"/>).</summary>
    internal static IReadOnlyList<ProtocolDescriptor> Descriptors => Known;

    /// <summary>The names <see cref="Runtime.EngineOptions.Protocol"/> accepts: every serializable protocol's.</summary>
    public static IReadOnlyList<string> Names { get; } = Known.Where(d => d.Serializable).Select(d => d.Name).ToArray();

    /// <summary>The descriptor of the protocol named <paramref name="name"/>, in any case (the
    /// command line and a service's configuration alike); <see cref="ProtocolDescriptor.Name"/> is its spelling.</summary>
    internal static bool TryFind(string name, out ProtocolDescriptor descriptor)
    {
        descriptor = Array.Find(Known, d => string.Equals(d.Name, name, StringComparison.OrdinalIgnoreCase))!;
        return descriptor is not null;
    }

    /// <summary>The descriptor of <paramref name="name"/>; <see cref="ArgumentException"/> naming the known ones if none.</summary>
    internal static ProtocolDescriptor Find(string name) =>
        TryFind(name, out var descriptor) ? descriptor : throw new ArgumentException(Unknown(name), nameof(name));

    /// <summary>The descriptor <paramref name="protocol"/> was built by.</summary>
    internal static ProtocolDescriptor Of(IProtocol protocol) => Find(protocol.Name);

    internal static IProtocol Create(string name, ProtocolSetup setup) => Find(name).Create(setup);

    /// <summary>The one message for a name no protocol has.</summary>
    internal static string Unknown(string name) => $"unknown protocol '{name}' (known: {string.Join(", ", Names)}, and the control {BrokenControl})";
}
