using System.CommandLine;
using System.Diagnostics;
using System.Globalization;
using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.Chiller;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Harness.Workloads;

namespace Contend.Harness;

/// <summary>
/// <c>contend cluster</c>: YCSB (spread by a hash of the key) or TPC-C (split by warehouse) over a
/// simulated cluster, two-phase commit over NoWait, WaitDie or Silo, or Chiller, with the network's
/// delay as a knob, and for TPC-C the probability of a remote warehouse (Chiller's Section 7.4.2).
/// The run is the deterministic simulation (<see cref="TwoPhaseCommitSimulation"/>,
/// <see cref="ChillerSimulation"/>): its throughput and latency are in virtual time,
/// figures of the model (message delays, lock waits, retries; an op's own work costs nothing),
/// not of this machine's speed, and the same command gives the same figures anywhere.
/// </summary>
/// <remarks>Decision: <c>contend run --partitions</c>, as the cluster's design names it, already means
/// YCSB's key ranges (Strife's study), so the cluster's knobs live in a command of their own.</remarks>
internal static class ClusterCommand
{
    /// <summary>The protocol the cluster runs besides two-phase commit.</summary>
    public const string Chiller = "Chiller";

    public static Command Create()
    {
        var protocol = new Option<string>("--protocol") { Description = $"Chiller, or two-phase commit over one of {string.Join(", ", TwoPhaseCommitSimulation.Protocols)}", Required = true };
        var replicas = new Option<int>("--replicas") { Description = "Chiller: copies of each partition, its primary first (two-phase commit uses primaries alone)", DefaultValueFactory = _ => 1 };
        var hot = new Option<int>("--hot-keys") { Description = "Chiller over ycsb: the lookup table marks keys 1..N contended, the Zipf generator's most drawn (tpcc: warehouses and districts)", DefaultValueFactory = _ => 64 };
        var nodes = new Option<int>("--nodes") { Description = "nodes", DefaultValueFactory = _ => 2 };
        var partitions = new Option<int>("--partitions") { Description = "partitions, spread over the nodes round robin (0: one per node)", DefaultValueFactory = _ => 0 };
        var delay = new Option<double>("--network-delay-us") { Description = "one-way delay of a message between nodes, microseconds", DefaultValueFactory = _ => 10 };
        var slots = new Option<int>("--slots") { Description = "transactions each node coordinates at once", DefaultValueFactory = _ => 4 };
        var workers = new Option<int>("--workers") { Description = "each node's worker threads, which the messages it handles share (0: nodes work in no time)", DefaultValueFactory = _ => 0 };
        var messageCost = new Option<double>("--message-cost-us") { Description = "with --workers: a worker's time to handle a message from another node, microseconds", DefaultValueFactory = _ => 1 };
        var opCost = new Option<double>("--op-cost-us") { Description = "with --workers: a worker's time to run one op, microseconds", DefaultValueFactory = _ => 1 };
        var seconds = new Option<double>("--seconds") { Description = "virtual seconds of the run", DefaultValueFactory = _ => 0.5 };
        var seed = new Option<ulong>("--seed") { Description = "the run's seed: workload, backoffs and network", DefaultValueFactory = _ => 1 };
        var check = new Option<bool>("--check") { Description = "check the merged history is serializable, and atomicity" };
        var rows = new Option<long>("--rows") { Description = "ycsb: rows", DefaultValueFactory = _ => 100_000 };
        var requests = new Option<int>("--requests") { Description = "ycsb: requests per transaction", DefaultValueFactory = _ => 16 };
        var readFraction = new Option<double>("--read-fraction") { Description = "ycsb: fraction of requests that read", DefaultValueFactory = _ => 0.5 };
        var theta = new Option<double>("--theta") { Description = "ycsb: Zipf skew in [0, 1)", DefaultValueFactory = _ => 0.9 };
        var workloadName = new Option<string>("--workload") { Description = "ycsb or tpcc", DefaultValueFactory = _ => "ycsb" };
        var warehouses = new Option<int>("--warehouses") { Description = "tpcc: warehouses, round robin over the partitions (0: one per partition)", DefaultValueFactory = _ => 0 };
        var remote = new Option<double?>("--remote") { Description = "tpcc: probability that a Payment's customer, and one line of a NewOrder, is of another warehouse (default: TPC-C's 15% and 1% a line)" };
        var noInserts = new Option<bool>("--no-inserts") { Description = "tpcc: leave out inserts and the 1% rollback" };
        var crashNode = new Option<int?>("--crash-node") { Description = "Chiller: stop this node once, then recover (needs --replicas 2 or more; every copy gets a node of its own)" };
        var crashAt = new Option<double>("--crash-at-ms") { Description = "Chiller, with --crash-node: the virtual time from which the node stops after its next --crash-after step", DefaultValueFactory = _ => 0 };
        var crashAfter = new Option<string>("--crash-after") { Description = $"Chiller, with --crash-node: the step after which it stops, one of {string.Join(", ", ChillerCrashPoints.Recovered.Order())}", DefaultValueFactory = _ => nameof(ChillerStep.InnerCommit) };
        var coordinatorNodes = new Option<string?>("--coordinator-nodes") { Description = "Chiller: the nodes that coordinate transactions, comma-separated (default: those that hold a primary)" };
        var detection = new Option<double>("--detection-us") { Description = "Chiller: how long after a node stops the failure detector suspects it, microseconds", DefaultValueFactory = _ => 500 };
        var timeline = new Option<double>("--timeline-ms") { Description = "Chiller: print the commits of each window of this many virtual milliseconds, and the recovery's steps (0: no timeline)", DefaultValueFactory = _ => 0 };
        var command = new Command("cluster", "YCSB or TPC-C across partitions of a simulated cluster: Chiller, or two-phase commit over NoWait, WaitDie or Silo, in virtual time")
        { protocol, replicas, hot, workers, messageCost, opCost, nodes, partitions, delay, slots, seconds, seed, check, rows, requests, readFraction, theta, workloadName, warehouses, remote, noInserts,
          crashNode, crashAt, crashAfter, coordinatorNodes, detection, timeline };
        (Option Option, string Workload)[] knobs =
            [(rows, "ycsb"), (requests, "ycsb"), (readFraction, "ycsb"), (theta, "ycsb"), (warehouses, "tpcc"), (remote, "tpcc"), (noInserts, "tpcc")];
        command.SetAction(p =>
        {
            string name = Runner.ProtocolSpelling(p.GetValue(protocol)!);
            bool chiller = name == Chiller;
            if (!chiller && !TwoPhaseCommitSimulation.Protocols.Contains(name))
                throw new UsageException($"--protocol {name}: the cluster runs Chiller, or two-phase commit over {string.Join(", ", TwoPhaseCommitSimulation.Protocols)}");
            if (!chiller && p.GetResult(replicas) is { Implicit: false }) throw new UsageException("--replicas is a Chiller knob: two-phase commit runs on the primaries alone");
            if (!chiller && p.GetResult(hot) is { Implicit: false }) throw new UsageException("--hot-keys is a Chiller knob");
            foreach (Option knob in new Option[] { crashNode, crashAt, crashAfter, coordinatorNodes, detection, timeline })
                if (!chiller && p.GetResult(knob) is { Implicit: false }) throw new UsageException($"{knob.Name} is a Chiller knob");
            int n = p.GetValue(nodes), parts = p.GetValue(partitions) is 0 ? n : p.GetValue(partitions);
            double us = p.GetValue(delay), secs = p.GetValue(seconds);
            if (!(us > 0) || us > 1_000_000) throw new UsageException($"--network-delay-us {us.ToString(CultureInfo.InvariantCulture)}: must be in (0, 1000000]");
            if (!(secs > 0) || secs > 60) throw new UsageException($"--seconds {secs.ToString(CultureInfo.InvariantCulture)}: must be in (0, 60] (virtual)");
            bool crashing = p.GetValue(crashNode) is not null;
            if (!crashing && (p.GetResult(crashAt) is { Implicit: false } || p.GetResult(crashAfter) is { Implicit: false }))
                throw new UsageException("--crash-at-ms and --crash-after say when --crash-node stops: give the node");
            // Every copy on a node of its own when there are nodes enough (crashes need it, so that
            // one node's stop is one copy's; a run without a crash compares with one with it).
            var topology = new ClusterTopology(n, parts, p.GetValue(replicas), replicasApart: crashing || n >= parts * p.GetValue(replicas));
            string chosen = p.GetValue(workloadName)!;
            if (chosen is not ("ycsb" or "tpcc")) throw new UsageException($"--workload {chosen}: the cluster runs ycsb or tpcc");
            WorkloadKnobs.RefuseOthers(knobs, chosen, p);
            IPartitionedWorkload workload;
            IPartitionMap? map = null;
            string placement;
            if (chosen == "tpcc")
            {
                int w = p.GetValue(warehouses) is 0 ? parts : p.GetValue(warehouses);
                if (w is < 1 or > 1000) throw new UsageException($"--warehouses {w}: must be in 1..1000");
                if (p.GetValue(remote) is double q && !(q >= 0 && q <= 1)) throw new UsageException($"--remote {q.ToString(CultureInfo.InvariantCulture)}: must be in [0, 1]");
                var tpcc = new Tpcc(w, !p.GetValue(noInserts), orderCapacity: 1_000_000, remote: p.GetValue(remote));
                workload = tpcc;
                map = new Tpcc.WarehouseMap(parts);
                placement = $"{tpcc.Describe()}; split by warehouse over the partitions, items on every one";
            }
            else
            {
                var ycsb = new Ycsb(p.GetValue(rows), p.GetValue(requests), p.GetValue(readFraction), p.GetValue(theta));
                workload = ycsb;
                placement = ycsb.Describe().Replace("; a key", "; spread by a hash over the partitions; a key");
            }
            var oneWay = TimeSpan.FromTicks((long)Math.Round(us * TimeSpan.TicksPerMicrosecond));
            if (p.GetValue(workers) is < 0 or > 1024) throw new UsageException($"--workers {p.GetValue(workers)}: must be in 0..1024");
            foreach (var (option, value) in new[] { (messageCost, p.GetValue(messageCost)), (opCost, p.GetValue(opCost)) })
                if (!(value >= 0) || value > 1_000_000) throw new UsageException($"{option.Name} {value.ToString(CultureInfo.InvariantCulture)}: must be in [0, 1000000]");
            CpuModel? cpu = p.GetValue(workers) == 0 ? null
                : new CpuModel(p.GetValue(workers), TimeSpan.FromTicks((long)Math.Round(p.GetValue(messageCost) * TimeSpan.TicksPerMicrosecond)),
                               TimeSpan.FromTicks((long)Math.Round(p.GetValue(opCost) * TimeSpan.TicksPerMicrosecond)));
            if (chiller)
            {
                var lookup = new ChillerLookup(map ?? new HashPartitionMap(parts));
                if (chosen == "tpcc") lookup.MarkHotTable(Tpcc.WarehouseTableId).MarkHotTable(Tpcc.DistrictTableId);
                else
                {
                    if (p.GetValue(hot) < 0) throw new UsageException($"--hot-keys {p.GetValue(hot)}: must be 0 or more");
                    for (long k = 1; k <= p.GetValue(hot); k++) lookup.MarkHot(0, k);
                }
                var chillerOptions = new ChillerOptions(topology, lookup, p.GetValue(seed), p.GetValue(slots))
                {
                    Faults = NetworkFaults.Delay(oneWay),
                    Cpu = cpu,
                    CoordinatorNodes = CoordinatorNodes(p.GetValue(coordinatorNodes)),
                    DetectionDelay = Micros(detection.Name, p.GetValue(detection)),
                    Crashes = crashing ? [Crash(p.GetValue(crashNode)!.Value, p.GetValue(crashAfter)!, p.GetValue(crashAt))] : [],
                };
                double window = p.GetValue(timeline);
                if (!(window >= 0) || window > 60_000) throw new UsageException($"--timeline-ms {window.ToString(CultureInfo.InvariantCulture)}: must be in [0, 60000]");
                var events = window > 0 ? new List<ChillerEvent>() : null;
                if (events is not null)
                    chillerOptions = chillerOptions with
                    {
                        Observer = e =>
                        {
                            if (e.Step is null or ChillerStep.InnerCommit or ChillerStep.RecoveryCommit || ChillerCrashPoints.Recovery.Contains(e.Step.Value) && e.Txn == 0) events.Add(e);
                        },
                    };
                var clock = Stopwatch.StartNew();
                ChillerRunResult c;
                try
                {
                    c = ChillerSimulation.Run(workload, chillerOptions, TimeSpan.FromSeconds(secs));
                }
                catch (ArgumentException e)
                {
                    throw new UsageException(e.Message);
                }
                clock.Stop();
                Print($"Chiller: {topology}, {lookup}", c.Run, us, chillerOptions.SlotsPerNode, cpu, secs, clock.Elapsed);
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"  {c.InnerCommits:N0} inner commits, {c.TwoRegionCommits / (double)Math.Max(1, c.Run.Stats.Commits):P1} of commits in two regions, {c.DeferredBodies:N0} outer bodies after their inner region, {c.LogEntries:N0} log entries shipped"));
                Console.WriteLine(placement);
                if (events is not null) PrintTimeline(events, TimeSpan.FromMilliseconds(window), TimeSpan.FromSeconds(secs));
                if (c.Crashed.Count > 0)
                    Console.WriteLine("recovery steps: " + string.Join(", ", ChillerCrashPoints.Recovery.Order()
                        .Where(s => c.Steps.GetValueOrDefault(s) > 0).Select(s => $"{s} {c.Steps[s]:N0}")));
                if (crashing && c.Crashed.Count == 0)
                    Console.WriteLine($"--crash-node {p.GetValue(crashNode)}: the node never took {p.GetValue(crashAfter)} from {p.GetValue(crashAt).ToString(CultureInfo.InvariantCulture)} ms on, so it did not stop");
                return Verdict(c.Run, p.GetValue(check), c.ReplicaDisagreements);
            }
            var options = new TwoPhaseCommitOptions(name, topology, p.GetValue(seed), p.GetValue(slots))
            {
                Map = map,
                Faults = NetworkFaults.Delay(oneWay),
                Cpu = cpu,
                // A reply needs two messages; a lock wait can add a few round trips more.
                ReplyTimeout = TimeSpan.FromTicks(Math.Max(oneWay.Ticks * 40, TimeSpan.TicksPerMillisecond)),
                Retransmit = TimeSpan.FromTicks(Math.Max(oneWay.Ticks * 4, 10 * TimeSpan.TicksPerMicrosecond)),
            };
            var wall = Stopwatch.StartNew();
            var r = TwoPhaseCommitSimulation.Run(workload, options, TimeSpan.FromSeconds(secs));
            wall.Stop();
            Print($"{name} over two-phase commit: {topology}", r, us, options.SlotsPerNode, cpu, secs, wall.Elapsed);
            Console.WriteLine(placement);
            return Verdict(r, p.GetValue(check), []);
        });
        return command;
    }

    /// <summary>The options of <c>contend run</c> that mean the same in the cluster: the workload, its
    /// ycsb and tpcc knobs, the run's length, seed and check.</summary>
    static readonly string[] CarriedFromRun =
        ["--workload", "--seconds", "--seed", "--check", "--rows", "--requests", "--read-fraction", "--theta", "--warehouses", "--remote", "--no-inserts"];

    /// <summary>
    /// <c>contend run --protocol Chiller</c>: Chiller runs only across the partitions of a cluster, so
    /// the run is this command's, on its default cluster, with the options that mean the same here.
    /// </summary>
    /// <remarks>Decision: the run is forwarded rather than built a second time. An option of
    /// <c>contend run</c> that means something else here (<c>--threads</c> counts this machine's
    /// workers, <c>--partitions</c> YCSB's key ranges, <c>--seconds</c> wall time) is refused, not
    /// reinterpreted; <c>--seconds</c> is carried and printed as virtual seconds.</remarks>
    public static int RunChillerFor(ParseResult run)
    {
        var args = new List<string> { "--protocol", Chiller };
        foreach (var given in run.CommandResult.Children.OfType<System.CommandLine.Parsing.OptionResult>().Where(o => !o.Implicit))
        {
            string name = given.Option.Name;
            if (name == "--protocol") continue;
            if (!CarriedFromRun.Contains(name))
                throw new UsageException($"{name} does not apply to Chiller, which runs on a simulated cluster in virtual time: contend cluster --protocol Chiller has its knobs");
            args.Add(name);
            args.AddRange(given.Tokens.Select(t => t.Value));
        }
        Console.WriteLine($"Chiller runs across the partitions of a simulated cluster: contend cluster {string.Join(' ', args)}");
        var parsed = Create().Parse(args);
        if (parsed.Errors.Count > 0) throw new UsageException(parsed.Errors[0].Message);
        return parsed.Invoke(new InvocationConfiguration { EnableDefaultExceptionHandler = false });
    }

    static TimeSpan Micros(string option, double us)
    {
        if (!(us > 0) || us > 1_000_000) throw new UsageException($"{option} {us.ToString(CultureInfo.InvariantCulture)}: must be in (0, 1000000]");
        return TimeSpan.FromTicks((long)Math.Round(us * TimeSpan.TicksPerMicrosecond));
    }

    static IReadOnlyList<int>? CoordinatorNodes(string? list)
    {
        if (list is null) return null;
        var nodes = new List<int>();
        foreach (var part in list.Split(','))
            nodes.Add(int.TryParse(part.Trim(), NumberStyles.None, CultureInfo.InvariantCulture, out int node)
                ? node : throw new UsageException($"--coordinator-nodes {list}: '{part}' is not a node number"));
        return nodes;
    }

    static ChillerCrash Crash(int node, string after, double atMs)
    {
        if (!Enum.TryParse<ChillerStep>(after, out var step) || !Enum.IsDefined(step))
            throw new UsageException($"--crash-after {after}: not a step of Chiller's; one of {string.Join(", ", Enum.GetNames<ChillerStep>())}");
        if (!(atMs >= 0) || atMs > 60_000) throw new UsageException($"--crash-at-ms {atMs.ToString(CultureInfo.InvariantCulture)}: must be in [0, 60000]");
        return new ChillerCrash(step, 1, node, TimeSpan.FromTicks((long)Math.Round(atMs * TimeSpan.TicksPerMillisecond)));
    }

    /// <summary>Commits (inner commits, and what recovery committed) per window of virtual time,
    /// and when the crash and each step of its recovery came.</summary>
    static void PrintTimeline(List<ChillerEvent> events, TimeSpan window, TimeSpan duration)
    {
        int windows = (int)Math.Ceiling(duration / window);
        var commits = new long[windows];
        foreach (var e in events)
            if (e.Step is ChillerStep.InnerCommit or ChillerStep.RecoveryCommit && e.At < duration) commits[(int)(e.At / window)]++;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"commits per {window.TotalMilliseconds} ms of virtual time (as txn/s):"));
        for (int w = 0; w < windows; w++)
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {(w * window).TotalMilliseconds,8:F1} ms  {commits[w] / window.TotalSeconds,12:N0}"));
        foreach (var e in events.Where(e => e.Step is null || e.Txn == 0 && e.Step != ChillerStep.RecoveryCommit))
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"  at {e.At.TotalMilliseconds:F3} ms: {(e.Step is { } s ? s.ToString() : "stopped")}, node {e.Node}{(e.Partition >= 0 ? $", partition {e.Partition}" : "")}"));
    }

    static void Print(string what, ClusterRunResult r, double us, int slots, CpuModel? cpu, double secs, TimeSpan wall)
    {
        var s = r.Stats;
        long aborts = s.TotalAborts;
        string reasons = string.Join(", ", Enum.GetValues<AbortReason>().Where(x => s.Aborts[(int)x] > 0).Select(x => $"{x} {s.Aborts[(int)x]:N0}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{what}, {us} us one way, {slots} slots a node, {(cpu is null ? "nodes work in no time" : cpu.ToString())}, {secs} virtual s\n" +
            $"  virtual throughput {r.VirtualThroughput:N0} txn/s, {s.Commits:N0} commits ({r.MultiPartitionShare:P1} across partitions), abort rate {aborts / (double)Math.Max(1, s.Commits + aborts):P1} ({(reasons.Length == 0 ? "none" : reasons)})\n" +
            $"  virtual latency p50 {s.LatencyPercentileMicros(50):N0} us, p99 {s.LatencyPercentileMicros(99):N0} us; {r.MessagesSent:N0} messages, {r.Events:N0} events in {wall.TotalSeconds:F1} s of this machine"));
    }

    /// <summary>0 when the run kept every property it was asked to check (always atomicity, every
    /// transaction ended, no failure and replica agreement; with <paramref name="check"/> also the
    /// merged history's serializability), else 1, with the first few problems printed.</summary>
    static int Verdict(ClusterRunResult r, bool check, IReadOnlyList<string> replicas)
    {
        int problems = r.Atomicity.Count + r.Unfinished.Count + r.Failures.Count + replicas.Count;
        if (!check) return problems == 0 ? 0 : 1;
        var report = SerializabilityChecker.Check(r.History);
        Console.WriteLine($"checked: {report.Transactions:N0} transactions, {report.Anomalies.Count} anomalies, {r.Atomicity.Count} atomicity violations, {r.Unfinished.Count} unfinished, {replicas.Count} replica disagreements");
        foreach (var line in report.Anomalies.Select(a => a.Description).Concat(r.Atomicity).Concat(r.Unfinished).Concat(r.Failures).Concat(replicas).Take(5))
            Console.WriteLine($"  {line}");
        return report.Serializable && problems == 0 ? 0 : 1;
    }
}
