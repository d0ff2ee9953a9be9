using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace Contend.Tests;

/// <summary>
/// docs/mutants.md, made from the sources that define the mutants and the tests that catch
/// them: the TLC models' configurations and manifest, the P manifest, the engine's mutant
/// enums, and the Coyote and xunit tests that turn the engine's flags on. A spec mutant is the
/// operator a model substitutes (<c>Step &lt;- MutantStep</c>); a P case or an engine flag
/// answers it when its note or XML summary names that operator.
/// </summary>
internal static partial class MutantMatrix
{
    public const string Page = "docs/mutants.md";

    sealed record Row(string Folder, string Mutant)
    {
        public List<string> Tlc { get; } = [];
        public List<string> P { get; } = [];
        public List<string> Engine { get; } = [];
        public List<string> Coyote { get; } = [];
        public SortedSet<string> Xunit { get; } = new(StringComparer.Ordinal);
    }

    [GeneratedRegex(@"<-\s*(Mutant\w+)")]
    private static partial Regex Substituted();

    [GeneratedRegex(@"Mutant[A-Z]\w*")]
    private static partial Regex MutantName();

    [GeneratedRegex(@"(?:///\s*<summary>(?<doc>(?:(?!</summary>).)*)</summary>\s*)?(?<member>\w+)\s*=\s*(?<value>\d+)\s*,", RegexOptions.Singleline)]
    private static partial Regex EnumMember();

    [GeneratedRegex(@"internal enum (\w+Mutants)")]
    private static partial Regex EnumName();

    [GeneratedRegex(@"new\(\$?""([\w{}]+)""")]
    private static partial Regex CoyoteEntry();

    [GeneratedRegex(@"\b(\w+Mutants)\.(\w+)")]
    private static partial Regex FlagUse();

    [GeneratedRegex(@"CaughtBy:\s*(?:""([^""]*)""|CoyoteSuite\.StepsBound|nameof\((\w+)\)|(\w+))")]
    private static partial Regex CaughtBy();

    [GeneratedRegex(@"\s+")]
    private static partial Regex Spaces();

