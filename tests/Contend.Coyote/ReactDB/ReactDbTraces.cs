using System.Globalization;
using System.Text;
using Contend.Engine.History;
using Contend.Engine.Protocols.ReactDB;
using Microsoft.Coyote.Specifications;
using static Contend.Coyote.ReactDB.ReactDbTests;

namespace Contend.Coyote.ReactDB;

/// <summary>
/// Trace validation of ReactDB (specs/ReactDB/ReactDBTrace.tla): runs the engine under Coyote on
/// small workloads with its trace on, one schedule per Coyote seed, and writes each recorded run
/// as a TLA+ module and its TLC config, with a manifest entry for specs/check. A run of the
/// protocol must be a behaviour of Spec (TLC must violate TraceMatchedReachable); a twin's run
/// must not. Each case takes the first seed whose run shows what the case is about, so a trace
/// cannot pass by exercising nothing.
/// </summary>
/// <remarks>The workloads keep to the spec's ground (the spec module's header says where the
/// two differ): no user abort, no function that throws, and no root reading back what the others
/// left (SerializableInv orders every committed root, so a trace keeps to a few).</remarks>
public static class ReactDbTraces
{
    sealed record TraceCase(string Name, Func<ReactDbMutants, ReactDbTrace, Task> Workload, ReactDbMutants Mutant, string Shows,
                            Func<List<ReactDbEvent>, bool> Wanted) : TraceFiles.ITraceCase
    {
        public bool Twin => Mutant != ReactDbMutants.None;
    }

    static bool Has(List<ReactDbEvent> events, ReactDbStep step, bool ok = true) => events.Any(e => e.Step == step && e.Ok == ok);

    /// <summary>A root installed in two containers.</summary>
    static bool CrossContainerCommit(List<ReactDbEvent> events) =>
        events.Where(e => e.Step == ReactDbStep.WriteStep).GroupBy(e => e.Root).Any(g => g.Select(e => e.Container).Distinct().Count() > 1);

    /// <summary>A sub-transaction completed after its caller's logic had ended: a call not awaited.</summary>
    static bool CompletesAfterItsCallerEnded(List<ReactDbEvent> events)
    {
        var callerOf = new Dictionary<(long, int), int>();
        var ended = new HashSet<(long, int)>();
        foreach (var e in events)
        {
            if (e.Step == ReactDbStep.Call) callerOf[(e.Root, e.Callee)] = e.Node;
            else if (e.Step == ReactDbStep.FinishLogic) ended.Add((e.Root, e.Node));
            else if (e.Step == ReactDbStep.Complete && callerOf.TryGetValue((e.Root, e.Node), out int caller) && ended.Contains((e.Root, caller)))
                return true;
        }
        return false;
    }

    /// <summary>A root began its commit before one of its nodes completed.</summary>
    static bool CommitsBeforeItsChildren(List<ReactDbEvent> events) =>
        events.Select((e, i) => (e, i)).Any(b => b.e.Step == ReactDbStep.BeginCommit
            && events.Skip(b.i + 1).Any(c => c.Step == ReactDbStep.Complete && c.Root == b.e.Root));

