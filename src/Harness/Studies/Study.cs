using System.Globalization;
using System.Text;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;

namespace Contend.Harness.Studies;

/// <summary>How a study runs: every point of every series is run <see cref="Repeats"/> times,
/// the protocols in a rotating order within each repeat, so that drift of a noisy machine
/// spreads over all of them; the median is reported. <paramref name="Figures"/>: the figures to
/// run, by name; null or empty runs them all.</summary>
internal sealed record StudyOptions(int Threads = 2, double Seconds = 2, double Warmup = 0.5, int Repeats = 3, ulong Seed = 1, bool Small = false,
                                    IReadOnlyList<string>? Figures = null)
{
    public void Validate()
    {
        if (Threads is < 1 or > 255) throw new UsageException($"--threads {Threads}: must be in 1..255");
        if (!(Seconds > 0) || Seconds > 3600) throw new UsageException($"--seconds {Seconds.ToString(CultureInfo.InvariantCulture)}: must be in (0, 3600]");
        if (!(Warmup >= 0) || Warmup > 3600) throw new UsageException($"--warmup {Warmup.ToString(CultureInfo.InvariantCulture)}: must be in [0, 3600]");
        if (Repeats is < 1 or > 100) throw new UsageException($"--repeats {Repeats}: must be in 1..100");
    }
}

/// <summary>One measured run of a study, with the cache-line round trip measured just before and
/// just after it (<see cref="LineProbe"/>).</summary>
internal sealed record StudyRun(string Figure, string Point, string Protocol, int Repeat, RunRow Row, double LineBefore, double LineAfter);

/// <summary>One series point: the median over repeats, of the throughput, the abort rate and
/// each share the protocol reports (<see cref="Contend.Engine.Protocols.ProtocolReport.Shares"/>).</summary>
internal sealed record StudyPoint(string Figure, string Point, string Protocol, double Throughput, double AbortRate, int Repeats,
                                IReadOnlyDictionary<string, double> Shares)
{
    /// <summary>The median of the share <paramref name="name"/>; NaN where the protocol reports none.</summary>
    public double Share(string name) => Shares.GetValueOrDefault(name, double.NaN);
}

/// <summary>One series' run at one point of a figure: the series (a protocol, or a deployment) and the run's options.</summary>
internal delegate RunRow PointRun(string series, RunOptions options);

/// <summary>A figure: one run per x point (a workload, <see cref="Study.Workload"/>), the same
/// protocols at each, on the study's workers or on <paramref name="Workers"/> where set;
/// <paramref name="Rerun"/> names, point by point, the other figures' points whose workloads it
/// runs again (<see cref="Study.OnOneWorker"/>); <paramref name="InTurn"/>: one run at a point
/// measures every series of a repeat together (<see cref="Contend.Harness.InTurn"/>), so the
/// fast window keeps or drops them together (<see cref="Study.InFastWindow"/>).</summary>
internal sealed record Figure(string Name, string Title, string XLabel, IReadOnlyList<(string Label, PointRun Run)> Points, IReadOnlyList<string> Protocols,
                            int? Workers = null, IReadOnlyList<(string Figure, string Point)>? Rerun = null, bool InTurn = false);

internal static class Study
{
    /// <summary>A point that runs each protocol over a fresh <paramref name="make"/>() (<see cref="Runner.RunOne"/>).</summary>
    public static PointRun Workload(Func<IWorkload> make) => (protocol, options) => Runner.RunOne(protocol, make, options);

    public static List<StudyRun> Measure(Figure figure, StudyOptions options, Action<string> log)
    {
        var runs = new List<StudyRun>();
        var run = new RunOptions(figure.Workers ?? options.Threads, options.Seconds, options.Warmup, RecordHistory: false, Pin: true, Seed: options.Seed);
        for (int repeat = 0; repeat < options.Repeats; repeat++)
        {
            foreach (var (label, runPoint) in figure.Points)
            {
                for (int k = 0; k < figure.Protocols.Count; k++)
                {
                    string protocol = figure.Protocols[(k + repeat) % figure.Protocols.Count];
                    double before = LineProbe.RoundTripNanos();
                    var row = runPoint(protocol, run);
                    double after = LineProbe.RoundTripNanos();
                    runs.Add(new StudyRun(figure.Name, label, protocol, repeat, row, before, after));
                    log($"  {figure.Name} at {label}, {protocol}, repeat {repeat + 1}/{options.Repeats}: {row.Throughput:N0} txn/s, abort rate {row.AbortRate:P1}, " +
                        $"line round trip {before:F0} ns before, {after:F0} ns after");
                }
            }
        }
        return runs;
    }

