using System.Text;

namespace Contend.Coyote;

/// <summary>What every trace recorder (StealDB's, Chiller's, ReactDB's) writes the same way: a
/// recorded run's module title, its module and config files, and its manifest entry for
/// specs/check; and the search for the first seed whose run shows what a case is about.</summary>
public static class TraceFiles
{
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
