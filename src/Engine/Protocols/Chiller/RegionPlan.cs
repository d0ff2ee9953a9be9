using System.Diagnostics;
using System.Numerics;
using Contend.Engine.Cluster;
using Contend.Engine.Programs;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// What Chiller knows of a program before any instance runs (Section 3.3, step 1, done once per
/// program): which ops can be placed before step 3, and the refusals. A bit per op, as the
/// program's index.
/// </summary>
/// <remarks>
/// Decisions where the paper leaves the engine to choose:
/// <list type="bullet">
/// <item>An op is a candidate for the inner region only when its record's place is known before
/// step 3: its key comes from the arguments alone. The paper leaves out ops whose place would need
/// a secondary index (step 1); the place of a record keyed by another op's result is unknown in the
/// same way until that op runs.</item>
/// <item>Every candidate on the inner host's partition joins the inner region, hot or not
/// (Section 4.4: every record placed with the transaction's inner host can be accessed in its
/// inner region), and so does every op whose key is computed from an inner op's result: its key is
/// known only there (the paper's pk-dependency rule, step 1). The host checks that such a key is
/// on its partition; one that is not fails the transaction, naming the op.</item>
/// <item>Reads of a table every partition holds (TPC-C's items) run at the inner host's
/// partition: in step 3 with the outer region, or in the inner region when they read an inner
/// op's result. Nothing writes such a table, so they are never contended.</item>
/// <item>An insert is placed as any other op by its key. One outside the inner region claims its
/// key in step 3, after the outer partition's other locks (its claim is its lock): whatever can
/// refuse an insert (a key already there, a full table) is then known before the inner region
/// runs. So an insert that can be outside the inner region cannot read the inner region's
/// results.</item>
/// <item>An outer op that reads an inner op's result (a value dependency) takes its lock in step 3
/// and runs its body in step 5, after the inner region has committed: it is <em>deferred</em>.
/// Nothing can abort the transaction then, so the builder must have declared its body never
/// aborts (<see cref="ProgramBuilder.NeverAborts"/>): the paper's one-shot requirement, that the
/// inner host checks every constraint (step 4).</item>
/// </list>
/// </remarks>
internal sealed class RegionProgram
{
    /// <summary>Ops whose record's partition is known from the arguments: candidates for the inner region.</summary>
    public ulong Candidates { get; }
    /// <summary>Reads of a replicated table: at the inner host's partition.</summary>
    public ulong AtHost { get; }
    public TxnProgram Program { get; }

    RegionProgram(TxnProgram program, ulong candidates, ulong atHost)
    {
        Program = program;
        Candidates = candidates;
        AtHost = atHost;
    }

    /// <summary>Checks that every instance of the program can run in two regions, whatever its
    /// regions turn out to be.</summary>
    /// <exception cref="ProgramException">names the program, the op and why</exception>
    public static RegionProgram Check(TxnProgram program, IPartitionMap map)
    {
        var ops = program.Ops;
        ulong candidates = 0, atHost = 0;
        foreach (var op in ops)
        {
            if (map.Replicates(op.TableId))
            {
                if (op.Mode != AccessMode.Read)
                    throw new ProgramException($"program {program.Name}, op {op.Name}: writes table {program.Schema[op.TableId].Name}, which the partition map keeps on every partition: its copies would part");
                atHost |= Bit(op.Index);
            }
            else if (op.KeyDeps.Length == 0) candidates |= Bit(op.Index);
        }
        // What can be inner in some instance, and what can be deferred in some instance.
        ulong mayBeInner = candidates, mayBeDeferred = 0;
        foreach (int i in program.Order)
        {
            var op = ops[i];
            bool replicated = (atHost & Bit(i)) != 0;
            if (Any(op.KeyDeps, mayBeInner) || replicated && Any(op.ValueDeps, mayBeInner)) mayBeInner |= Bit(i);
            if (Any(op.ValueDeps, replicated ? mayBeDeferred : mayBeInner | mayBeDeferred) || Any(op.KeyDeps, mayBeDeferred))
                mayBeDeferred |= Bit(i);
        }
        foreach (int i in program.Order)
        {
            var op = ops[i];
            string where = $"program {program.Name}, op {op.Name}";
            if (Any(op.KeyDeps, mayBeDeferred))
                throw new ProgramException($"{where}: its key is computed from op {Name(program, op.KeyDeps, mayBeDeferred)}, whose body can run only after the inner region has committed under Chiller, so the row cannot be locked before the inner region runs (Section 3.3, step 3)");
            if ((mayBeDeferred & Bit(i)) != 0)
            {
                if (op.Mode == AccessMode.Insert)
                    throw new ProgramException($"{where}: an insert outside the inner region claims its key in step 3, before the inner region runs, but it reads {Name(program, op.ValueDeps, mayBeInner | mayBeDeferred)}, which under Chiller the inner region can run (Section 3.3, step 3)");
                if (!op.NeverAborts)
                    throw new ProgramException($"{where}: may abort, but under Chiller its body can run after the inner region has committed (it reads {Name(program, op.ValueDeps.Concat(op.KeyDeps), mayBeInner | mayBeDeferred)}, which the inner region can run), when nothing can abort the transaction: declare it with NeverAborts, or let an op of the inner region make the check (Chiller, Section 3.3, step 4)");
                if (Any(op.ValueDeps, mayBeDeferred) || Any(op.KeyDeps, mayBeDeferred))
                    throw new ProgramException($"{where}: reads op {Name(program, op.ValueDeps.Concat(op.KeyDeps), mayBeDeferred)}, and under Chiller both can run after the inner region has committed, when each outer partition runs its share at once: neither may read the other");
            }
            if ((mayBeInner & Bit(i)) != 0 && Any(op.ValueDeps, mayBeDeferred))
                throw new ProgramException($"{where}: can be in the inner region under Chiller, but reads op {Name(program, op.ValueDeps, mayBeDeferred)}, whose body can run only after the inner region has committed");
        }
        return new RegionProgram(program, candidates, atHost);
    }