    public static List<StudyPoint> Medians(Figure figure, IReadOnlyList<StudyRun> runs) =>
        (from label in figure.Points.Select(p => p.Label)
         from protocol in figure.Protocols
         let rows = runs.Where(r => r.Point == label && r.Protocol == protocol).Select(r => r.Row).ToList()
         select new StudyPoint(figure.Name, label, protocol, Median(rows.Select(r => r.Throughput)), Median(rows.Select(r => r.AbortRate)), rows.Count,
                               rows.SelectMany(r => r.Shares.Keys).Distinct()
                                   .ToDictionary(name => name, name => Median(rows.Where(r => r.Shares.ContainsKey(name)).Select(r => r.Shares[name]))))).ToList();

    /// <summary>
    /// The bound of the machine's fast window: twice the fastest probe of the study's runs; NaN
    /// when nothing was probed. A slow window slows every protocol (on this machine by up to
    /// half) and opens and closes within seconds, so a ratio of medians over all runs mixes
    /// windows unevenly; over the runs <see cref="InFastWindow"/> it compares like with like.
    /// </summary>
    public static double FastWindowLimit(IEnumerable<StudyRun> runs)
    {
        var probes = Probes(runs).ToList();
        return probes.Count == 0 ? double.NaN : 2 * probes.Min();
    }

    /// <summary>The figures <paramref name="names"/> asks for, in the study's order; all of them
    /// when it names none. A name the study does not have is a usage error that lists those it has.</summary>
    static List<Figure> Chosen(IReadOnlyList<Figure> figures, IReadOnlyList<string>? names)
    {
        if (names is not { Count: > 0 }) return [.. figures];
        foreach (string name in names)
            if (!figures.Any(f => f.Name == name))
                throw new UsageException($"--figure {name}: this study has no such figure (its figures: {string.Join(", ", figures.Select(f => f.Name))})");
        return figures.Where(f => names.Contains(f.Name)).ToList();
    }

    /// <summary>What the verdicts' window columns hold. Where a protocol's runs straddle the
    /// windows, the all-runs medians compare a fast run with a slow one; each window's runs
    /// alone compare like with like.</summary>
    public const string WindowsNote =
        "A run is in the fast window when both its probes are within the bound above, in the slow window when both are over it " +
        "(a point measured in turn keeps or drops its runs together); a run in neither counts in \"all runs\" only.";

    /// <summary>Every probe the runs took, before and after, leaving out those that could not run.</summary>
    static IEnumerable<double> Probes(IEnumerable<StudyRun> runs) =>
        runs.SelectMany(r => new[] { r.LineBefore, r.LineAfter }).Where(ns => !double.IsNaN(ns));

    /// <summary>The runs whose probes before and after are both within <paramref name="limit"/>
    /// (<see cref="FastWindowLimit"/>); none when it is NaN. With <paramref name="inTurn"/>, the
    /// runs of one point and repeat are one measurement: kept only if every probe of them is
    /// within, for a ratio between two rows of one run in turn must not lose one of them.</summary>
    public static List<StudyRun> InFastWindow(IEnumerable<StudyRun> runs, double limit, bool inTurn = false) =>
        InWindow(runs, r => r.LineBefore <= limit && r.LineAfter <= limit, inTurn);

    /// <summary>The runs whose probes before and after are both over <paramref name="limit"/>: the
    /// slow window's, where a ratio of medians again compares like with like; none when it is NaN.
    /// With <paramref name="inTurn"/>, a point's repeat is kept only if every probe of it is over.</summary>
    public static List<StudyRun> InSlowWindow(IEnumerable<StudyRun> runs, double limit, bool inTurn = false) =>
        InWindow(runs, r => r.LineBefore > limit && r.LineAfter > limit, inTurn);

    /// <summary>The runs <paramref name="inside"/> a window; with <paramref name="inTurn"/>, a point's
    /// repeat only if every run of it is.</summary>
    static List<StudyRun> InWindow(IEnumerable<StudyRun> runs, Func<StudyRun, bool> inside, bool inTurn)
    {
        if (!inTurn) return runs.Where(inside).ToList();
        var outside = runs.Where(r => !inside(r)).Select(r => (r.Point, r.Repeat)).ToHashSet();
        return runs.Where(r => !outside.Contains((r.Point, r.Repeat))).ToList();
    }

