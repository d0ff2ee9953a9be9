using System.Globalization;
using System.Text;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.StealDB;
using static Contend.Coyote.StealDB.StealDbTests;

namespace Contend.Coyote.StealDB;

/// <summary>
/// Trace validation (specs/StealDB/StealDBTrace.tla): runs StealDB's Coyote workloads with the
/// engine's trace recording on, one schedule per Coyote seed, and writes each recorded run as a
/// TLA+ module, its TLC config and a manifest for specs/check. A run of the correct protocol
/// must be a behaviour of Spec (the manifest asks TLC to violate TraceMatchedReachable); a
/// twin's run must not (TLC must find no behaviour that matches it).
///
/// Each case takes the first seed whose run shows what the case is about (a stolen op that
/// ran, a timeout, the twin's bad step), so a trace cannot pass by exercising nothing.
/// Twins that break the atomicity of one step (read-then-clear steal, test-then-set claim)
/// cannot be seen here: the traced build runs each recorded step atomically. Coyote and P
/// catch those.
/// </summary>
public static class StealDbTraces
{
    /// <param name="Threshold">the wait threshold; int.MaxValue: none, so every wait that gives up is the detector's</param>
    sealed record TraceCase(string Name, TxnSpec[] Workload, StealPolicy Policy, StealDbMutants Mutant,
                            string Shows, Func<List<StealDbEvent>, bool> Wanted, int Threshold = 4)
    {
        public bool Twin => Mutant != StealDbMutants.None;
    }

    static bool Has(List<StealDbEvent> events, StealDbAction action, bool? ok = null) =>
        events.Any(e => e.Action == action && (ok is null || e.Ok == ok));

    static bool Committed(List<StealDbEvent> events) => Has(events, StealDbAction.OwnerDecide, ok: true);

    /// <summary>Two transactions hold one row at once: one executes on it after another did and
    /// before that one released it (only readers can).</summary>
    static bool SharedAtOnce(List<StealDbEvent> events)
    {
        var holders = new Dictionary<long, HashSet<long>>();
        var rowOf = new Dictionary<(long Tid, int Op), long>();
        foreach (var e in events)
        {
            if (e.Action == StealDbAction.RunOpTryLock) rowOf[(e.Tid, e.Op)] = e.Row;
            else if (e.Action == StealDbAction.RunOpExecute && rowOf.TryGetValue((e.Tid, e.Op), out long row))
            {
                if (!holders.TryGetValue(row, out var set)) holders[row] = set = [];
                set.Add(e.Tid);
                if (set.Count > 1) return true;
            }
            else if (e.Action == StealDbAction.OwnerRelease && holders.TryGetValue(e.Row, out var held)) held.Remove(e.Tid);
        }
        return false;
    }

