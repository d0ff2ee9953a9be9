using System.Net;
using System.Net.Http.Json;
using System.Text.RegularExpressions;

namespace Contend.Tests;

/// <summary>
/// The sample bank service (samples/Bank) as its users meet it: started as a process on
/// loopback, driven by concurrent HTTP callers, stopped by SIGTERM as a service manager stops it.
/// Every response is checked; every audit, taken in one transaction while transfers run, finds
/// the money kept; the metrics endpoint serves the engine's counters; the stop drains the
/// engine and its history, every committed transaction of the run, is serializable.
/// </summary>
public partial class SampleServiceTests
{
    const int Callers = 8, RequestsPerCaller = 150, AuditEvery = 25, Accounts = 16, Opening = 1_000;
    static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    record Transferred(long FromBalance, long ToBalance);
    record Audit(long Total, long Expected, long[] Balances);
    record Refusal(string Error);

    [GeneratedRegex(@"history of (\d+) committed transactions checked: serializable")]
    private static partial Regex Serializable();

    /// <summary>The examples of README, the package's README and docs/embedding.md are code that runs, verbatim between
    /// its markers: the package consumer's engine and reactors (built against the packed package
    /// and run by <see cref="PackageTests"/>), and the bank service's (run here).</summary>
    [Theory]
    [InlineData("tests/Consumer/Program.cs", "engine", "README.md")]
    [InlineData("tests/Consumer/Program.cs", "engine", "src/PACKAGE.md")]
    [InlineData("samples/Bank/Program.cs", "embed", "docs/embedding.md")]
    [InlineData("tests/Consumer/Program.cs", "reactdb", "docs/embedding.md")]
    public void TheDocsExamplesAreCodeThatRuns(string file, string marker, string page)
    {
        string code = File.ReadAllText(Path.Combine(Processes.Root, file));
        string begin = $"// docs: {marker} begin\n", end = $"// docs: {marker} end";
        int from = code.IndexOf(begin, StringComparison.Ordinal), to = code.IndexOf(end, StringComparison.Ordinal);
        Assert.True(from >= 0 && to > from, $"{file} lost its markers '{marker}'");
        string region = code[(from + begin.Length)..to];
        Assert.Contains("```csharp\n" + region + "```\n", File.ReadAllText(Path.Combine(Processes.Root, page)));
    }

    [Theory]
    [InlineData("StealDB")]
    [InlineData("Strife")]
    public async Task ConcurrentTransfersOverHttpKeepTheMoneyAndASerializableHistory(string protocol)
    {
        using var service = SampleProcess.Start("Bank", "--urls", "http://127.0.0.1:0", $"--Contend:Protocol={protocol}", "--Contend:Pin=false",
                                                "--Contend:RecordHistory=true", $"--Bank:Accounts={Accounts}", $"--Bank:Opening={Opening}");
        using var http = new HttpClient { BaseAddress = new Uri(await service.Url.WaitAsync(Patience)), Timeout = Patience };
        long transfers = 0, refused = 0, audits = 0;
        var callers = Enumerable.Range(0, Callers).Select(c => Task.Run(async () =>
        {
            var rng = new Random(c);
            for (int i = 0; i < RequestsPerCaller; i++)
            {
                if (i % AuditEvery == AuditEvery - 1)
                {
                    var audit = await http.GetFromJsonAsync<Audit>("/audit");
                    Assert.Equal(Accounts * Opening, audit!.Total); // read in one transaction while transfers run
                    Assert.All(audit.Balances, b => Assert.True(b >= 0));
                    Interlocked.Increment(ref audits);
                    continue;
                }
                int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                using var response = await http.PostAsJsonAsync("/transfers", new { from, to, amount = 1 + rng.Next(400) });
                if (response.StatusCode == HttpStatusCode.OK)
                {
                    var done = await response.Content.ReadFromJsonAsync<Transferred>();
                    Assert.True(done!.FromBalance >= 0 && done.ToBalance > 0, $"balances {done.FromBalance}, {done.ToBalance}");
                    Interlocked.Increment(ref transfers);
                }
                else
                {
                    Assert.True(response.StatusCode == HttpStatusCode.Conflict, $"{response.StatusCode}: {await response.Content.ReadAsStringAsync()}");
                    Assert.Equal("refused: User", (await response.Content.ReadFromJsonAsync<Refusal>())!.Error); // not enough money
                    Interlocked.Increment(ref refused);
                }
            }
        })).ToArray();
        await Task.WhenAll(callers).WaitAsync(Patience);
        Assert.Equal(Callers * RequestsPerCaller, transfers + refused + audits);
        Assert.True(transfers > refused, $"{transfers} transfers, {refused} refused");

        var final = await http.GetFromJsonAsync<Audit>("/audit");
        Assert.Equal(Accounts * Opening, final!.Total);
        string metrics = await http.GetStringAsync("/metrics");
        Assert.Matches(@"contend_transactions_committed_total\{[^}]*workload=""bank""[^}]*\} \d+", metrics);

        string log = service.Stop(Patience);
        var verdict = Serializable().Match(log);
        Assert.True(verdict.Success, log);
        Assert.Equal(transfers + audits + 1, long.Parse(verdict.Groups[1].Value)); // every commit of the run, the last audit too
    }
    /// <summary>The bank made durable by its configuration: transfers, an audit the client reads,
    /// then SIGKILL; started again on the same directory, it shows the client the same balances.</summary>
    [Fact]
    public async Task ADurableBankShowsTheSameBalancesAfterItIsKilled()
    {
        string directory = Path.Combine(Path.GetTempPath(), $"contend-bank-{Guid.NewGuid():N}");
        string[] args = ["--urls", "http://127.0.0.1:0", "--Contend:Protocol=NoWait", "--Contend:Pin=false", "--Contend:Durability=Durable",
                         $"--Contend:DataDirectory={directory}", "--Contend:EpochLength=00:00:00.005", $"--Bank:Accounts={Accounts}", $"--Bank:Opening={Opening}"];
        try
        {
            Audit before;
            using (var service = SampleProcess.Start("Bank", args))
            {
                using var http = new HttpClient { BaseAddress = new Uri(await service.Url.WaitAsync(Patience)), Timeout = Patience };
                await Task.WhenAll(Enumerable.Range(0, 4).Select(c => Task.Run(async () =>
                {
                    var rng = new Random(c);
                    for (int i = 0; i < 50; i++)
                    {
                        int from = rng.Next(Accounts), to = (from + 1 + rng.Next(Accounts - 1)) % Accounts;
                        using var response = await http.PostAsJsonAsync("/transfers", new { from, to, amount = 1 + rng.Next(400) });
                        Assert.True(response.StatusCode is HttpStatusCode.OK or HttpStatusCode.Conflict, $"{response.StatusCode}: {await response.Content.ReadAsStringAsync()}");
                    }
                }))).WaitAsync(Patience);
                before = (await http.GetFromJsonAsync<Audit>("/audit"))!;
                Assert.Equal(Accounts * Opening, before.Total);
                Assert.NotEqual(Enumerable.Repeat((long)Opening, Accounts), before.Balances);
            } // disposed while running: SIGKILL
            using (var service = SampleProcess.Start("Bank", args))
            {
                using var http = new HttpClient { BaseAddress = new Uri(await service.Url.WaitAsync(Patience)), Timeout = Patience };
                var after = (await http.GetFromJsonAsync<Audit>("/audit"))!;
                Assert.Equal(before.Balances, after.Balances);
                Assert.Contains("recovered", service.Stop(Patience));
            }
        }
        finally
        {
            if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
        }
    }
}