    /// <summary>Series <paramref name="a"/>'s median throughput over <paramref name="b"/>'s at one point of a figure.</summary>
    public static double Ratio(IReadOnlyList<StudyPoint> points, string figure, string label, string a, string b) =>
        points.Single(p => p.Figure == figure && p.Point == label && p.Protocol == a).Throughput /
        points.Single(p => p.Figure == figure && p.Point == label && p.Protocol == b).Throughput;

    /// <summary>A ratio as the summaries print it; "-" where a side had no run (NaN).</summary>
    public static string Times(double ratio) =>
        double.IsNaN(ratio) ? "-" : ratio.ToString("0.00", CultureInfo.InvariantCulture) + "x";

    static double Median(IEnumerable<double> values)
    {
        var v = values.Order().ToArray();
        if (v.Length == 0) return double.NaN;
        return v.Length % 2 == 1 ? v[v.Length / 2] : (v[v.Length / 2 - 1] + v[v.Length / 2]) / 2;
    }

    public static void WriteCsv(string path, IReadOnlyList<StudyRun> runs, Dictionary<string, string> metadata)
    {
        var csv = new StringBuilder();
        // One column per share any protocol of the study reported, named as it names it.
        var shares = runs.SelectMany(r => r.Row.Shares.Keys).Distinct().Order(StringComparer.Ordinal).ToList();
        csv.AppendLine(string.Join(",", ["figure", "point", "protocol", "repeat", "threads", "seconds", "commits", "txn_per_s", "abort_rate", .. shares,
                                         "p50_us", "p99_us", "config", "command", "commit", "machine", "date", "line_round_trip_ns", "line_round_trip_after_ns"]));
        foreach (var r in runs)
        {
            string[] fields =
            [
                r.Figure, r.Point, r.Protocol, Runner.Inv(r.Repeat + 1), Runner.Inv(r.Row.Threads), Runner.Inv(r.Row.Seconds), Runner.Inv(r.Row.Commits), Runner.Inv(r.Row.Throughput),
                Runner.Inv(r.Row.AbortRate), .. shares.Select(s => r.Row.Shares.TryGetValue(s, out double v) ? Runner.Inv(v) : ""),
                Runner.Inv(r.Row.P50Micros), Runner.Inv(r.Row.P99Micros),
                r.Row.Config, metadata["command"], metadata["commit"], metadata["machine"], metadata["date"],
                double.IsNaN(r.LineBefore) ? "" : Runner.Inv(r.LineBefore),
                double.IsNaN(r.LineAfter) ? "" : Runner.Inv(r.LineAfter),
            ];
            csv.AppendLine(string.Join(",", fields.Select(Runner.Quote)));
        }
        Runner.Atomic(path, csv.ToString());
    }

    /// <summary>Two PNGs per figure: median throughput and median abort rate against the x points.</summary>
    public static void Plot(string directory, Figure figure, IReadOnlyList<StudyPoint> points, string subtitle)
    {
        foreach (var (suffix, label, value) in new (string, string, Func<StudyPoint, double>)[]
                 { ("throughput", "committed txn/s (median)", p => p.Throughput), ("aborts", "abort rate, % (median)", p => 100 * p.AbortRate) })
        {
            var plot = new ScottPlot.Plot();
            double[] xs = Enumerable.Range(0, figure.Points.Count).Select(i => (double)i).ToArray();
            foreach (string protocol in figure.Protocols)
            {
                double[] ys = figure.Points.Select(p => value(points.Single(q => q.Point == p.Label && q.Protocol == protocol))).ToArray();
                var series = plot.Add.Scatter(xs, ys);
                series.LegendText = protocol;
                series.LineWidth = protocol.StartsWith("StealDB", StringComparison.Ordinal) || protocol == "Strife" ? 2.5f : 1.2f;
            }
            plot.Axes.Bottom.SetTicks(xs, figure.Points.Select(p => p.Label).ToArray());
            plot.Axes.SetLimitsY(0, Math.Max(1, points.Max(value)) * 1.1);
            plot.XLabel(figure.XLabel);
            plot.YLabel(label);
            plot.Title($"{figure.Title}\n{subtitle}", size: 13);
            plot.ShowLegend(ScottPlot.Edge.Right); // outside the data: the hottest points sit where a corner legend would
            string temp = Path.Combine(directory, $".{figure.Name}-{suffix}.png.tmp");
            plot.SavePng(temp, 1100, 600);
            File.Move(temp, Path.Combine(directory, $"{figure.Name}-{suffix}.png"), overwrite: true);
        }
    }