    static readonly TraceCase[] Cases =
    [
        new("StealDBTraceHot", HotWorkload, StealPolicy.Queue, StealDbMutants.None,
            "waiters steal and run the holder's ops, one takes back what it handed down (C3), one transaction's logic aborts",
            e => Committed(e) && Has(e, StealDbAction.WaiterStealRun, ok: true) && Has(e, StealDbAction.WaiterStealBack)
                 && Has(e, StealDbAction.OwnerDecide, ok: false)),
        new("StealDBTraceHotTimeout", HotWorkload, StealPolicy.Queue, StealDbMutants.None,
            "a waiter on the hot record times out (C2) and its owner closes the ops nobody claimed",
            e => Committed(e) && Has(e, StealDbAction.WaiterTimeout) && Has(e, StealDbAction.OwnerCloseOp)),
        new("StealDBTraceOpposite", OppositeWorkload, StealPolicy.Queue, StealDbMutants.None,
            "opposite lock orders: the deadlock broken by a timeout (C2), the retry commits",
            e => Committed(e) && Has(e, StealDbAction.WaiterTimeout)),
        new("StealDBTraceLockOrder", LockOrderWorkload, StealPolicy.Queue, StealDbMutants.None,
            "sorted lock order broken by stealing",
            e => Committed(e) && Has(e, StealDbAction.WaiterStealRun, ok: true)),
        new("StealDBTraceTwoHot", TwoHotWorkload, StealPolicy.Queue, StealDbMutants.None,
            "two waiters behind one predecessor, on two records",
            e => Committed(e) && e.Count(x => x.Action == StealDbAction.WaiterStealSwap) >= 2),
        new("StealDBTraceBasicWSHot", HotWorkload, StealPolicy.Basic, StealDbMutants.None,
            "basic work stealing: waiters take the holder's ops by CAS",
            e => Committed(e) && Has(e, StealDbAction.WaiterStealBasic)),
        new("StealDBTraceNoStealOpposite", OppositeWorkload, StealPolicy.None, StealDbMutants.None,
            "vanilla 2PL over MCS locks: the deadlock broken by a timeout",
            e => Committed(e) && Has(e, StealDbAction.WaiterTimeout)),
        new("StealDBTraceThrowing", ThrowingWorkload, StealPolicy.Queue, StealDbMutants.None,
            "a waiter runs the holder's last op, whose body throws: a failing op, as the spec's, and the holder aborts",
            e => Committed(e) && e.Any(x => x.Action == StealDbAction.RunOpExecute && !x.Ok && x.Worker != x.Tid)),
        new("StealDBTraceDetectOpposite", OppositeWorkload, StealPolicy.Queue, StealDbMutants.None,
            "opposite lock orders with no wait threshold: the deadlock detector ends the deadlock, the retry commits",
            e => Committed(e) && Has(e, StealDbAction.DetectorAbort), Threshold: int.MaxValue),
        new("StealDBTraceDetectLockOrder", LockOrderWorkload, StealPolicy.Queue, StealDbMutants.None,
            "sorted lock order broken by stealing, no wait threshold: the detector ends the deadlock stealing made",
            e => Committed(e) && Has(e, StealDbAction.DetectorAbort), Threshold: int.MaxValue),
        new("StealDBTraceSharedHot", HotReadWorkload, StealPolicy.Queue, StealDbMutants.None,
            "reader-writer locks: two readers share the hot record while the writer waits, and a waiter steals",
            e => Committed(e) && Has(e, StealDbAction.WaiterStealRun, ok: true) && SharedAtOnce(e)),
        new("StealDBTraceDetectSharedOpposite", SharedOppositeWorkload, StealPolicy.Queue, StealDbMutants.None,
            "each transaction reads one record then writes the other, no wait threshold: the detector ends the deadlock through the two shares",
            e => Committed(e) && Has(e, StealDbAction.DetectorAbort), Threshold: int.MaxValue),
        new("StealDBTraceTwinEarlyRelease", HotWorkload, StealPolicy.Queue, StealDbMutants.EarlyRelease,
            "twin: an op releases its lock as soon as it has run",
            e => Has(e, StealDbAction.OwnerRelease)),
        new("StealDBTraceTwinRunWithoutLock", HotWorkload, StealPolicy.Queue, StealDbMutants.RunWithoutLock,
            "twin: a queued op runs without waiting for the lock",
            e => e.Any(x => x.Action == StealDbAction.RunOpTryLock && x.Predecessor != 0)),
        new("StealDBTraceTwinTimeoutLeavesQueue", HotWorkload, StealPolicy.Queue, StealDbMutants.TimeoutLeavesQueue,
            "twin: a timed-out waiter's lock context leaves the queue before it reaches the head",
            ReleasesBehindHead),
    ];

    /// <summary>Some transaction releases a lock context that is not at the head of its queue:
    /// the recorded appends and releases replayed as the spec's lockQ.</summary>
    static bool ReleasesBehindHead(List<StealDbEvent> events)
    {
        var queues = new Dictionary<long, List<long>>();
        foreach (var e in events)
        {
            if (e.Action == StealDbAction.RunOpTryLock)
            {
                if (!queues.TryGetValue(e.Row, out var q)) queues[e.Row] = q = new List<long>();
                q.Add(e.Tid);
            }
            else if (e.Action == StealDbAction.OwnerRelease)
            {
                var q = queues[e.Row];
                if (q[0] != e.Worker) return true;
                q.RemoveAt(0);
            }
        }
        return false;
    }

    const int MaxSeeds = 500;