    static readonly TraceCase[] Cases =
    [
        new("ReactDBTraceTransfers", Transfers, ReactDbMutants.None,
            "two transfers across two containers, one awaiting its deposit and one not: a commit in both containers, a conflict abort and its retry, a sub-transaction completing after its caller's logic ended",
            e => CrossContainerCommit(e) && Has(e, ReactDbStep.AbortAll) && CompletesAfterItsCallerEnded(e)),
        new("ReactDBTraceBlindWrite", BlindWrite, ReactDbMutants.None,
            "the blind-write workload (proofs/ReactDB.md, 4): a blind write, and a validation or lock that fails",
            e => e.Any(w => w.Step == ReactDbStep.WriteLoad && !e.Any(r => r.Step == ReactDbStep.ReadOp && r.Root == w.Root && r.Key == w.Key))
                 && (Has(e, ReactDbStep.ValidateStep, ok: false) || Has(e, ReactDbStep.LockStep, ok: false)) && Has(e, ReactDbStep.WriteStep)),
        new("ReactDBTraceSharedContext", SharedContext, ReactDbMutants.None,
            "two asynchronous sub-transactions of one root on one container with two threads: the conservative abort (D2), and the retry commits",
            e => Has(e, ReactDbStep.Dequeue, ok: false) && Has(e, ReactDbStep.WriteStep)),
        new("ReactDBTraceSynchronous", Synchronous, ReactDbMutants.None,
            "nested synchronous calls in the caller's context beside an asynchronous one, and a root that conflicts with them",
            e => Has(e, ReactDbStep.SyncReturn) && CrossContainerCommit(e)),
        new("ReactDBTraceTwinCommitBeforeWaiting", Transfers, ReactDbMutants.CommitBeforeWaiting,
            "twin: a root begins its commit before a sub-transaction it did not await has completed",
            CommitsBeforeItsChildren),
        new("ReactDBTraceTwinSkipRemoteValidation", Transfers, ReactDbMutants.SkipRemoteValidation,
            "twin: a remote container's validation passes a read that another root has since overwritten or locked",
            PassesAStaleRead),
    ];

    /// <summary>Some ValidateStep passed a read that the spec's would fail: the recorded steps
    /// replayed as the spec's store, locks and read sets.</summary>
    static bool PassesAStaleRead(List<ReactDbEvent> events)
    {
        var store = new Dictionary<long, long>();
        var locks = new Dictionary<long, long>();
        var writes = new Dictionary<(long Root, int Container), HashSet<long>>();
        var reads = new Dictionary<long, List<(long Key, int Container, long Value)>>();
        HashSet<long> WritesOf(long root, int c) => writes.TryGetValue((root, c), out var s) ? s : [];
        foreach (var e in events)
        {
            switch (e.Step)
            {
                case ReactDbStep.ReadOp:
                    if (!reads.TryGetValue(e.Root, out var rs)) reads[e.Root] = rs = new();
                    rs.Add((e.Key, e.Container, e.Read));
                    break;
                case ReactDbStep.WriteStore:
                    if (!writes.TryGetValue((e.Root, e.Container), out var ws)) writes[(e.Root, e.Container)] = ws = new();
                    ws.Add(e.Key);
                    break;
                case ReactDbStep.LockStep when e.Ok:
                    foreach (long k in WritesOf(e.Root, e.Container)) locks[k] = e.Root;
                    break;
                case ReactDbStep.ValidateStep when e.Ok:
                    foreach (var (k, c, v) in reads.GetValueOrDefault(e.Root) ?? [])
                        if (c == e.Container && (store.GetValueOrDefault(k) != v || locks.TryGetValue(k, out long holder) && holder != e.Root))
                            return true;
                    break;
                case ReactDbStep.WriteStep:
                    foreach (long k in WritesOf(e.Root, e.Container))
                    {
                        store[k] = e.Root;
                        locks.Remove(k);
                    }
                    break;
                case ReactDbStep.AbortAll:
                    foreach (var k in locks.Where(l => l.Value == e.Root).Select(l => l.Key).ToList()) locks.Remove(k);
                    break;
            }
        }
        return false;
    }

    const int MaxSeeds = 300;

    /// <summary>Records every case into <paramref name="dir"/>, adding each one's manifest entry to
    /// <paramref name="models"/>; the number of cases no seed showed.</summary>
    public static int Write(string dir, TextWriter log, List<object> models) =>
        TraceFiles.WriteCases(dir, log, models, Cases, MaxSeeds, "Coyote seed", RunSeed, (c, events) => c.Wanted(events), (c, seed, events) =>
        {
            var (module, steps) = Module(c, seed, events);
            return new TraceFiles.RecordedModule(module, Config(c), steps);
        });

