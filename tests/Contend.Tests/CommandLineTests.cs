using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;

using Contend.Harness.Studies;

namespace Contend.Tests;

/// <summary>contend's bad-input contract: exit code 2, one line naming the problem, no file written.</summary>
public class CommandLineTests
{
    static (int Code, string Out, string Err) Contend(params string[] args)
    {
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "contend.dll"));
        foreach (var a in args) start.ArgumentList.Add(a);
        using var p = Process.Start(start)!;
        string output = p.StandardOutput.ReadToEnd(), error = p.StandardError.ReadToEnd();
        p.WaitForExit();
        return (p.ExitCode, output, error);
    }

    [Theory]
    [InlineData("unknown protocol 'Nope' (known: NoWait, WaitDie, WaitsFor, Ordered, Mcs, Silo, StealDB, StealDBBasicWS, StealDBNoSteal, Strife, and the control BrokenEarlyRelease)", "run", "--protocol", "Nope")]
    [InlineData("unknown workload 'nope' (known: ycsb, stealdb, tpcc, smartmart)", "run", "--protocol", "NoWait", "--workload", "nope")]
    [InlineData("workload smartmart is an application of reactors: it runs under --protocol ReactDB", "run", "--protocol", "Silo", "--workload", "smartmart")]
    [InlineData("--protocol ReactDB runs workload smartmart (reactors) or ycsb (one reactor's function over the table); this run's is tpcc", "run", "--protocol", "ReactDB", "--workload", "tpcc")]
    [InlineData("--deployment async: ReactDB's ycsb run is one reactor in one container, the sync deployment", "run", "--protocol", "ReactDB", "--workload", "ycsb", "--deployment", "async")]
    [InlineData("--partitions is not a knob of ReactDB's ycsb run: one reactor owns the whole table", "run", "--protocol", "ReactDB", "--workload", "ycsb", "--partitions", "2")]
    [InlineData("--callers is not a knob of ReactDB's smartmart run: each cart is a caller (--carts)", "run", "--protocol", "ReactDB", "--workload", "smartmart", "--callers", "2")]
    [InlineData("--order-items 30: must be a multiple of --order-sections (8) in 8..64", "run", "--protocol", "ReactDB", "--workload", "smartmart", "--order-items", "30")]
    [InlineData("--deployment is a ReactDB knob; this run's protocol is Silo", "run", "--protocol", "Silo", "--deployment", "sync")]
    [InlineData("--wait-threshold is a knob of Mcs, StealDB, StealDBBasicWS, StealDBNoSteal; this run's protocol is ReactDB", "run", "--protocol", "ReactDB", "--wait-threshold", "10")]
    [InlineData("--beside runs both protocols through their front doors: give --callers", "run", "--protocol", "Silo", "--beside", "NoWait")]
    [InlineData("--beside is a knob of ReactDB's ycsb run, not of smartmart", "run", "--protocol", "ReactDB", "--workload", "smartmart", "--beside", "Silo")]
    [InlineData("--beside ReactDB: the protocol beside runs through ContendEngine's front door, which ReactDB does not", "run", "--protocol", "Silo", "--callers", "2", "--beside", "ReactDB")]
    [InlineData("unknown protocol 'Nope' (known: NoWait, WaitDie, WaitsFor, Ordered, Mcs, Silo, StealDB, StealDBBasicWS, StealDBNoSteal, Strife, and the control BrokenEarlyRelease)", "run", "--protocol", "ReactDB", "--workload", "ycsb", "--beside", "Nope")]
    [InlineData("--deployment both: sync or async", "run", "--protocol", "ReactDB", "--workload", "smartmart", "--deployment", "both")]
    [InlineData("--rows is a ycsb knob; this run's workload is smartmart", "run", "--protocol", "ReactDB", "--workload", "smartmart", "--rows", "10")]
    [InlineData("zipf: theta = 1.5 must be in [0, 1)", "run", "--protocol", "NoWait", "--theta", "1.5", "--rows", "1000")]
    [InlineData("--threads 0: must be in 1..255", "run", "--protocol", "NoWait", "--threads", "0")]
    [InlineData("unknown study 'nope' (known: stealdb, strife, reactdb)", "study", "nope")]
    [InlineData("Strife alpha 2: must be in (0, 1]", "run", "--protocol", "Strife", "--alpha", "2")]
    [InlineData("Strife batch size 0: must be 1..1000000", "run", "--protocol", "Strife", "--batch", "0")]
    [InlineData("ycsb: partitions = 0 must be in 1..rows/2", "run", "--protocol", "Strife", "--partitions", "0", "--rows", "1000")]
    [InlineData("--repeats 0: must be in 1..100", "study", "stealdb", "--repeats", "0")]
    [InlineData("stealdb: ops = 40 must be in 1..32 (one op per table)", "run", "--protocol", "NoWait", "--workload", "stealdb", "--ops", "40")]
    [InlineData("--hot is a stealdb knob; this run's workload is ycsb", "run", "--protocol", "NoWait", "--hot", "5")]
    [InlineData("--warehouses is a tpcc knob; this run's workload is stealdb", "run", "--protocol", "StealDB", "--workload", "stealdb", "--warehouses", "4")]
    [InlineData("--batch is a knob of Strife; this run's protocol is WaitDie", "run", "--protocol", "WaitDie", "--batch", "100")]
    [InlineData("--max-nesting is a knob of StealDB, StealDBBasicWS, StealDBNoSteal; this run's protocol is Mcs", "run", "--protocol", "Mcs", "--max-nesting", "2")]
    [InlineData("--give-up-nodes is a knob of Mcs; this run's protocol is StealDB", "run", "--protocol", "StealDB", "--give-up-nodes")]
    [InlineData("StealDB wait threshold 0: must be 1 or more idle rounds", "run", "--protocol", "StealDBNoSteal", "--wait-threshold", "0")]
    [InlineData("StealDB nesting bound 65: must be 0..64", "run", "--protocol", "StealDB", "--max-nesting", "65")]
    [InlineData("Mcs wait threshold 0: must be 1 or more rounds", "run", "--protocol", "Mcs", "--wait-threshold", "0")]
    [InlineData("--wait-threshold is a knob of Mcs, StealDB, StealDBBasicWS, StealDBNoSteal; this run's protocol is WaitsFor", "run", "--protocol", "WaitsFor", "--wait-threshold", "10")]
    [InlineData("--protocol Mcs: the cluster runs Chiller, or two-phase commit over NoWait, WaitDie, Silo", "cluster", "--protocol", "Mcs")]
    [InlineData("--replicas is a Chiller knob: two-phase commit runs on the primaries alone", "cluster", "--protocol", "NoWait", "--replicas", "2")]
    [InlineData("--workers 2000: must be in 0..1024", "cluster", "--protocol", "NoWait", "--workers", "2000")]
    [InlineData("--op-cost-us -1: must be in [0, 1000000]", "cluster", "--protocol", "Chiller", "--workers", "2", "--op-cost-us", "-1")]
    [InlineData("topology: 4 copies of each partition on 3 nodes, must be 1..3 (no two copies on one node)", "cluster", "--protocol", "Chiller", "--nodes", "3", "--replicas", "4")]
    [InlineData("--threads does not apply to Chiller, which runs on a simulated cluster in virtual time: contend cluster --protocol Chiller has its knobs", "run", "--protocol", "Chiller", "--threads", "4")]
    [InlineData("--partitions does not apply to Chiller, which runs on a simulated cluster in virtual time: contend cluster --protocol Chiller has its knobs", "run", "--protocol", "Chiller", "--partitions", "4")]
    [InlineData("--workload stealdb: the cluster runs ycsb or tpcc", "run", "--protocol", "Chiller", "--workload", "stealdb")]
    [InlineData("topology: 300 nodes, must be 1..256", "cluster", "--protocol", "NoWait", "--nodes", "300")]
    [InlineData("--network-delay-us 0: must be in (0, 1000000]", "cluster", "--protocol", "Silo", "--network-delay-us", "0")]
    [InlineData("--warehouses is a tpcc knob; this run's workload is ycsb", "cluster", "--protocol", "Silo", "--warehouses", "4")]
    [InlineData("--theta is a ycsb knob; this run's workload is tpcc", "cluster", "--protocol", "Silo", "--workload", "tpcc", "--theta", "0.5")]
    [InlineData("--remote 1.5: must be in [0, 1]", "cluster", "--protocol", "NoWait", "--workload", "tpcc", "--remote", "1.5")]
    [InlineData("--workload stealdb: the cluster runs ycsb or tpcc", "cluster", "--protocol", "NoWait", "--workload", "stealdb")]
    [InlineData("tpcc: remote probability -0.1 must be in [0, 1]", "run", "--protocol", "NoWait", "--workload", "tpcc", "--remote", "-0.1")]
    [InlineData("--callers -1: must be in 1..4096", "run", "--protocol", "NoWait", "--callers", "-1", "--rows", "1000")]
    [InlineData("--figure hot: this study has no such figure (its figures: micro, neworder, hotset, one-worker)", "study", "stealdb", "--small", "--figure", "hot")]
    public void BadInputExitsTwoWithOneLine(string message, params string[] args)
    {
        var (code, _, err) = Contend(args);
        Assert.Equal(2, code);
        Assert.Equal($"contend: {message}", err.Trim());
    }

    /// <summary>The front door a service uses, from the command line: callers on the thread pool
    /// awaiting ContendEngine.ExecuteAsync, the history checked.</summary>
    [Theory]
    [InlineData("StealDB"), InlineData("Strife"), InlineData("StealDBBasicWS", "--max-nesting", "1", "--wait-threshold", "100"), InlineData("Mcs", "--wait-threshold", "100")]
    public void RunThroughTheEnginesFrontDoorChecksTheHistory(string protocol, params string[] knobs)
    {
        var (code, output, _) = Contend(["run", "--protocol", protocol, "--rows", "10000", "--callers", "8", "--seconds", "0.3", "--warmup", "0", "--no-pin", "--check", .. knobs]);
        Assert.Equal(0, code);
        Assert.Contains("through ContendEngine, 8 async callers", output);
        Assert.Matches($@"{protocol}\s+[1-9][\d,]* .* [1-9][\d,]*\s+0 ", output); // commits, and checked transactions with 0 anomalies
    }

    /// <summary>Mcs's wait threshold reaches the protocol from the command line: on a hot set, a
    /// threshold of one round turns waits into WaitTimeout aborts. Only their presence is
    /// asserted: how many waits there are depends on how the OS runs the two threads, and
    /// DeadlineTests.McsWaitThresholdDecidesWhetherAWaitTimesOut checks the threshold's effect
    /// on one wait exactly.</summary>
    [Fact]
    public void McsWaitThresholdTurnsWaitsIntoTimeouts()
    {
        var (code, output, err) = Contend(["run", "--protocol", "Mcs", "--rows", "16", "--requests", "8", "--theta", "0.9", "--threads", "2",
                                           "--seconds", "0.3", "--warmup", "0", "--no-pin", "--check", "--wait-threshold", "1"]);
        string line = AssertRowChecked("Mcs", code, output, err);
        Assert.Matches(@"WaitTimeout [1-9]", line);
    }

    /// <summary>Mcs giving up queued nodes, with four workers on the hot set and a wait threshold
    /// of one round, so that nearly every wait ends in a give-up: transactions commit and the
    /// checked history has no anomaly.</summary>
    [Fact]
    public void McsGivingUpNodesKeepsTheHistorySerializable()
    {
        var (code, output, err) = Contend(["run", "--protocol", "Mcs", "--rows", "16", "--requests", "8", "--theta", "0.9", "--threads", "4",
                                           "--seconds", "0.3", "--warmup", "0", "--no-pin", "--check", "--give-up-nodes", "--wait-threshold", "1"]);
        string line = AssertRowChecked("Mcs", code, output, err);
        Assert.Contains("WaitTimeout", line);
    }

    /// <summary>A run of <paramref name="protocol"/> that exited 0 and printed its row with
    /// commits, history entries checked and no anomaly; the row.</summary>
    static string AssertRowChecked(string protocol, int code, string output, string err)
    {
        Assert.True(code == 0, err + output);
        var line = output.Split('\n').Single(l => l.StartsWith(protocol + " ", StringComparison.Ordinal));
        var cells = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(double.Parse(cells[1], NumberStyles.Number, CultureInfo.InvariantCulture) > 0, line);
        Assert.True(int.Parse(cells[6], NumberStyles.Number, CultureInfo.InvariantCulture) > 0, line); // history entries checked
        Assert.Equal("0", cells[7]); // anomalies
        return line;
    }

    /// <summary>ReactDB over SmartMart, both deployments, with the history checked.</summary>
    [Theory]
    [InlineData("sync")]
    [InlineData("async")]
    public void ReactDbRunsSmartMartWithTheCheckerOn(string deployment)
    {
        var (code, output, err) = Contend("run", "--protocol", "ReactDB", "--workload", "smartmart", "--deployment", deployment, "--items", "200",
                                          "--carts", "3", "--seconds", "0.3", "--warmup", "0", "--no-pin", "--check");
        AssertRowChecked("ReactDB", code, output, err);
        Assert.Contains($"{deployment} deployment", output);
    }

    /// <summary>ReactDB's sync deployment over YCSB, one reactor's function through its front
    /// door (the study's comparison with Silo), with the history checked.</summary>
    [Fact]
    public void ReactDbRunsYcsbInOneContainerWithTheCheckerOn()
    {
        var (code, output, err) = Contend("run", "--protocol", "ReactDB", "--workload", "ycsb", "--rows", "2000", "--theta", "0.9", "--callers", "3",
                                          "--seconds", "0.3", "--warmup", "0", "--no-pin", "--check");
        AssertRowChecked("ReactDB", code, output, err);
        Assert.Contains("ReactDB sync deployment (1 container, 2 executors), one reactor owning the table, 3 async callers", output);
    }

    /// <summary>The same run beside plain Silo, the two in turn in one process: both rows, both
    /// histories checked, and the ratio over the measured slices.</summary>
    [Fact]
    public void ReactDbRunsYcsbBesideSiloInTurn()
    {
        var (code, output, err) = Contend("run", "--protocol", "ReactDB", "--workload", "ycsb", "--rows", "2000", "--theta", "0.9", "--callers", "3",
                                          "--seconds", "0.4", "--warmup", "0.1", "--no-pin", "--check", "--beside", "Silo");
        AssertRowChecked("ReactDB", code, output, err);
        AssertRowChecked("Silo", code, output, err);
        Assert.Matches(@"in turn, [1-4] of 4 pairs of 0\.1 s slices with commits on both sides: ReactDB / Silo median \d+\.\d{3} \(quartiles \d+\.\d{3}-\d+\.\d{3}\), of the totals \d+\.\d{3}", output);
    }

    /// <summary>Protocol names match in any case, as ReactDB's and Chiller's always did; the
    /// rows carry the engine's spelling.</summary>
    [Fact]
    public void ProtocolNamesMatchInAnyCase()
    {
        var (code, output, err) = Contend("run", "--protocol", "mcs", "--workload", "ycsb", "--rows", "1000", "--callers", "2",
                                          "--seconds", "0.4", "--warmup", "0", "--no-pin", "--check", "--beside", "NOWAIT");
        AssertRowChecked("Mcs", code, output, err);
        AssertRowChecked("NoWait", code, output, err);
        Assert.Contains("Mcs / NoWait median", output);
    }

    /// <summary>Any two protocols behind the front door, in turn: the first's knobs its own, both
    /// rows checked, and the ratio named by the two.</summary>
    [Fact]
    public void TwoProtocolsRunInTurnThroughTheirFrontDoors()
    {
        var (code, output, err) = Contend("run", "--protocol", "Mcs", "--workload", "ycsb", "--rows", "16", "--requests", "8", "--theta", "0.9", "--callers", "3",
                                          "--give-up-nodes", "--seconds", "0.4", "--warmup", "0.1", "--no-pin", "--check", "--beside", "NoWait");
        AssertRowChecked("Mcs", code, output, err);
        AssertRowChecked("NoWait", code, output, err);
        Assert.Matches(@"in turn, [1-4] of 4 pairs of 0\.1 s slices with commits on both sides: Mcs / NoWait median \d+\.\d{3} \(quartiles \d+\.\d{3}-\d+\.\d{3}\), of the totals \d+\.\d{3}", output);
    }

    [Fact]
    public void ClusterRunsTwoPhaseCommitAcrossPartitionsAndChecksIt()
    {
        var (code, output, _) = Contend("cluster", "--protocol", "WaitDie", "--nodes", "3", "--partitions", "6", "--network-delay-us", "20",
                                        "--seconds", "0.05", "--rows", "2000", "--check");
        Assert.Equal(0, code);
        Assert.Contains("WaitDie over two-phase commit: 3 nodes, 6 partitions", output);
        Assert.Matches(@"checked: [1-9][\d,]* transactions, 0 anomalies, 0 atomicity violations, 0 unfinished", output);
    }

    [Fact]
    public void ClusterRunsChillerWithReplicasAndChecksIt()
    {
        var (code, output, _) = Contend("cluster", "--protocol", "Chiller", "--workload", "tpcc", "--nodes", "3", "--replicas", "2", "--network-delay-us", "20",
                                        "--workers", "2", "--remote", "0.3", "--seconds", "0.01", "--check");
        Assert.Equal(0, code);
        Assert.Contains("Chiller: 3 nodes, 3 partitions, 2 copies each, hot tables: 0, 1", output);
        Assert.Contains("2 workers a node, 1 us a message + 1 us an op", output);
        Assert.Matches(@"[1-9][\d,]* inner commits, (?!0\.0 ?%)[\d.]+ ?% of commits in two regions", output);
        Assert.Matches(@"checked: [1-9][\d,]* transactions, 0 anomalies, 0 atomicity violations, 0 unfinished, 0 replica disagreements", output);
    }

    [Fact]
    public void RunOfChillerIsTheClusterRunWithTheOptionsThatMeanTheSame()
    {
        var (code, output, _) = Contend("run", "--protocol", "Chiller", "--workload", "tpcc", "--warehouses", "4", "--seconds", "0.01", "--seed", "3", "--check");
        Assert.Equal(0, code);
        Assert.Contains("contend cluster --protocol Chiller --workload tpcc --warehouses 4 --seconds 0.01 --seed 3 --check", output);
        Assert.Contains("Chiller: 2 nodes, 2 partitions, 1 copy each, hot tables: 0, 1", output);
        Assert.Contains("0.01 virtual s", output);
        Assert.Matches(@"checked: [1-9][\d,]* transactions, 0 anomalies, 0 atomicity violations, 0 unfinished, 0 replica disagreements", output);
        var (clusterCode, clusterOutput, _) = Contend("cluster", "--protocol", "Chiller", "--workload", "tpcc", "--warehouses", "4", "--seconds", "0.01", "--seed", "3", "--check");
        Assert.Equal(0, clusterCode);
        // The same seeded simulation: the figures agree line for line, apart from this machine's time.
        static string Figures(string text) => System.Text.RegularExpressions.Regex.Replace(
            text[text.IndexOf("Chiller: ", StringComparison.Ordinal)..], @"events in [\d.]+ s of this machine", "");
        Assert.Equal(Figures(clusterOutput), Figures(output));
    }

    [Fact]
    public void ClusterStopsAChillerNodeAndPrintsTheRecoveryOnTheTimeline()
    {
        var (code, output, _) = Contend("cluster", "--protocol", "Chiller", "--workload", "tpcc", "--nodes", "4", "--partitions", "2", "--replicas", "2",
                                        "--seconds", "0.01", "--crash-node", "0", "--crash-at-ms", "4", "--timeline-ms", "2", "--check");
        Assert.Equal(0, code);
        Assert.Matches(@"commits per 2 ms of virtual time", output);
        Assert.Matches(@"at 4\.\d+ ms: stopped, node 0, partition 0", output);
        Assert.Matches(@"ElectPrimary, node 2, partition 0", output);
        Assert.Matches(@"checked: [1-9][\d,]* transactions, 0 anomalies, 0 atomicity violations, 0 unfinished, 0 replica disagreements", output);
        (code, _, string error) = Contend("cluster", "--protocol", "NoWait", "--crash-node", "0");
        Assert.Equal(2, code);
        Assert.Contains("--crash-node is a Chiller knob", error);
        (code, _, error) = Contend("cluster", "--protocol", "Chiller", "--nodes", "4", "--partitions", "2", "--replicas", "2", "--crash-node", "0", "--crash-after", "Sleep");
        Assert.Equal(2, code);
        Assert.Contains("--crash-after Sleep: not a step of Chiller's", error);
        // The default single copy: the crash would lose partition 0, which is bad input, not a crash of the command.
        (code, _, error) = Contend("cluster", "--protocol", "Chiller", "--crash-node", "0");
        Assert.Equal(2, code);
        Assert.Contains("the crashes stop node 0, which holds every copy of partition 0 (1 copy)", error);
        Assert.Single(error.Trim().Split('\n'));
    }

    [Fact]
    public void ClusterRunsTpccSplitByWarehouseWithRemoteWarehouses()
    {
        var (code, output, _) = Contend("cluster", "--protocol", "Silo", "--workload", "tpcc", "--nodes", "2", "--network-delay-us", "20",
                                        "--remote", "0.3", "--seconds", "0.01", "--check");
        Assert.Equal(0, code);
        Assert.Contains("Silo over two-phase commit: 2 nodes, 2 partitions", output);
        Assert.Matches(@"commits \((?!0\.0 ?%)[\d.]+ ?% across partitions\)", output);
        Assert.Contains("2 warehouse(s)", output);
        Assert.Contains("remote warehouse 30", output);
        Assert.Contains("split by warehouse over the partitions, items on every one", output);
        Assert.Matches(@"checked: [1-9][\d,]* transactions, 0 anomalies, 0 atomicity violations, 0 unfinished", output);
    }

    [Fact]
    public void UnwritableOutputFailsBeforeRunningAndWritesNothing()
    {
        string dir = Path.Combine(Path.GetTempPath(), $"contend-missing-{Guid.NewGuid():N}");
        var (code, _, err) = Contend("run", "--protocol", "NoWait", "--out", Path.Combine(dir, "result"));
        Assert.Equal(2, code);
        Assert.StartsWith("contend: --out", err.Trim());
        Assert.False(Directory.Exists(dir));
    }

    [Fact]
    public void RunWritesCsvAndJsonWithProvenance()
    {
        string prefix = Path.Combine(Path.GetTempPath(), $"contend-{Guid.NewGuid():N}");
        var (code, output, err) = Contend("run", "--protocol", "Silo", "--rows", "10000", "--seconds", "0.3", "--warmup", "0", "--check", "--out", prefix);
        Assert.True(code == 0, err);
        Assert.Contains("Silo", output);
        string csv = File.ReadAllText(prefix + ".csv"), json = File.ReadAllText(prefix + ".json");
        Assert.StartsWith("protocol,workload,threads", csv);
        Assert.Contains("\"seed\": \"1\"", json);
        Assert.Contains("\"commit\":", json);
        Assert.False(File.Exists(prefix + ".csv.tmp"));
        File.Delete(prefix + ".csv");
        File.Delete(prefix + ".json");
    }

    /// <summary>The study's plumbing at a size that measures nothing: every figure's CSV has a
    /// row per point, protocol and repeat, the PNGs are written, and the summary names the goal.</summary>
    [Fact]
    public void StealDbStudyWritesItsFiguresAndSummary()
    {
        string dir = Path.Combine(Path.GetTempPath(), $"contend-study-{Guid.NewGuid():N}");
        var (code, output, err) = Contend("study", "stealdb", "--small", "--seconds", "0.1", "--warmup", "0", "--repeats", "1", "--out", dir);
        Assert.True(code == 0, err);
        string results = Path.Combine(dir, "stealdb");
        foreach (string figure in new[] { "micro", "neworder", "hotset" })
        {
            var lines = File.ReadAllLines(Path.Combine(results, $"{figure}.csv"));
            int points = figure == "micro" ? 2 : 1;
            int protocols = figure == "hotset" ? StealDbStudy.QueueLocks.Length + StealDbStudy.PlainTwoPhaseLocking.Length : StealDbStudy.Protocols.Length;
            Assert.Equal(1 + points * protocols, lines.Length);
            Assert.All(lines.Skip(1), l => Assert.StartsWith($"{figure},", l));
            AssertLineProbed(lines);
            foreach (string plot in new[] { "throughput", "aborts" })
                Assert.True(new FileInfo(Path.Combine(results, $"{figure}-{plot}.png")).Length > 1000);
        }
        AssertOneWorkerFigure(results, points: 1, protocols: 2);
        string summary = File.ReadAllText(Path.Combine(results, "summary.md"));
        Assert.Contains("StealDB >= 1.8x vanilla MCS 2PL", summary);
        Assert.Contains("| best 2PL / StealDBBasicWS |", summary);
        Assert.Matches(@"\| hot set, 16 rows \| no queue-lock protocol more than 2x below the best 2PL variant \| (NoWait|WaitDie|WaitsFor) [\d.]+x (StealDB|Mcs)", summary);
        // The hot-set goal judged on each window's runs too: the slow window's cell is the fifth.
        Assert.Matches(@"\| hot set, 16 rows \| [^|]+ \| [^|]+ \| [^|]+ \| (- \(no runs\)|(NoWait|WaitDie|WaitsFor) [\d.]+x (StealDB\w*|Mcs) \((met|NOT met)\)) \| none: ", summary);
        Assert.Contains("48.0K vs 22.1K", output);
        Directory.Delete(dir, recursive: true);
    }

    /// <summary>--figure runs the figures it names and no other, and the summary says the verdict,
    /// which reads every figure, was left out rather than judging goals on what was not measured.</summary>
    [Fact]
    public void AStudyRunsOnlyTheFiguresNamedAndLeavesTheVerdictOut()
    {
        string dir = Path.Combine(Path.GetTempPath(), $"contend-study-{Guid.NewGuid():N}");
        var (code, _, err) = Contend("study", "stealdb", "--small", "--seconds", "0.05", "--warmup", "0", "--repeats", "1", "--figure", "hotset", "--out", dir);
        Assert.True(code == 0, err);
        string results = Path.Combine(dir, "stealdb");
        Assert.Equal(["hotset.csv"], Directory.GetFiles(results, "*.csv").Select(Path.GetFileName));
        var lines = File.ReadAllLines(Path.Combine(results, "hotset.csv"));
        Assert.Equal(1 + StealDbStudy.QueueLocks.Length + StealDbStudy.PlainTwoPhaseLocking.Length, lines.Length);
        string summary = File.ReadAllText(Path.Combine(results, "summary.md"));
        Assert.Contains("Not judged: the verdict reads every figure, and this run measured only hotset (--figure).", summary);
        Assert.DoesNotContain("| | goal |", summary);
        Directory.Delete(dir, recursive: true);
    }

    [Fact]
    public void StrifeStudyWritesItsFiguresAndSummary()
    {
        string dir = Path.Combine(Path.GetTempPath(), $"contend-study-{Guid.NewGuid():N}");
        var (code, output, err) = Contend("study", "strife", "--small", "--seconds", "0.1", "--warmup", "0", "--repeats", "1", "--out", dir);
        Assert.True(code == 0, err);
        string results = Path.Combine(dir, "strife");
        foreach (string figure in new[] { "tpcc", "ycsb-theta", "ycsb-partitions" })
        {
            var lines = File.ReadAllLines(Path.Combine(results, $"{figure}.csv"));
            Assert.Equal(1 + 2 * Harness.Studies.StrifeStudy.Protocols.Length, lines.Length);
            Assert.All(lines.Skip(1), l => Assert.StartsWith($"{figure},", l));
            // Strife's rows carry the share its analysis left residual; the others leave it empty.
            Assert.All(lines.Skip(1).Where(l => l.Split(',')[2] == "Strife"), l => Assert.NotEqual("", l.Split(',')[10]));
            AssertLineProbed(lines);
            foreach (string plot in new[] { "throughput", "aborts" })
                Assert.True(new FileInfo(Path.Combine(results, $"{figure}-{plot}.png")).Length > 1000);
        }
        AssertOneWorkerFigure(results, points: 2, protocols: 5);
        Assert.Contains("Strife >= 1.5x the best 2PL", File.ReadAllText(Path.Combine(results, "summary.md")));
        Assert.Contains("up to 2x", output);
        Directory.Delete(dir, recursive: true);
    }

    /// <summary>ReactDB's study at a size that measures nothing: a row per point, series and
    /// repeat in each figure's CSV, ReactDB's rows carrying their commit cost and Silo's none,
    /// the PNGs, and the summary's goals.</summary>
    [Fact]
    public void ReactDbStudyWritesItsFiguresAndSummary()
    {
        string dir = Path.Combine(Path.GetTempPath(), $"contend-study-{Guid.NewGuid():N}");
        var (code, output, err) = Contend("study", "reactdb", "--small", "--seconds", "0.1", "--warmup", "0", "--repeats", "1", "--out", dir);
        Assert.True(code == 0, err);
        string results = Path.Combine(dir, "reactdb");
        foreach (var (figure, points, series) in new[] { ("parallel-degree", 2, 2), ("order-size", 2, 2), ("delay", 2, 2), ("skew", 2, 2), ("orleans", 1, 3), ("silo", 1, 2) })
        {
            var lines = File.ReadAllLines(Path.Combine(results, $"{figure}.csv"));
            Assert.Equal(1 + series * points, lines.Length);
            int commit = Array.IndexOf(lines[0].Split(','), "commit_us");
            Assert.True(commit > 0, $"{figure}.csv has no commit_us column: {lines[0]}");
            foreach (var row in lines.Skip(1).Select(l => l.Split(',')))
            {
                Assert.Equal(figure, row[0]);
                if (row[2] is "Silo" or "Orleans") Assert.Equal("", row[commit]);
                else Assert.True(double.Parse(row[commit], CultureInfo.InvariantCulture) > 0, $"{figure}, {row[2]}: commit cost {row[commit]}");
            }
            AssertLineProbed(lines);
            foreach (string plot in new[] { "throughput", "aborts" })
                Assert.True(new FileInfo(Path.Combine(results, $"{figure}-{plot}.png")).Length > 1000);
        }
        string summary = File.ReadAllText(Path.Combine(results, "summary.md"));
        Assert.Contains(">= 1.8x (the bound here: 2x)", summary);
        Assert.Contains("ReactDB sync / Silo, YCSB theta 0.0, measured in turn | >= 0.95x", summary);
        Assert.Contains("against plain Silo, measured in turn in one process (0.1 s slices)", summary);
        Assert.Matches(@"\| ReactDB \((sync|async)\) / Orleans transactions, 2 carts \| >= 10x \| \d", summary);
        Assert.Matches(@"\| 2 \| Orleans \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \|", summary);
        Assert.Contains("68.2 us sync, 93.8 us async (Size 8)", output);
        Directory.Delete(dir, recursive: true);
    }

    [Fact]
    public void FastWindowRunsHaveBothProbesWithinTwiceTheFastestAndSlowWindowRunsBothOver()
    {
        static Harness.Studies.StudyRun Run(string protocol, double before, double after) =>
            new("f", "1", protocol, 0, new Harness.RunRow(protocol, "w", "c", 2, 1, 1, 1, 0, 0, new Dictionary<string, long>(), 0, 0, 0, 0, null, [], 0, new Dictionary<string, double>(), null),
                before, after);
        var runs = new[] { Run("fast", 70, 80), Run("slow after", 70, 300), Run("at the bound", 139, 140), Run("slow before", 141, 70), Run("slow", 300, 141),
                           Run("unprobed", double.NaN, double.NaN) };
        double limit = Harness.Studies.Study.FastWindowLimit(runs);
        Assert.Equal(140, limit);
        Assert.Equal(["fast", "at the bound"], Harness.Studies.Study.InFastWindow(runs, limit).Select(r => r.Protocol));
        // A run with one probe on each side of the bound is in neither window.
        Assert.Equal(["slow"], Harness.Studies.Study.InSlowWindow(runs, limit).Select(r => r.Protocol));
        Assert.Empty(Harness.Studies.Study.InSlowWindow(runs, double.NaN));
        Assert.True(double.IsNaN(Harness.Studies.Study.FastWindowLimit([runs[^1]])));
        Assert.Empty(Harness.Studies.Study.InFastWindow([runs[^1]], double.NaN));
        Assert.Equal("-", Harness.Studies.Study.Times(double.NaN));
        Assert.Equal("1.50x", Harness.Studies.Study.Times(1.5));
    }

    [Fact]
    public void EachWindowKeepsOrDropsTheRowsOfOneRunInTurnTogether()
    {
        static Harness.Studies.StudyRun Run(string point, int repeat, string series, double after) =>
            new("silo", point, series, repeat, new Harness.RunRow(series, "w", "c", 2, 1, 1, 1, 0, 0, new Dictionary<string, long>(), 0, 0, 0, 0, null, [], 0, new Dictionary<string, double>(), null),
                70, after);
        // Repeat 0 at theta 0.9: the first series' probes are fast, the second's (the same run in turn) slow after.
        var runs = new[] { Run("0.9", 0, "ReactDB", 80), Run("0.9", 0, "Silo", 300), Run("0.9", 1, "Silo", 80), Run("0.9", 1, "ReactDB", 90),
                           Run("0.0", 0, "ReactDB", 80), Run("0.0", 0, "Silo", 80) };
        Assert.Equal(5, Harness.Studies.Study.InFastWindow(runs, 140).Count);
        var together = Harness.Studies.Study.InFastWindow(runs, 140, inTurn: true);
        Assert.Equal([("0.9", 1, "Silo"), ("0.9", 1, "ReactDB"), ("0.0", 0, "ReactDB"), ("0.0", 0, "Silo")],
                     together.Select(r => (r.Point, r.Repeat, r.Protocol)));
        // The slow window likewise: repeat 0's second series has a fast probe, so in turn the repeat goes whole.
        var slow = new[] { Run("0.9", 0, "ReactDB", 300) with { LineBefore = 300 }, Run("0.9", 0, "Silo", 80) with { LineBefore = 300 },
                           Run("0.9", 1, "Silo", 300) with { LineBefore = 310 }, Run("0.9", 1, "ReactDB", 320) with { LineBefore = 300 } };
        Assert.Equal([("0.9", 0, "ReactDB"), ("0.9", 1, "Silo"), ("0.9", 1, "ReactDB")],
                     Harness.Studies.Study.InSlowWindow(slow, 140).Select(r => (r.Point, r.Repeat, r.Protocol)));
        Assert.Equal([("0.9", 1, "Silo"), ("0.9", 1, "ReactDB")],
                     Harness.Studies.Study.InSlowWindow(slow, 140, inTurn: true).Select(r => (r.Point, r.Repeat, r.Protocol)));
    }

    /// <summary>Each run's row ends with the cache-line round trips measured before and after
    /// it: numbers on Linux with two cores or more (this project's machines), empty fields elsewhere.</summary>
    static void AssertLineProbed(string[] lines)
    {
        Assert.EndsWith(",line_round_trip_ns,line_round_trip_after_ns", lines[0]);
        bool probed = OperatingSystem.IsLinux() && Environment.ProcessorCount >= 2;
        Assert.All(lines.Skip(1), l =>
        {
            foreach (string ns in l.Split(',')[^2..])
            {
                if (probed) Assert.InRange(double.Parse(ns, CultureInfo.InvariantCulture), 1.0, 1e6);
                else Assert.Equal("", ns);
            }
        });
    }

    /// <summary>The study's one-worker figure: its points on one worker (the CSV's threads
    /// column), and the summary's ceiling table with a row per point.</summary>
    static void AssertOneWorkerFigure(string results, int points, int protocols)
    {
        var lines = File.ReadAllLines(Path.Combine(results, "one-worker.csv"));
        Assert.Equal(1 + points * protocols, lines.Length);
        Assert.All(lines.Skip(1), l => Assert.Equal("1", l.Split(',')[4]));
        var summary = File.ReadAllLines(Path.Combine(results, "summary.md"));
        int heading = Array.IndexOf(summary, "## What 2 workers allow");
        Assert.True(heading >= 0, "summary.md has no ceiling section");
        // The verdict judges each goal on all runs and on each window's runs alone.
        Assert.Contains(summary, l => l.StartsWith("| | goal | measured here: all runs | the fast window's runs only | the slow window's runs only |", StringComparison.Ordinal));
        Assert.Contains(Study.WindowsNote, summary);
        Assert.Contains(summary, l => l.StartsWith("Cache-line round trip between cores 0 and 1", StringComparison.Ordinal));
        Assert.Equal(points, summary.Skip(heading).Count(l => l.StartsWith("| ", StringComparison.Ordinal) && l.Contains("x (", StringComparison.Ordinal) && l.Contains("goal) | ", StringComparison.Ordinal)));
    }
}
