using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.RegularExpressions;

namespace Contend.Tests;

/// <summary>
/// A sample service (samples/NAME) as its users meet it: started as a process of its own, its
/// output collected, its address read from the host's "Now listening on" line, and stopped by
/// SIGTERM as a service manager stops it. Killed on dispose if it is still running.
/// </summary>
internal sealed partial class SampleProcess : IDisposable
{
    readonly Process _process;
    readonly StringBuilder _output = new();
    readonly TaskCompletionSource<string> _listening = new(TaskCreationOptions.RunContinuationsAsynchronously);

    [LibraryImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static partial int Kill(int pid, int signal);
    const int SigTerm = 15;

    [GeneratedRegex(@"Now listening on: (http://127\.0\.0\.1:\d+)")]
    private static partial Regex Listening();

    SampleProcess(Process process) => _process = process;

    /// <summary>The address the service listens on, once it does.</summary>
    public Task<string> Url => _listening.Task;

    /// <summary>Starts samples/<paramref name="name"/>'s build with <paramref name="args"/>.</summary>
    public static SampleProcess Start(string name, params string[] args)
    {
        string dll = Path.Combine(Processes.Root, "samples", name, "bin", Processes.Configuration, "net10.0", $"{name}.dll");
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        start.ArgumentList.Add(dll);
        foreach (var a in args) start.ArgumentList.Add(a);
        var sample = new SampleProcess(Process.Start(start)!);
        sample._process.OutputDataReceived += (_, e) => sample.Line(e.Data);
        sample._process.ErrorDataReceived += (_, e) => sample.Line(e.Data);
        sample._process.BeginOutputReadLine();
        sample._process.BeginErrorReadLine();
        return sample;
    }

    void Line(string? line)
    {
        if (line is null) return;
        lock (_output) _output.AppendLine(line);
        if (Listening().Match(line) is { Success: true } m) _listening.TrySetResult(m.Groups[1].Value);
    }

    /// <summary>Stops the service by SIGTERM and returns all it wrote; asserts that it stopped in
    /// time and exited with 0.</summary>
    public string Stop(TimeSpan patience)
    {
        Assert.Equal(0, Kill(_process.Id, SigTerm));
        Assert.True(_process.WaitForExit(patience), "the service did not stop on SIGTERM");
        _process.WaitForExit(); // the output's last lines
        string log;
        lock (_output) log = _output.ToString();
        Assert.True(_process.ExitCode == 0, log);
        return log;
    }

    public void Dispose()
    {
        if (!_process.HasExited) _process.Kill(entireProcessTree: true);
        _process.Dispose();
    }
}