    /// <summary>One Coyote schedule of the case's workload, recorded.</summary>
    static List<ReactDbEvent> RunSeed(TraceCase c, int seed)
    {
        var trace = new ReactDbTrace();
        var test = new CoyoteTest(c.Name, () =>
        {
            trace = new ReactDbTrace();
            return c.Workload(c.Mutant, trace);
        }, MaxSteps: 20_000);
        var result = CoyoteSuite.Run(test, iterations: 1, (ulong)seed);
        // A correct protocol's run must pass its own checks before its trace means anything.
        if (!c.Twin && result.Bug is not null) throw new InvalidOperationException($"{c.Name}, seed {seed}: {result.Bug}");
        return trace.Events;
    }

    static ReactDbEngine Engine(ReactorDeployment deployment, ReactDbMutants mutants, ReactDbTrace trace, int executors = 1) =>
        new(deployment, new ReactDbOptions { ExecutorsPerContainer = executors, RecordHistory = true, MaxRootsInFlight = 4 }, mutants, taskAnswers: true) { Trace = trace };

    /// <summary>Checks the run's history (a correct protocol's must be serializable), then disposes the engine.</summary>
    static async Task Finish(ReactDbEngine engine, ReactDbMutants mutants)
    {
        var report = SerializabilityChecker.Check(engine.History());
        await engine.DisposeAsync();
        if (mutants == ReactDbMutants.None)
            Specification.Assert(report.Serializable, $"SerializableInv: {report.Anomalies.FirstOrDefault()?.Description}");
    }

    static readonly ReactorFunction Overwrite = new("overwriteW", (call, _) =>
        ValueTask.FromResult(call.Overwrite(call.Reactor.Relation("balance"), 1, r => Add(r, 7))));