    /// <summary>
    /// Runs every figure of a study, writing its CSV and PNGs as it goes, then summary.md: the
    /// provenance, <paramref name="settings"/>, each figure's <see cref="ThroughputTable"/> (each
    /// cell with <paramref name="cellNote"/>'s share) and <paramref name="ratios"/>, the ratios
    /// once more over the runs <see cref="InFastWindow"/>, and the
    /// <paramref name="verdict"/> over all points (the medians of all runs, of the fast
    /// window's runs, and of the slow window's).
    /// </summary>
    public static int Run(string heading, IReadOnlyList<Figure> figures, StudyOptions options, string outDirectory, string commandLine,
                          TextWriter log, (string What, Func<StudyPoint, string> Extra) cellNote, Func<Figure, IReadOnlyList<StudyPoint>, string> ratios,
                          Func<IReadOnlyList<StudyPoint>, IReadOnlyList<StudyPoint>, IReadOnlyList<StudyPoint>, string> verdict, string? settings = null)
    {
        options.Validate();
        var chosen = Chosen(figures, options.Figures);
        string dir = PrepareDirectory(outDirectory);
        var metadata = Runner.Metadata(commandLine, options.Seed);
        var summary = new StringBuilder();
        summary.AppendLine($"# {heading}, measured");
        summary.AppendLine();
        summary.AppendLine($"- command: `{metadata["command"]}`");
        summary.AppendLine($"- commit {metadata["commit"]}; {metadata["machine"]}; {metadata["date"]}");
        summary.AppendLine($"- {options.Threads} workers, {options.Seconds.ToString(CultureInfo.InvariantCulture)} s measured after {options.Warmup.ToString(CultureInfo.InvariantCulture)} s warm-up, " +
                           $"{options.Repeats} repeats per point (protocols in rotating order), medians below; every run is in the CSVs");
        if (settings is not null) summary.AppendLine($"- {settings}");
        summary.AppendLine();
        var measured = new List<(Figure Figure, List<StudyRun> Runs, List<StudyPoint> Points)>();
        foreach (var figure in chosen)
        {
            log.WriteLine(figure.Title);
            var runs = Measure(figure, options, line => log.WriteLine(line));
            WriteCsv(Path.Combine(dir, $"{figure.Name}.csv"), runs, metadata);
            var points = Medians(figure, runs);
            Plot(dir, figure, points, $"{options.Repeats} repeats, medians; commit {metadata["commit"]}");
            measured.Add((figure, runs, points));
        }
        // One bound for the whole study: a figure run entirely in a slow window has no fast runs.
        double limit = FastWindowLimit(measured.SelectMany(m => m.Runs));
        List<StudyPoint> all = [], allFast = [], allSlow = [];
        foreach (var (figure, runs, points) in measured)
        {
            all.AddRange(points);
            summary.Append(ThroughputTable(figure, points, cellNote.What, cellNote.Extra));
            summary.Append(ratios(figure, points));
            var fast = InFastWindow(runs, limit, figure.InTurn);
            summary.Append(LineSummary(runs, fast.Count, limit));
            var fastPoints = Medians(figure, fast);
            allFast.AddRange(fastPoints);
            allSlow.AddRange(Medians(figure, InSlowWindow(runs, limit, figure.InTurn)));
            if (fast.Count == 0)
            {
                summary.AppendLine("No run of this figure was in the fast window.");
                summary.AppendLine();
                continue;
            }
            summary.AppendLine($"The ratios again over the runs in the fast window only ({fast.Count} of {runs.Count}; medians; \"-\" where a protocol had none there):");
            summary.AppendLine();
            summary.Append(ratios(figure, fastPoints));
        }
        if (chosen.Count == figures.Count) summary.Append(verdict(all, allFast, allSlow));
        else
        {
            summary.AppendLine("## Against the goal and the paper");
            summary.AppendLine();
            summary.AppendLine($"Not judged: the verdict reads every figure, and this run measured only {string.Join(", ", chosen.Select(f => f.Name))} (--figure).");
        }
        Runner.Atomic(Path.Combine(dir, "summary.md"), summary.ToString());
        log.WriteLine();
        log.Write(summary.ToString());
        log.WriteLine($"written: {dir}/summary.md, {string.Join(", ", chosen.Select(f => f.Name + ".csv"))} and a throughput and an abort-rate PNG per figure");
        return 0;
    }