    public static string Generate(string root)
    {
        // A broken step has several names: the operator a model substitutes, the model's own name,
        // the P case's; those that a model, a case or a note puts together are one step.
        var names = new Names();
        var tlc = new List<(string Folder, string[] Names, string Cell)>();
        var p = new List<(string Folder, string[] Names, string Cell)>();
        using (var manifest = JsonDocument.Parse(File.ReadAllText(Path.Combine(root, "specs", "models.json"))))
            foreach (var model in manifest.RootElement.GetProperty("models").EnumerateArray())
            {
                string expect = model.GetProperty("expect").GetString()!, name = model.GetProperty("name").GetString()!;
                if (expect == "pass" || !model.TryGetProperty("cfg", out var cfg)) continue;
                string cfgPath = cfg.GetString()!;
                var step = Substituted().Matches(File.ReadAllText(Path.Combine(root, "specs", cfgPath))).Select(m => m.Groups[1].Value).ToList();
                if (name.Contains("Mutant", StringComparison.Ordinal)) step.Add(name[name.IndexOf("Mutant", StringComparison.Ordinal)..]);
                if (step.Count == 0) continue; // a finding (the paper's algorithm as written), not a mutant
                names.Join(step);
                tlc.Add((cfgPath.Split('/')[0], step.ToArray(), $"`{name}`: {expect}"));
            }
        using (var manifest = JsonDocument.Parse(File.ReadAllText(Path.Combine(root, "models", "models.json"))))
            foreach (var test in manifest.RootElement.GetProperty("tests").EnumerateArray())
            {
                string expect = test.GetProperty("expect").GetString()!, name = test.GetProperty("test").GetString()!;
                string project = test.GetProperty("project").GetString()!;
                string note = test.TryGetProperty("note", out var n) ? n.GetString()! : "";
                if (expect == "pass" || name.EndsWith("Reachable", StringComparison.Ordinal)) continue;
                var step = MutantName().Matches(note).Select(m => m.Value).ToList();
                if (name.StartsWith("tcMutant", StringComparison.Ordinal)) step.Add("Mutant" + name["tcMutant".Length..]);
                if (step.Count == 0) continue;
                names.Join(step);
                p.Add((project, step.ToArray(), $"`{project}/{name}`: {expect}"));
            }
        var rows = new Dictionary<string, Row>(StringComparer.Ordinal);
        Row RowOf(string folder, string name)
        {
            string key = names.Root(name);
            return rows.TryGetValue(key, out var row) ? row : rows[key] = new Row(folder, string.Join(" / ", names.Members(key).Select(x => $"`{x}`")));
        }
        foreach (var (folder, step, cell) in tlc) RowOf(folder, step[0]).Tlc.Add(cell);
        foreach (var (folder, step, cell) in p) RowOf(folder, step[0]).P.Add(cell);

        // The engine's flags: enum member -> its row (a spec mutant its summary names, else its own).
        var flagRows = new Dictionary<string, List<Row>>(StringComparer.Ordinal);
        foreach (var file in Directory.EnumerateFiles(Path.Combine(root, "src", "Engine"), "*Mutants.cs", SearchOption.AllDirectories)
                                      .Concat(Directory.EnumerateFiles(Path.Combine(root, "src", "Engine", "Protocols"), "Mutants.cs")).Distinct().Order(StringComparer.Ordinal))
        {
            string text = File.ReadAllText(file);
            string folder = Path.GetFileName(Path.GetDirectoryName(file)!);
            foreach (Match e in EnumName().Matches(text))
            {
                int start = text.IndexOf('{', e.Index), end = text.IndexOf('}', start);
                foreach (Match m in EnumMember().Matches(text[start..end]))
                {
                    if (m.Groups["value"].Value == "0") continue;
                    string flag = $"{e.Groups[1].Value}.{m.Groups["member"].Value}";
                    string doc = Spaces().Replace(Regex.Replace(m.Groups["doc"].Value, @"///|<[^>]+>", " "), " ").Trim();
                    var named = MutantName().Matches(doc).Select(x => x.Value).Where(names.Known).Select(names.Root).Distinct().ToList();
                    var targets = named.Count > 0 ? named.Select(x => rows[x]).ToList()
                                                  : [rows.TryGetValue(flag, out var own) ? own : rows[flag] = new Row(folder, "(engine only) " + m.Groups["member"].Value)];
                    foreach (var row in targets) row.Engine.Add($"`{flag}`");
                    flagRows[flag] = targets;
                }
            }
        }

        foreach (var file in Directory.EnumerateFiles(Path.Combine(root, "tests", "Contend.Coyote"), "*.cs", SearchOption.AllDirectories)
                                      .Where(f => !f.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}") && !f.Contains($"{Path.DirectorySeparatorChar}bin{Path.DirectorySeparatorChar}"))
                                      .Order(StringComparer.Ordinal))
        {
            string text = File.ReadAllText(file);
            var entries = CoyoteEntry().Matches(text).ToList();
            for (int i = 0; i < entries.Count; i++)
            {
                string name = entries[i].Groups[1].Value;
                if (!name.Contains("Twin", StringComparison.Ordinal)) continue;
                // The entry runs to the next one, or to the end of its list.
                int from = entries[i].Index, listEnd = text.IndexOf("];", from, StringComparison.Ordinal);
                int to = Math.Min(i + 1 < entries.Count ? entries[i + 1].Index : text.Length, listEnd < 0 ? text.Length : listEnd);
                string entry = text[from..to];
                var caught = CaughtBy().Match(entry);
                string by = !caught.Success ? "" : caught.Groups[1].Success ? caught.Groups[1].Value
                          : caught.Groups[2].Success ? caught.Groups[2].Value : caught.Groups[3].Success ? caught.Groups[3].Value : "steps bound";
                name = name.Replace("{p}", "*"); // one test per protocol
                foreach (Match use in FlagUse().Matches(entry))
                    if (flagRows.TryGetValue($"{use.Groups[1].Value}.{use.Groups[2].Value}", out var targets))
                        foreach (var row in targets) row.Coyote.Add(by.Length > 0 ? $"`{name}`: {by.Trim()}" : $"`{name}`");
            }
        }

        foreach (var file in Directory.EnumerateFiles(Path.Combine(root, "tests", "Contend.Tests"), "*.cs", SearchOption.AllDirectories)
                                      .Where(f => !f.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}") && !f.Contains($"{Path.DirectorySeparatorChar}bin{Path.DirectorySeparatorChar}")))
            foreach (Match use in FlagUse().Matches(File.ReadAllText(file)))
                if (flagRows.TryGetValue($"{use.Groups[1].Value}.{use.Groups[2].Value}", out var targets))
                    foreach (var row in targets) row.Xunit.Add($"`{Path.GetFileNameWithoutExtension(file)}`");

        var page = new StringBuilder();
        page.Append("""
            # Mutants: where each broken step is caught

            Made from the sources by `dotnet run build/Build.cs -- docs`; a test fails when this
            page and the sources disagree. A row is one broken step: a spec's mutant (the operator
            a TLC model substitutes), with the P cases, engine flags and tests that answer it (a P
            case's note or an engine flag's summary names the operator), or a flag of the engine
            alone. Each cell lists where the layer has it and what catches it; an empty cell is a
            layer without it. The Coyote and xunit tests turn the engine's flag on and must fail.

            """);
        foreach (var folder in rows.Values.GroupBy(r => r.Folder).OrderBy(g => g.Key, StringComparer.Ordinal))
        {
            page.Append($"\n## {folder.Key}\n\n| mutant | TLC | P | engine | Coyote | xunit |\n| --- | --- | --- | --- | --- | --- |\n");
            foreach (var row in folder.OrderBy(r => r.Mutant.StartsWith('(')).ThenBy(r => r.Mutant, StringComparer.Ordinal))
                page.Append($"| {row.Mutant} | {Cell(row.Tlc)} | {Cell(row.P)} | {Cell(row.Engine)} | {Cell(row.Coyote)} | {Cell(row.Xunit)} |\n");
        }
        int spec = rows.Values.Count(r => r.Tlc.Count > 0), engine = rows.Values.Count(r => r.Engine.Count > 0);
        page.Append($"\n{rows.Count} broken steps: {spec} in a spec, {rows.Values.Count(r => r.P.Count > 0)} in a P model, " +
                    $"{engine} in the engine, {rows.Values.Count(r => r.Coyote.Count > 0)} caught by Coyote, {rows.Values.Count(r => r.Xunit.Count > 0)} by xunit.\n");
        return page.ToString();
    }

    static string Cell(IEnumerable<string> items) => string.Join("<br>", items.Distinct()).Replace("|", "\\|");

    /// <summary>Names joined into steps (union-find), each step's names in the order first seen.</summary>
    sealed class Names
    {
        readonly Dictionary<string, string> _parent = new(StringComparer.Ordinal);
        readonly List<string> _seen = [];

        public bool Known(string name) => _parent.ContainsKey(name);

        public string Root(string name)
        {
            while (_parent[name] != name) name = _parent[name] = _parent[_parent[name]];
            return name;
        }

        public void Join(IReadOnlyList<string> step)
        {
            foreach (string name in step)
                if (_parent.TryAdd(name, name)) _seen.Add(name);
            foreach (string name in step.Skip(1))
            {
                string a = Root(step[0]), b = Root(name);
                if (a != b) _parent[b] = a;
            }
        }

        public IEnumerable<string> Members(string root) => _seen.Where(n => Root(n) == root);
    }
}
