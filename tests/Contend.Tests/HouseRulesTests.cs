using System.Text.RegularExpressions;

namespace Contend.Tests;

/// <summary>
/// The repository's own text kept true: README short and holding the two commands CI and a
/// newcomer run, every file and section a comment or page cites there, every C# block of the docs
/// code that a test builds, and no internal ticket number in the project's text.
/// </summary>
public partial class HouseRulesTests
{
    static readonly string Root = Processes.Root;

    /// <summary>Folders whose files are build output, caches or run results, not the project's text.</summary>
    static readonly string[] Ignored = ["bin", "obj", ".git", ".cache", "artifacts", "study-results", "BenchmarkDotNet.Artifacts", "states", "results", "__pycache__"];

    static readonly string[] TextExtensions = [".md", ".cs", ".tla", ".cfg", ".p", ".py", ".json", ".props", ".csproj", ".ndjson", ".csv"];

    /// <summary>Every text file of the project, repository-relative with '/'.</summary>
    static IEnumerable<string> ProjectFiles() =>
        Directory.EnumerateFiles(Root, "*", SearchOption.AllDirectories)
            .Select(f => Path.GetRelativePath(Root, f).Replace('\\', '/'))
            .Where(f => !f.Split('/').Any(part => Ignored.Contains(part)))
            .Where(f => TextExtensions.Contains(Path.GetExtension(f)) || Path.GetFileName(f) is "check" or "run")
            .Order(StringComparer.Ordinal);

    [Fact]
    public void ReadmeIsShortAndHoldsTheTwoCommands()
    {
        var readme = File.ReadAllLines(Path.Combine(Root, "README.md"));
        Assert.True(readme.Length <= 250, $"README.md has {readme.Length} lines; at most 250, the rest belongs in docs/");
        string text = string.Join('\n', readme);
        Assert.Contains("```\ndotnet run build/Build.cs -- demo\n```", text);
        Assert.Contains("```\ndotnet run build/Build.cs -- test\n```", text);
        Assert.Contains("dotnet run build/Build.cs -- test", File.ReadAllText(Path.Combine(Root, ".ci", "run")));
    }

    [GeneratedRegex(@"(?<![\w./-])(?:docs|proofs|specs|models|src|tests|samples|bench|build)/[\w./+-]*\.(?:md|tla|cfg|cs|p|json|py|props|csproj|txt|ndjson|csv)\b")]
    private static partial Regex CitedPath();

    [GeneratedRegex(@"\]\((?!https?:|#|mailto:)([^)\s#]+)(?:#[^)]*)?\)")]
    private static partial Regex MarkdownLink();

    /// <summary>Every repository path a file names (from the root), and every relative link of a
    /// page (from the page's folder), is a file or folder that exists.</summary>
    [Fact]
    public void EveryCitedFileExists()
    {
        var missing = new List<string>();
        foreach (var file in ProjectFiles().Where(f => Path.GetExtension(f) is not ".ndjson" and not ".csv"))
        {
            string text = File.ReadAllText(Path.Combine(Root, file));
            foreach (Match m in CitedPath().Matches(text))
            {
                string cited = m.Value.TrimEnd('.');
                if (!File.Exists(Path.Combine(Root, cited)) && !Directory.Exists(Path.Combine(Root, cited)))
                    missing.Add($"{file}:{Line(text, m.Index)}: {cited}");
            }
            if (Path.GetExtension(file) != ".md") continue;
            string folder = Path.GetDirectoryName(Path.Combine(Root, file))!;
            foreach (Match m in MarkdownLink().Matches(text))
            {
                string target = Path.GetFullPath(Path.Combine(folder, m.Groups[1].Value));
                if (!File.Exists(target) && !Directory.Exists(target))
                    missing.Add($"{file}:{Line(text, m.Index)}: link {m.Groups[1].Value}");
            }
        }
        Assert.True(missing.Count == 0, "cited but not in the repository:\n" + string.Join('\n', missing));
    }

    [GeneratedRegex(@"((?:docs|proofs)/[\w./-]+\.md),? (?:section )?""([^""]+)""")]
    private static partial Regex CitedSection();

    /// <summary>A citation of a page's section by its title (a page's path, a comma, and the title in
    /// double quotes) names a title that page has.</summary>
    [Fact]
    public void EveryCitedSectionExists()
    {
        var missing = new List<string>();
        foreach (var file in ProjectFiles())
        {
            string text = File.ReadAllText(Path.Combine(Root, file));
            foreach (Match m in CitedSection().Matches(text))
            {
                string page = Path.Combine(Root, m.Groups[1].Value);
                string title = Spaces().Replace(m.Groups[2].Value, " ");
                if (File.Exists(page) && !Spaces().Replace(File.ReadAllText(page), " ").Contains(title, StringComparison.Ordinal))
                    missing.Add($"{file}:{Line(text, m.Index)}: {m.Groups[1].Value} has no \"{title}\"");
            }
        }
        Assert.True(missing.Count == 0, "cited sections that are not there:\n" + string.Join('\n', missing));
    }