    /// <summary>
    /// The figure's probes in one paragraph: their spread, and how many runs had one over
    /// <paramref name="limit"/>, before or after (all but the <paramref name="fast"/> ones), which on
    /// this machine marks its slow window (<see cref="LineProbe"/>).
    /// </summary>
    static string LineSummary(IReadOnlyList<StudyRun> runs, int fast, double limit)
    {
        var probes = Probes(runs).Order().ToArray();
        if (probes.Length == 0) return "Cache-line round trip between cores 0 and 1: not measured (one core, not Linux, or its threads could not be pinned).\n\n";
        int slow = runs.Count - fast;
        return string.Create(CultureInfo.InvariantCulture,
            $"Cache-line round trip between cores 0 and 1 just before and just after each run (`line_round_trip_ns`, `line_round_trip_after_ns` in the CSV): " +
            $"median {Median(probes):F0} ns, {probes[0]:F0}-{probes[^1]:F0} ns; {slow} of {runs.Count} runs had a probe over {limit:F0} ns, twice the study's fastest: " +
            $"a slow window of the machine, which slows every protocol.\n\n");
    }

    /// <summary>A figure's heading and its table of median throughput per protocol and point, each
    /// cell with the abort rate and what <paramref name="extra"/> adds (", 40% stolen"), or nothing.</summary>
    static string ThroughputTable(Figure figure, IReadOnlyList<StudyPoint> points, string what, Func<StudyPoint, string> extra)
    {
        var sb = new StringBuilder();
        sb.AppendLine($"## {figure.Title}");
        sb.AppendLine();
        sb.AppendLine($"Committed txn/s (abort rate{what}). x: {figure.XLabel}.");
        sb.AppendLine();
        sb.AppendLine("| protocol | " + string.Join(" | ", figure.Points.Select(p => p.Label)) + " |");
        sb.AppendLine("| --- |" + string.Concat(figure.Points.Select(_ => " ---: |")));
        foreach (string protocol in figure.Protocols)
        {
            sb.Append($"| {protocol} |");
            foreach (var (label, _) in figure.Points)
            {
                var p = points.Single(q => q.Point == label && q.Protocol == protocol);
                sb.Append(CultureInfo.InvariantCulture, $" {p.Throughput:N0} ({p.AbortRate:P1}{extra(p)}) |");
            }
            sb.AppendLine();
        }
        sb.AppendLine();
        return sb.ToString();
    }

    /// <summary>A figure's ratio table so far: its header row, one column per point; the caller adds a row per ratio.</summary>
    public static StringBuilder RatioTable(Figure figure)
    {
        var sb = new StringBuilder();
        sb.AppendLine("| ratio | " + string.Join(" | ", figure.Points.Select(p => p.Label)) + " |");
        sb.AppendLine("| --- |" + string.Concat(figure.Points.Select(_ => " ---: |")));
        return sb;
    }

    /// <summary>
    /// The figure that runs the points <paramref name="rerun"/> names (figure, point), each with
    /// its figure's workload, once more on one worker, for <see cref="CeilingTable"/>; null
    /// when the study runs on one worker already.
    /// </summary>
    public static Figure? OnOneWorker(StudyOptions options, IReadOnlyList<Figure> figures, IReadOnlyList<(string Figure, string Point)> rerun,
                                      IReadOnlyList<string> protocols)
    {
        if (options.Threads < 2) return null;
        var points = rerun.Select(r => ($"{r.Figure} {r.Point}", figures.Single(f => f.Name == r.Figure).Points.Single(p => p.Label == r.Point).Run)).ToList();
        return new("one-worker", $"The highest-contention points on one worker (the {options.Threads}-worker ceiling)", "workload", points, protocols,
                   Workers: 1, Rerun: rerun);
    }

