namespace Contend.Tests.Durability;

/// <summary>
/// Real crashes: <c>contend crashes</c> runs a durable bank in a child process, kills it with
/// SIGKILL at random moments, and starts it again on its directory, each round under the next
/// protocol. Every transfer the child's callers were told committed must be in what the next child
/// recovers, and the balances must be what the recovered ledger makes them. A short run here; the
/// long one is the verb's (docs/durability.md).
/// </summary>
public class CrashTests
{
    static (int Code, string Output) Contend(params string[] args) =>
        Processes.Run("dotnet", [Path.Combine(AppContext.BaseDirectory, "contend.dll"), .. args], Processes.Root, TimeSpan.FromMinutes(5));

    [Fact]
    public void KilledAgainAndAgainTheBankLosesNothingItAcknowledged()
    {
        var (code, output) = Contend("crashes", "--rounds", "12", "--transfers", "5000", "--seed", "7");
        Assert.True(code == 0, output);
        Assert.Contains("12 crashes", output);
        Assert.Contains("every one recovered", output);
        // Each round's child checked the record before it served; the kills came while calls were answered.
        var rounds = output.Split('\n').Where(l => l.StartsWith("round ", StringComparison.Ordinal)).ToList();
        Assert.Equal(13, rounds.Count);
        Assert.All(rounds, r => Assert.Contains("acknowledged transfers there", r));
        Assert.True(rounds.Count(r => !r.Contains("; 0 acknowledged", StringComparison.Ordinal)) >= 6, output);
    }

    [Fact]
    public void ADirectoryInUseIsRefusedByName()
    {
        string directory = Path.Combine(Path.GetTempPath(), $"contend-crashes-busy-{Guid.NewGuid():N}");
        Directory.CreateDirectory(directory);
        File.WriteAllText(Path.Combine(directory, "something"), "");
        try
        {
            var (code, output) = Contend("crashes", "--data", directory, "--rounds", "1");
            Assert.Equal(2, code);
            Assert.Contains($"--data {directory}: not empty", output);
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }
}
