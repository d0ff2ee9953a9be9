using System.Diagnostics;
using System.Text;

namespace Contend.Tests;

/// <summary>The repository and the child processes the package and sample tests start.</summary>
internal static class Processes
{
    /// <summary>The repository's root: the directory above the test assembly with Contend.slnx.</summary>
    public static string Root { get; } = FindRoot();

    /// <summary>The configuration the tests were built in, so that they use the same builds.</summary>
#if DEBUG
    public const string Configuration = "Debug";
#else
    public const string Configuration = "Release";
#endif

    static string FindRoot()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir is not null; dir = dir.Parent)
            if (File.Exists(Path.Combine(dir.FullName, "Contend.slnx"))) return dir.FullName;
        throw new InvalidOperationException($"no Contend.slnx above {AppContext.BaseDirectory}");
    }

    /// <summary>Runs <paramref name="file"/> to its end (killed after <paramref name="limit"/>) and
    /// returns its exit code and its output, both streams.</summary>
    public static (int Code, string Output) Run(string file, IEnumerable<string> args, string directory, TimeSpan limit)
    {
        var start = new ProcessStartInfo(file) { WorkingDirectory = directory, RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var a in args) start.ArgumentList.Add(a);
        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        start.Environment["DOTNET_NOLOGO"] = "1";
        using var process = Process.Start(start)!;
        var output = new StringBuilder();
        process.OutputDataReceived += (_, e) => { if (e.Data is not null) lock (output) output.AppendLine(e.Data); };
        process.ErrorDataReceived += (_, e) => { if (e.Data is not null) lock (output) output.AppendLine(e.Data); };
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        if (!process.WaitForExit(limit))
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"{file} {string.Join(' ', args)} did not end in {limit}:\n{output}");
        }
        process.WaitForExit(); // the output's last lines
        lock (output) return (process.ExitCode, output.ToString());
    }
}