    /// <summary>
    /// The verdict on a study's <see cref="OnOneWorker"/> figure, if it has one: per point, the
    /// best of <paramref name="baselines"/> and <paramref name="protocol"/> on one worker and on all
    /// <paramref name="workers"/>, and the ceiling, all workers times <paramref name="protocol"/>'s
    /// one-worker rate over the best baseline's on all; then the same ceiling from the medians of
    /// the runs in the fast window alone (<paramref name="fast"/>), since one figure's runs may sit in
    /// a slow window that the other's escaped. <paramref name="best"/> names the best baseline in
    /// the text ("best 2PL").
    /// </summary>
    public static string CeilingTable(IReadOnlyList<StudyPoint> points, IReadOnlyList<StudyPoint> fast, IReadOnlyList<Figure> figures, int workers,
                                      string protocol, IReadOnlyList<string> baselines, string best, double goal)
    {
        if (figures.SingleOrDefault(f => f.Rerun is not null) is not { Rerun: { } same } oneWorker) return "";
        static double RateIn(IReadOnlyList<StudyPoint> from, string figure, string point, string p) =>
            from.Single(q => q.Figure == figure && q.Point == point && q.Protocol == p).Throughput;
        double Rate(string figure, string point, string p) => RateIn(points, figure, point, p);
        (string Name, double Rate) Best(string figure, string point) => baselines.Select(b => (b, Rate(figure, point, b))).MaxBy(x => x.Item2);
        // NaN, printed "-", where a side had no fast run (Max passes over NaN while a number remains).
        double FastCeiling(string label, string figure, string point) =>
            workers * RateIn(fast, oneWorker.Name, label, protocol) / baselines.Max(b => RateIn(fast, figure, point, b));
        var sb = new StringBuilder();
        sb.AppendLine($"## What {workers} workers allow");
        sb.AppendLine();
        sb.AppendLine($"The highest-contention points again on one worker ({oneWorker.Name}.csv). A protocol's rate on {workers} workers over its own on one " +
                      $"says what contention costs it ({workers}.00x: nothing). The ceiling is {workers} x {protocol}'s one-worker rate over the {best} ({string.Join(", ", baselines)}) " +
                      $"on {workers} workers: what {protocol} would reach if its {workers} workers did exactly its one-worker work, without waiting. " +
                      $"Where the goal ({goal.ToString("0.0", CultureInfo.InvariantCulture)}x) is above the ceiling, no scheduling of {protocol}'s work meets it; " +
                      "only doing less work per transaction would. The last column takes both rates from the runs in the fast window alone.");
        sb.AppendLine();
        sb.AppendLine($"| point | {best}: 1 worker | {workers} workers ({workers}/1) | {protocol}: 1 worker (/ {best}) | {workers} workers ({workers}/1) | {protocol} / {best}, {workers} workers | ceiling | ceiling, the fast window's runs |");
        sb.AppendLine("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for (int i = 0; i < oneWorker.Points.Count; i++)
        {
            string label = oneWorker.Points[i].Label;
            var (figure, point) = same[i];
            var (one, oneRate) = Best(oneWorker.Name, label);
            var (all, allRate) = Best(figure, point);
            double mine = Rate(oneWorker.Name, label, protocol), mineAll = Rate(figure, point, protocol);
            double ceiling = workers * mine / allRate;
            sb.AppendLine(CultureInfo.InvariantCulture,
                $"| {label} | {oneRate:N0} ({one}) | {allRate:N0} ({all}, {allRate / Rate(oneWorker.Name, label, all):F2}x) | {mine:N0} ({mine / oneRate:F2}x) | " +
                $"{mineAll:N0} ({mineAll / mine:F2}x) | {mineAll / allRate:F2}x | {ceiling:F2}x ({(ceiling >= goal ? "above the goal" : "below the goal")}) | " +
                $"{Times(FastCeiling(label, figure, point))} |");
        }
        sb.AppendLine();
        return sb.ToString();
    }

    /// <summary>Creates the output directory (and parents) or says why it cannot, before any run.</summary>
    public static string PrepareDirectory(string directory)
    {
        try
        {
            var full = Path.GetFullPath(directory);
            Directory.CreateDirectory(full);
            Runner.CheckWritable(Path.Combine(full, "probe"));
            return full;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new UsageException($"--out {directory}: cannot create or write the directory: {e.Message}");
        }
    }
}
