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
            mutants: typeof(StealDbMutants), refuses: TwoOpsOnOneRow, knobs: StealDbOptions.CommandLine);

    /// <summary>Two ops that always use one row, one of them a write: keyed by the same argument, on the same table (two reads share it).
    /// StealDB runs each op under its own row's lock, so such a program fails every call
    /// (<see cref="StealDb"/>'s refusal of an op queued on its own row); a program whose ops meet
    /// on one row only for some arguments fails only those calls.</summary>
    static string? TwoOpsOnOneRow(Programs.TxnProgram program)
    {
        var ops = program.Ops;
        for (int i = 0; i < ops.Length; i++)
            for (int j = i + 1; j < ops.Length; j++)
                if (Locks(ops[i]) && Locks(ops[j]) && (Writes(ops[i]) || Writes(ops[j])) && ops[i].TableId == ops[j].TableId
                    && ops[i].KeyArg >= 0 && ops[i].KeyArg == ops[j].KeyArg)
                    return $"program {program.Name}: ops {ops[i].Name} and {ops[j].Name} always use one row (both keyed by argument {ops[i].KeyArg} of the same table); StealDB runs each op under its own row's lock, so each op must use a row of its own";
        return null;

        static bool Locks(Programs.Op op) => op.Mode != Programs.AccessMode.Insert;
        static bool Writes(Programs.Op op) => op.Mode is Programs.AccessMode.Write or Programs.AccessMode.ReadOrWrite;
    }

    public static readonly ProtocolDescriptor StealDB = Describe("StealDB",
        "queue-stealing 2PL: a lock waiter runs the holder's ops, contexts handed down the MCS queue", StealPolicy.Queue);

    public static readonly ProtocolDescriptor BasicWorkStealing = Describe("StealDBBasicWS",
        "StealDB's code, every waiter steals from the lock holder's one word by CAS (basic work stealing)", StealPolicy.Basic);

    public static readonly ProtocolDescriptor NoSteal = Describe("StealDBNoSteal",
        "StealDB's code with stealing off: 2PL on MCS queue locks over the op DAG (vanilla)", StealPolicy.None);
}
