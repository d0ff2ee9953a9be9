namespace Contend.Engine.Protocols.StealDB;

/// <summary>The descriptors of StealDB and its two baselines, one code under three steal
/// policies (<see cref="ProtocolRegistry"/>).</summary>
internal static class StealDbProtocols
{
    static readonly ProtocolCounter Stolen = new("contend.stealdb.ops.stolen", "{operation}",
        "ops a StealDB lock waiter ran for the transaction ahead of it", p => ((StealDb)p).StolenOps);

    static ProtocolDescriptor Describe(string name, string description, StealPolicy policy) =>
        new(name, description, ProtocolKind.PerTransaction, typeof(StealDbOptions),
            s => new StealDb(s, policy, s.Options as StealDbOptions ?? new StealDbOptions(), name),
            counters: [Stolen], report: (p, _) => new ProtocolReport(new Dictionary<string, double> { [StealDb.StolenShareName] = ((StealDb)p).StolenShare }, null),
            mutants: typeof(StealDbMutants));

    public static readonly ProtocolDescriptor StealDB = Describe("StealDB",
        "queue-stealing 2PL: a lock waiter runs the holder's ops, contexts handed down the MCS queue", StealPolicy.Queue);

    public static readonly ProtocolDescriptor BasicWorkStealing = Describe("StealDBBasicWS",
        "StealDB's code, every waiter steals from the lock holder's one word by CAS (basic work stealing)", StealPolicy.Basic);

    public static readonly ProtocolDescriptor NoSteal = Describe("StealDBNoSteal",
        "StealDB's code with stealing off: 2PL on MCS queue locks over the op DAG (vanilla)", StealPolicy.None);
}