    [GeneratedRegex(@"\s+")]
    private static partial Regex Spaces();

    [GeneratedRegex(@"// docs: (\w+) begin\n(.*?)// docs: \1 end", RegexOptions.Singleline)]
    private static partial Regex MarkedRegion();

    [GeneratedRegex(@"```csharp\n(.*?)```\n", RegexOptions.Singleline)]
    private static partial Regex CSharpBlock();

    /// <summary>Every C# block of README, the package's README and docs is a marked region of code a test builds and runs
    /// (<see cref="SampleServiceTests.TheDocsExamplesAreCodeThatRuns"/> holds each page to its region).</summary>
    [Fact]
    public void EveryCSharpBlockOfTheDocsIsCodeThatRuns()
    {
        var regions = new[] { "samples/Bank/Program.cs", "tests/Consumer/Program.cs" }
            .SelectMany(f => MarkedRegion().Matches(File.ReadAllText(Path.Combine(Root, f))))
            .Select(m => m.Groups[2].Value).ToHashSet();
        var pages = ProjectFiles().Where(f => f is "README.md" or "src/PACKAGE.md" || f.StartsWith("docs/", StringComparison.Ordinal) && f.EndsWith(".md", StringComparison.Ordinal));
        var loose = new List<string>();
        foreach (var page in pages)
        {
            string text = File.ReadAllText(Path.Combine(Root, page));
            foreach (Match m in CSharpBlock().Matches(text))
                if (!regions.Contains(m.Groups[1].Value)) loose.Add($"{page}:{Line(text, m.Index)}");
        }
        Assert.True(loose.Count == 0, "C# blocks that no test builds (copy them from a marked region):\n" + string.Join('\n', loose));
    }

    [GeneratedRegex(@"\b(?:issue|ticket|session)s?\s+#?\d+\b|\(#\d+\)", RegexOptions.IgnoreCase)]
    private static partial Regex TicketNumber();

    /// <summary>The project's text names dates and commits, never the tracker's numbers or a
    /// count of sessions, which mean nothing to a reader of the repository.</summary>
    [Fact]
    public void NoLineNamesATicketNumber()
    {
        var found = new List<string>();
        foreach (var file in ProjectFiles())
        {
            string text = File.ReadAllText(Path.Combine(Root, file));
            foreach (Match m in TicketNumber().Matches(text))
                found.Add($"{file}:{Line(text, m.Index)}: {m.Value.ReplaceLineEndings(" ")}");
        }
        Assert.True(found.Count == 0, "ticket numbers in the project's text:\n" + string.Join('\n', found));
    }

    /// <summary>Set by <c>dotnet run build/Build.cs -- docs</c>: the tests below write the pages
    /// they hold to the sources and data, instead of failing on a difference.</summary>
    static bool Writing => Environment.GetEnvironmentVariable("CONTEND_WRITE_DOCS") == "1";

    /// <summary>docs/mutants.md is what <see cref="MutantMatrix"/> makes of the sources now.</summary>
    [Fact]
    public void TheMutantMatrixIsCurrent()
    {
        string made = MutantMatrix.Generate(Root), page = Path.Combine(Root, MutantMatrix.Page);
        if (Writing) File.WriteAllText(page, made);
        Assert.True(File.Exists(page) && File.ReadAllText(page) == made,
                    $"{MutantMatrix.Page} is not what the sources make: run dotnet run build/Build.cs -- docs");
    }

    /// <summary>Every table a page makes from committed data (<see cref="DataTables"/>) is what its
    /// data makes now.</summary>
    [Fact]
    public void EveryDataTableIsItsData()
    {
        var stale = new List<string>();
        foreach (var file in ProjectFiles().Where(f => f.EndsWith(".md", StringComparison.Ordinal)))
        {
            string page = Path.Combine(Root, file), text = File.ReadAllText(page), made = DataTables.Regenerate(page, text);
            if (made == text) continue;
            if (Writing) File.WriteAllText(page, made);
            else stale.Add(file);
        }
        Assert.True(stale.Count == 0, "tables that are not their data (run dotnet run build/Build.cs -- docs):\n" + string.Join('\n', stale));
    }

    static int Line(string text, int index) => text.AsSpan(0, index).Count('\n') + 1;
}