    /// <summary>ReactDbTests' transfers: T on container 0 moves 1 from its row 0 to acct1's row 0,
    /// awaiting the deposit; U on container 1 moves 1 from that row to acct0's row 1, not awaiting.</summary>
    static async Task Transfers(ReactDbMutants mutants, ReactDbTrace trace)
    {
        var deployment = Bank(2);
        var engine = Engine(deployment, mutants, trace);
        var (a0, a1) = (deployment.Reactors[0], deployment.Reactors[1]);
        var awaiting = new ReactorFunction("transferAwaiting", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, -1));
            return await call.CallAsync(a1, Deposit, new long[] { 0, 1 });
        });
        var firing = new ReactorFunction("transferFiring", (call, none) =>
        {
            call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, -1));
            _ = call.CallAsync(a0, Deposit, new long[] { 1, 1 });
            return ValueTask.FromResult(0L);
        });
        await Task.WhenAll(engine.ExecuteAsync(a0, awaiting, default).AsTask(), engine.ExecuteAsync(a1, firing, default).AsTask());
        await Finish(engine, mutants);
    }

    /// <summary>ReactDbTests' blind-write workload, each root tried once.</summary>
    static async Task BlindWrite(ReactDbMutants mutants, ReactDbTrace trace)
    {
        var deployment = Bank(2);
        var engine = new ReactDbEngine(deployment, new ReactDbOptions { RecordHistory = true, MaxRootsInFlight = 4, MaxAttempts = 1 }, mutants, taskAnswers: true) { Trace = trace };
        var (a0, a1) = (deployment.Reactors[0], deployment.Reactors[1]);
        var t = new ReactorFunction("readXOverwriteW", async (call, _) =>
        {
            long x = call.Read(call.Reactor.Relation("balance"), 1, Value);
            await call.CallAsync(a1, Overwrite, default);
            return x;
        });
        var u = new ReactorFunction("incrementWAndX", async (call, _) =>
        {
            call.Write(call.Reactor.Relation("balance"), 1, r => Add(r, 1));
            return await call.CallAsync(a0, Deposit, new long[] { 1, 1 });
        });
        await Task.WhenAll(engine.ExecuteAsync(a0, t, default).AsTask(), engine.ExecuteAsync(a1, u, default).AsTask());
        await Finish(engine, mutants);
    }

    /// <summary>MCReactDB's T: a root on container 0 reads its row 0 and calls two deposits on
    /// acct1 (container 1, two threads) without awaiting either first, so they may run at once in
    /// its one context there; beside it, a deposit into acct1's row 1.</summary>
    static async Task SharedContext(ReactDbMutants mutants, ReactDbTrace trace)
    {
        var deployment = Bank(2);
        var engine = Engine(deployment, mutants, trace, executors: 2);
        var (a0, a1) = (deployment.Reactors[0], deployment.Reactors[1]);
        var fanOut = new ReactorFunction("fanOut", async (call, _) =>
        {
            long x = call.Read(call.Reactor.Relation("balance"), 0, Value);
            var first = call.CallAsync(a1, Deposit, new long[] { 0, 1 });
            var second = call.CallAsync(a1, Deposit, new long[] { 1, 1 });
            return x + await first + await second;
        });
        await Task.WhenAll(engine.ExecuteAsync(a0, fanOut, default).AsTask(), engine.ExecuteAsync(a1, Deposit, new long[] { 1, 2 }).AsTask());
        await Finish(engine, mutants);
    }

    /// <summary>A root on acct0 (container 0) makes two nested synchronous calls to acct2 (also
    /// on container 0) and an asynchronous one to acct1; beside it, a root on acct2 updates the
    /// row the first synchronous call writes.</summary>
    static async Task Synchronous(ReactDbMutants mutants, ReactDbTrace trace)
    {
        var deployment = Bank(3);
        var engine = Engine(deployment, mutants, trace);
        var (a0, a1, a2) = (deployment.Reactors[0], deployment.Reactors[1], deployment.Reactors[2]);
        var depositTwice = new ReactorFunction("depositTwice", async (call, _) =>
        {
            long here = call.Write(call.Reactor.Relation("balance"), 0, r => Add(r, 1));
            return here + await call.CallAsync(a2, Deposit, new long[] { 1, 1 });
        });
        var nested = new ReactorFunction("nested", async (call, _) =>
        {
            long there = await call.CallAsync(a1, Deposit, new long[] { 0, 1 });
            return there + await call.CallAsync(a2, depositTwice, default);
        });
        await Task.WhenAll(engine.ExecuteAsync(a0, nested, default).AsTask(), engine.ExecuteAsync(a2, Deposit, new long[] { 0, 5 }).AsTask());
        await Finish(engine, mutants);
    }

    static string Config(TraceCase c) => """
        CONSTANTS
            Root <- TraceRoot
            SubTxn <- TraceNode
            RootOf <- TraceRootOf
            Reactor <- TraceReactor
            Container <- TraceContainer
            ContainerOf <- TraceContainerOf
            ReactorOf <- TraceReactorOf
            Key <- TraceKey
            KeyReactor <- TraceKeyReactor
            Ops <- TraceOps
            ContainerOrder <- TraceOrder
            Validation = "lockFirst"
            None = None
            InitVal = InitVal
            NoVal = NoVal
            TraceLog <- TraceEvents
        SPECIFICATION TraceSpec

        """ + (c.Twin
            ? "INVARIANT TraceMatchedReachable\n"
            : "INVARIANTS TypeOK TypeTraceOK SerializableInv AtomicityInv ExactlyOnceInv ResultsBeforeCommitInv OneThreadPerContextInv ConservativeAbortInv\n" +
              "PROPERTY NextStepProp\n");

    /// <summary>The run as a module extending ReactDBTrace: nodes numbered 1, 2, ... in the order
    /// they first appear (a root is its attempt's node 0), rows numbered likewise, reactors and
    /// containers by the engine's indices. A node's Ops are the operations it was recorded taking.</summary>
    static (string Module, int Steps) Module(TraceCase c, int seed, List<ReactDbEvent> events)
    {
        var number = new Dictionary<(long Root, int Node), int>();
        int Node(long root, int node)
        {
            if (!number.TryGetValue((root, node), out int n)) number[(root, node)] = n = number.Count + 1;
            return n;
        }
        var keys = new Dictionary<long, int>();
        int Key(long key)
        {
            if (!keys.TryGetValue(key, out int k)) keys[key] = k = keys.Count + 1;
            return k;
        }
        var reactorOf = new Dictionary<int, int>();
        var containerOf = new SortedDictionary<int, int>();
        var keyReactor = new Dictionary<int, int>();
        var ops = new Dictionary<int, List<string>>();
        var lines = new List<string>();
        foreach (var e in events)
        {
            int n = Node(e.Root, e.Node);
            if (!ops.ContainsKey(n)) ops[n] = new();
            if (e.Reactor >= 0)
            {
                reactorOf[n] = e.Reactor;
                containerOf[e.Reactor] = e.Container;
            }
            int k = e.Key < 0 ? 0 : Key(e.Key);
            if (k > 0) keyReactor[k] = e.Reactor;
            switch (e.Step)
            {
                case ReactDbStep.ReadOp: ops[n].Add($"[op |-> \"r\", key |-> {k}]"); break;
                case ReactDbStep.WriteStore: ops[n].Add($"[op |-> \"w\", key |-> {k}]"); break;
                case ReactDbStep.Call: ops[n].Add($"[op |-> \"call\", sub |-> {Node(e.Root, e.Callee)}]"); break;
            }
            string value = e.Step != ReactDbStep.ReadOp || e.Read == 0 ? "InitVal" : Node(e.Read, 0).ToString(CultureInfo.InvariantCulture);
            lines.Add($"    [kind |-> \"{e.Step}\", n |-> {n}, c |-> {Math.Max(e.Container, 0)}, k |-> {k}, v |-> {value}, ok |-> {(e.Ok ? "TRUE" : "FALSE")}]");
        }
        var nodes = number.OrderBy(kv => kv.Value).ToList();
        foreach (var (_, n) in nodes)
            if (!reactorOf.ContainsKey(n)) throw new InvalidOperationException($"{c.Name}, seed {seed}: node {n} took no step that names its reactor");
        string Seq(IEnumerable<string> items) => "<< " + string.Join(", ", items) + " >>";
        var sb = new StringBuilder();
        TraceFiles.AppendTitle(sb, c.Name);
        sb.Append($"\\* Recorded by tests/Contend.Coyote (traces), not written by hand: {c.Shows}.\n");
        sb.Append($"\\* Mutant {c.Mutant}, Coyote seed {seed}. Nodes, numbered in order of appearance:\n");
        foreach (var ((root, node), n) in nodes) sb.Append($"\\*   {n} = attempt {root:x}'s node {node}\n");
        sb.Append("EXTENDS ReactDBTrace\n\n");
        sb.Append($"TraceNode == 1..{nodes.Count}\n");
        sb.Append($"TraceRoot == {{{string.Join(", ", nodes.Where(x => x.Key.Node == 0).Select(x => x.Value))}}}\n");
        sb.Append($"TraceRootOf == {Seq(nodes.Select(x => number[(x.Key.Root, 0)].ToString(CultureInfo.InvariantCulture)))}\n");
        sb.Append($"TraceReactorOf == {Seq(nodes.Select(x => reactorOf[x.Value].ToString(CultureInfo.InvariantCulture)))}\n");
        sb.Append($"TraceReactor == {{{string.Join(", ", containerOf.Keys)}}}\n");
        sb.Append($"TraceContainerOf == {string.Join(" @@ ", containerOf.Select(kv => $"({kv.Key} :> {kv.Value})"))}\n");
        int containers = containerOf.Values.Max() + 1;
        sb.Append($"TraceContainer == 0..{containers - 1}\n");
        sb.Append($"TraceOrder == {Seq(Enumerable.Range(0, containers).Select(i => i.ToString(CultureInfo.InvariantCulture)))}\n");
        sb.Append($"TraceKey == 1..{keys.Count}\n");
        sb.Append($"TraceKeyReactor == {Seq(Enumerable.Range(1, keys.Count).Select(k => keyReactor[k].ToString(CultureInfo.InvariantCulture)))}\n");
        sb.Append("TraceOps == <<\n").Append(string.Join(",\n", nodes.Select(x => "    " + Seq(ops[x.Value])))).Append("\n>>\n");
        sb.Append("TraceEvents == <<\n").Append(string.Join(",\n", lines)).Append("\n>>\n");
        sb.Append(new string('=', 77)).Append('\n');
        return (sb.ToString(), lines.Count);
    }
}
