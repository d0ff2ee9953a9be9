using System.Text;

namespace Contend.Coyote;

/// <summary>What every trace recorder (StealDB's, Chiller's, ReactDB's) writes the same way: a
/// recorded run's module title, its module and config files, and its manifest entry for
/// specs/check; and the search for the first seed whose run shows what a case is about.</summary>
public static class TraceFiles
{
    /// <summary>A recorded case as <see cref="WriteCases"/> reads it.</summary>
    public interface ITraceCase
    {
        string Name { get; }
        /// <summary>What a run must show for the case to mean anything.</summary>
        string Shows { get; }
        /// <summary>A twin's run, which the spec must reject.</summary>
        bool Twin { get; }
    }

    /// <summary>A recorded run written out: its module, its TLC config, and the events it holds.</summary>
    public readonly record struct RecordedModule(string Module, string Config, int Steps);

    /// <summary>The module's first line, "---- MODULE name ----", 77 characters wide.</summary>
    public static void AppendTitle(StringBuilder sb, string name)
    {
        string title = $" MODULE {name} ";
        int pad = Math.Max(4, 77 - title.Length);
        sb.Append('-', pad / 2).Append(title).Append('-', pad - pad / 2).Append('\n');
    }

    /// <summary>Writes a recorded run's module and config into <paramref name="dir"/>; returns its
    /// manifest entry. A run of the protocol passes when some behaviour of Spec matches it
    /// (TraceMatchedReachable violated); a twin's when none does.</summary>
    public static object Write(string dir, string name, string module, string config, bool twin, string note)
    {
        string spec = Path.GetFullPath(Path.Combine(dir, name + ".tla")), cfg = Path.GetFullPath(Path.Combine(dir, name + ".cfg"));
        File.WriteAllText(spec, module);
        File.WriteAllText(cfg, config);
        return twin
            ? new { name, spec, cfg, expect = "pass", deadlock = false, note,
                    vacuity = "a twin's trace: it passes when no behaviour of Spec matches the whole trace" }
            : new { name, spec, cfg, expect = "pass", deadlock = false, note,
                    reaches = new[] { "TraceMatchedReachable" } };
    }

    /// <summary>
    /// Records every case into <paramref name="dir"/>: for each, the first seed in
    /// 1..<paramref name="maxSeeds"/> whose run <paramref name="wanted"/> accepts, written out by
    /// <paramref name="module"/>, with its manifest entry added to <paramref name="models"/>.
    /// Returns the number of cases no seed showed; each is a failure of the recording.
    /// </summary>
    /// <param name="seedWord">how the manifest's note names the seed ("seed", "Coyote seed")</param>
    public static int WriteCases<TCase, TRun>(string dir, TextWriter log, List<object> models, IEnumerable<TCase> cases, int maxSeeds, string seedWord,
                                              Func<TCase, int, TRun> run, Func<TCase, TRun, bool> wanted, Func<TCase, int, TRun, RecordedModule> module)
        where TCase : ITraceCase
    {
        Directory.CreateDirectory(dir);
        int missing = 0;
        foreach (var c in cases)
        {
            if (FirstShowing(maxSeeds, seed => run(c, seed), recorded => wanted(c, recorded)) is not var (seed, found))
            {
                log.WriteLine($"FAIL {c.Name}: no seed in 1..{maxSeeds} gives a run that shows: {c.Shows}");
                missing++;
                continue;
            }
            var written = module(c, seed, found);
            models.Add(Write(dir, c.Name, written.Module, written.Config, c.Twin, $"{c.Shows}; {seedWord} {seed}, {written.Steps} steps"));
            log.WriteLine($"ok   {c.Name}: seed {seed}, {written.Steps} steps ({c.Shows})");
        }
        return missing;
    }

    /// <summary>The first seed in 1..<paramref name="maxSeeds"/> whose recorded run
    /// <paramref name="wanted"/> accepts, with that run; null when none does.</summary>
    public static (int Seed, T Run)? FirstShowing<T>(int maxSeeds, Func<int, T> run, Func<T, bool> wanted)
    {
        for (int seed = 1; seed <= maxSeeds; seed++)
        {
            var recorded = run(seed);
            if (wanted(recorded)) return (seed, recorded);
        }
        return null;
    }
}