    /// <summary>Records every case into <paramref name="dir"/>, adding each one's manifest entry to
    /// <paramref name="models"/>; the number of cases no seed showed. With <paramref name="runs"/>
    /// &gt; 0 (for manual runs), each workload and policy of the correct cases is also recorded on
    /// seeds 1..runs, whatever the run shows.</summary>
    public static int Write(string dir, TextWriter log, List<object> models, int runs = 0)
    {
        Directory.CreateDirectory(dir);
        var used = new HashSet<(TxnSpec[], StealPolicy, StealDbMutants, int)>();
        int missing = 0;
        foreach (var c in Cases)
        {
            var found = Record(c, used);
            if (found is null)
            {
                log.WriteLine($"FAIL {c.Name}: no seed in 1..{MaxSeeds} gives a run that shows: {c.Shows}");
                missing++;
                continue;
            }
            var (seed, events, rowKeys) = found.Value;
            models.Add(Emit(dir, c, seed, events, rowKeys));
            log.WriteLine($"ok   {c.Name}: seed {seed}, {events.Count} steps ({c.Shows})");
        }
        var swept = new HashSet<(TxnSpec[], StealPolicy)>();
        foreach (var c in Cases.Where(c => !c.Twin && runs > 0 && swept.Add((c.Workload, c.Policy))))
        {
            for (int seed = 1; seed <= runs; seed++)
            {
                var run = c with { Name = $"{c.Name}Seed{seed}", Shows = "whatever this seed's run shows" };
                var (events, rowKeys) = RunSeed(run, seed);
                models.Add(Emit(dir, run, seed, events, rowKeys));
            }
            log.WriteLine($"ok   {c.Name}: seeds 1..{runs} recorded");
        }
        return missing;
    }

    /// <summary>Writes the run's module and config; returns its manifest entry.</summary>
    static object Emit(string dir, TraceCase c, int seed, List<StealDbEvent> events, Dictionary<long, int> rowKeys) =>
        TraceFiles.Write(dir, c.Name, Module(c, seed, events, rowKeys), Config(c), c.Twin, $"{c.Shows}; Coyote seed {seed}, {events.Count} steps");

    /// <summary>The first run that shows what the case is about, skipping the seeds an earlier case
    /// of the same workload took (the same seed would record the same run).</summary>
    static (int Seed, List<StealDbEvent> Events, Dictionary<long, int> RowKeys)? Record(
        TraceCase c, HashSet<(TxnSpec[], StealPolicy, StealDbMutants, int)> used)
    {
        for (int seed = 1; seed <= MaxSeeds; seed++)
        {
            if (used.Contains((c.Workload, c.Policy, c.Mutant, seed))) continue;
            var (events, rowKeys) = RunSeed(c, seed);
            if (!c.Wanted(events)) continue;
            used.Add((c.Workload, c.Policy, c.Mutant, seed));
            return (seed, events, rowKeys);
        }
        return null;
    }

    /// <summary>One Coyote schedule of the case's workload, recorded.</summary>
    static (List<StealDbEvent> Events, Dictionary<long, int> RowKeys) RunSeed(TraceCase c, int seed)
    {
        var trace = new StealDbTrace();
        var rowKeys = new Dictionary<long, int>();
        var test = new CoyoteTest(c.Name, () =>
        {
            trace = new StealDbTrace();
            rowKeys = new Dictionary<long, int>();
            return Run(c.Workload, c.Policy, c.Mutant, trace, rowKeys, checks: !c.Twin, threshold: c.Threshold);
        }, MaxSteps: 20_000);
        var result = CoyoteSuite.Run(test, iterations: 1, (ulong)seed);
        // A correct protocol's run must pass its own checks before its trace means anything.
        if (!c.Twin && result.Bug is not null) throw new InvalidOperationException($"{c.Name}, seed {seed}: {result.Bug}");
        return (trace.Events, rowKeys);
    }

    static string Config(TraceCase c)
    {
        string policy = c.Policy switch { StealPolicy.Queue => "queue", StealPolicy.Basic => "basic", _ => "none" };
        string checks = c.Twin
            ? "INVARIANT TraceMatchedReachable\n"
            : "INVARIANTS TypeOK TypeTraceOK ExactlyOnceInv MutualExclusionInv StealTokenTakenOnceInv\n" +
              "PROPERTIES NextStepProp TwoPhaseProp SerializableRefinementProp CoreRefinementProp\n";
        return $"""
            CONSTANTS
                Txn <- TraceTxn
                Rec <- TraceRec
                Prog <- TraceProg
                TraceLog <- TraceEvents
                StealPolicy = "{policy}"
                SharedReads = TRUE
                Bot = Bot
                InitVal = InitVal
                NoVal = NoVal
            SPECIFICATION TraceSpec

            """ + checks;
    }

