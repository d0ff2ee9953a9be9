namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>The descriptors of the 2PL protocols (<see cref="ProtocolRegistry"/>).</summary>
internal static class TwoPhaseLockingProtocols
{
    static readonly Type Mutants = typeof(TwoPhaseLockingMutants);

    public static readonly ProtocolDescriptor NoWait = new("NoWait", "2PL, abort when a lock is held",
        ProtocolKind.PerTransaction, null, s => new NoWait(s), mutants: Mutants);

    public static readonly ProtocolDescriptor WaitDie = new("WaitDie", "2PL, an older requester waits, a younger one aborts",
        ProtocolKind.PerTransaction, null, s => new WaitDie(s), mutants: Mutants);

    public static readonly ProtocolDescriptor WaitsFor = new("WaitsFor", "2PL, wait; abort on a cycle of the waits-for graph",
        ProtocolKind.PerTransaction, null, s => new WaitsFor(s), mutants: Mutants);

    public static readonly ProtocolDescriptor Ordered = new("Ordered", "2PL, every lock taken up front in key order, then wait",
        ProtocolKind.PerTransaction, null, s => new Ordered(s), mutants: Mutants, refuses: KeysFromResults);

    /// <summary>Ordered takes every lock before any op runs, so each key must be known from the arguments alone.</summary>
    static string? KeysFromResults(Programs.TxnProgram program) => program.HasKeyDependencies
        ? $"program {program.Name} computes keys from earlier ops' results, so Ordered cannot take its locks up front"
        : null;

    public static readonly ProtocolDescriptor Mcs = new("Mcs", "2PL on reader-writer MCS queue locks, abort on a detected deadlock or after a wait threshold",
        ProtocolKind.PerTransaction, typeof(McsOptions), s => new Mcs(s, s.Options as McsOptions ?? new McsOptions()), mutants: Mutants,
        knobs: McsOptions.CommandLine);
}