    /// <summary>
    /// Steps 1 and 2 for one instance: the inner host is the partition with the most contended
    /// candidates (then the most candidates, then the lowest number; <paramref name="home"/> when
    /// the program has none); the inner region is the candidates on it, every op keyed by an inner
    /// op's result, and every replicated read of one; the deferred ops are the other outer ones
    /// that read an inner or deferred result.
    /// </summary>
    public Regions Plan(ReadOnlySpan<long> args, ChillerLookup lookup, int home)
    {
        var ops = Program.Ops;
        int partitions = lookup.Map.Partitions;
        Span<int> score = stackalloc int[partitions];
        score.Clear();
        int host = -1;
        for (ulong c = Candidates; c != 0; c &= c - 1)
        {
            var op = ops[BitOperations.TrailingZeroCount(c)];
            long key = op.ResolveKey(args, default);
            int p = lookup.Map.PartitionOf(op.TableId, key);
            // Contended candidates count first; the others break ties.
            score[p] += lookup.IsHot(op.TableId, key) ? 1 << 16 : 1;
            if (host < 0 || score[p] > score[host] || score[p] == score[host] && p < host) host = p;
        }
        if (host < 0) host = home;
        ulong inner = 0, deferred = 0;
        for (ulong c = Candidates; c != 0; c &= c - 1)
        {
            var op = ops[BitOperations.TrailingZeroCount(c)];
            if (lookup.Map.PartitionOf(op.TableId, op.ResolveKey(args, default)) == host) inner |= Bit(op.Index);
        }
        foreach (int i in Program.Order)
        {
            var op = ops[i];
            if ((inner & Bit(i)) != 0) continue;
            if (Any(op.KeyDeps, inner) || (AtHost & Bit(i)) != 0 && Any(op.ValueDeps, inner)) inner |= Bit(i);
            else if (Any(op.ValueDeps, inner | deferred)) deferred |= Bit(i);
        }
        Debug.Assert(Program.Order.All(i => (inner & Bit(i)) == 0 || !Any(ops[i].ValueDeps, deferred) && !Any(ops[i].KeyDeps, deferred)),
                     $"program {Program.Name}: an inner op reads a deferred one, which Check refuses");
        return new Regions(host, inner, deferred);
    }

    public static ulong Bit(int op) => 1UL << op;

    static bool Any(ReadOnlySpan<int> deps, ulong set)
    {
        foreach (int d in deps)
            if ((set & Bit(d)) != 0) return true;
        return false;
    }

    static string Name(TxnProgram program, IEnumerable<int> deps, ulong set) =>
        string.Join(", ", deps.Where(d => (set & Bit(d)) != 0).Distinct().Select(d => program.Ops[d].Name));
}

/// <summary>One instance's regions: the inner host's partition, the inner ops, and the outer ops
/// whose bodies wait for the inner region's results (a bit per op).</summary>
internal readonly record struct Regions(int Host, ulong Inner, ulong Deferred)
{
    public bool IsInner(int op) => (Inner & RegionProgram.Bit(op)) != 0;
    public bool IsDeferred(int op) => (Deferred & RegionProgram.Bit(op)) != 0;
}