    static string WorkloadName(TxnSpec[] w) =>
        w == HotWorkload ? "HotProg" : w == OppositeWorkload ? "OppositeProg" : w == LockOrderWorkload ? "LockOrderProg"
        : w == TwoHotWorkload ? "TwoHotProg (engine variant)" : w == ThrowingWorkload ? "HotProg, the first transaction's last op throwing"
        : w == HotReadWorkload ? "HotReadProg (a reader's abort)" : w == SharedOppositeWorkload ? "SharedOppositeProg" : "?";

    /// <summary>The run as a module extending StealDBTrace. Attempts are numbered 1, 2, ... in the
    /// order they first appear; ops and runnable-queue positions are 1-based, as in the spec.</summary>
    static string Module(TraceCase c, int seed, List<StealDbEvent> events, Dictionary<long, int> rowKeys)
    {
        var number = new Dictionary<long, int>();
        string Txn(long tid)
        {
            if (tid == 0) return "Bot";
            if (!number.TryGetValue(tid, out int n)) number[tid] = n = number.Count + 1;
            return n.ToString(CultureInfo.InvariantCulture);
        }
        string Rec(int row) => $"\"r{row}\"";
        string Op(long tid, int op) => tid == 0 || op < 0 ? "Bot" : $"<<{Txn(tid)}, {op + 1}>>";
        string Bool(bool b) => b ? "TRUE" : "FALSE";

        var lines = new List<string>();
        foreach (var e in events)
        {
            string tok = e.Token.Tid == 0 ? "Bot" : $"<<{Txn(e.Token.Tid)}, {e.Token.Position}>>";
            string read = e.Action != StealDbAction.RunOpExecute ? "Bot" : e.Read == 0 ? "InitVal" : Txn(e.Read);
            string rec = e.Row < 0 ? "Bot" : Rec(rowKeys[e.Row]);
            lines.Add($"    [kind |-> \"{e.Action}\", w |-> {Txn(e.Worker)}, op |-> {Op(e.Tid, e.Op)}, ok |-> {Bool(e.Ok)}, " +
                      $"pred |-> {Txn(e.Predecessor)}, from |-> {Txn(e.From)}, tok |-> {tok}, rec |-> {rec}, read |-> {read}]");
        }
        var worker = number.OrderBy(kv => kv.Value).Select(kv => (Tid: kv.Key, N: kv.Value)).ToList();
        string Ops(TxnSpec t) => "<< " + string.Join(", ", t.Ops.Select((o, i) =>
            $"[rec |-> {Rec(o.Row)}, deps |-> {{{string.Join(", ", o.Deps.Select(d => d + 1))}}}, write |-> {Bool(!o.Reads)}, " +
            $"mayAbort |-> {Bool((t.UserAbort || t.Throws) && i == t.Ops.Length - 1)}]")) + " >>";
        var progs = worker.Select(w => $"    ({w.N} :> {Ops(c.Workload[(int)(w.Tid & 0xFF)])})");
        var recs = worker.SelectMany(w => c.Workload[(int)(w.Tid & 0xFF)].Ops.Select(o => Rec(o.Row))).Distinct();

        var sb = new StringBuilder();
        TraceFiles.AppendTitle(sb, c.Name);
        sb.Append($"\\* Recorded by tests/Contend.Coyote (traces), not written by hand: {c.Shows}.\n");
        sb.Append($"\\* Workload {WorkloadName(c.Workload)}, policy {c.Policy}, mutant {c.Mutant}, Coyote seed {seed}.\n");
        sb.Append("\\* Transactions are the engine's attempts, numbered in order of appearance:\n");
        foreach (var w in worker) sb.Append($"\\*   {w.N} = worker {w.Tid & 0xFF}'s attempt {w.Tid >> 8}\n");
        sb.Append("EXTENDS StealDBTrace\n\n");
        sb.Append($"TraceTxn == {{{string.Join(", ", worker.Select(w => w.N))}}}\n");
        sb.Append($"TraceRec == {{{string.Join(", ", recs)}}}\n");
        sb.Append("TraceProg ==\n").Append(string.Join(" @@\n", progs)).Append('\n');
        sb.Append("TraceEvents == <<\n").Append(string.Join(",\n", lines)).Append("\n>>\n");
        sb.Append(new string('=', 77)).Append('\n');
        return sb.ToString();
    }
}
