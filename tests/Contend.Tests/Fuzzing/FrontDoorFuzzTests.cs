using CsCheck;
using Xunit.Abstractions;

namespace Contend.Tests.Fuzzing;

/// <summary>
/// The front-door fuzzer in CI: a fixed run of cases, each generated from its own seed (same
/// seed, same case), over every protocol behind <see cref="Engine.Runtime.ContendEngine"/>. A
/// failure names its seed; <c>CONTEND_FUZZ_SEED=&lt;seed&gt;</c> runs that case alone, and the
/// long run (<c>build/Build.cs -- fuzz</c>) samples for as long as it is given and shrinks what it finds.
/// </summary>
public class FrontDoorFuzzTests(ITestOutputHelper output)
{
    /// <summary>The cases CI runs: half a minute on the project's 2-core machine.</summary>
    const int ShortRunCases = 6000;

    static readonly Gen<FrontDoorCase> Cases = FrontDoorCase.Generator(FrontDoorFuzzer.Protocols);

    /// <summary>The seed of case <paramref name="i"/> of the fixed run.</summary>
    public static string SeedOf(int i) => new PCG(0xF022, (ulong)i * 0x9E3779B97F4A7C15UL + 1).ToString();

    static FrontDoorCase Case(string seed) => Cases.Generate(PCG.Parse(seed), null, out _);

    [Fact]
    public async Task AFixedRunOfCasesKeepsEveryPromise()
    {
        if (Environment.GetEnvironmentVariable("CONTEND_FUZZ_SEED") is { Length: > 0 } only)
        {
            // Real threads: a case that failed once may need a few runs to fail again (CONTEND_FUZZ_REPEAT).
            int repeats = int.TryParse(Environment.GetEnvironmentVariable("CONTEND_FUZZ_REPEAT"), out int n) && n > 0 ? n : 1;
            for (int r = 0; r < repeats; r++) await Replay(only);
            return;
        }
        var clock = System.Diagnostics.Stopwatch.StartNew();
        var protocols = new HashSet<string>();
        var tally = new FuzzTally();
        for (int i = 0; i < ShortRunCases; i++)
        {
            string seed = SeedOf(i);
            var c = Case(seed);
            protocols.Add(c.Protocol);
            await Replay(seed, c, tally);
        }
        output.WriteLine($"{ShortRunCases} cases over {protocols.Count} protocols in {clock.Elapsed.TotalSeconds:F1} s: {tally}");
        Assert.Equal(FrontDoorFuzzer.Protocols.Count, protocols.Count); // every protocol met
        // Every way a call may end was met: a run that reaches none of them checks nothing.
        string[] endings = ["Committed", "UserAborted/KeyNotFound", "UserAborted/User", "UserAborted/DuplicateKey", "DuplicateKey in one post",
                            "UserAborted/TableFull", "Aborted/Deadline", "TransactionFailedException", "OperationCanceledException",
                            "EngineQueueFullException", "EngineClosedException"];
        Assert.All(endings, ending => Assert.True(tally.Kinds.ContainsKey(ending), $"no call of the run ended {ending}: {tally}"));
    }

    /// <summary>The cases of ReactDB's front door CI runs.</summary>
    const int ReactDbShortRunCases = 2000;

    static readonly Gen<ReactDbCase> ReactDbCases = ReactDbCase.Generator;

    [Fact]
    public async Task AFixedRunOfReactDbCasesKeepsEveryPromise()
    {
        if (Environment.GetEnvironmentVariable("CONTEND_FUZZ_REACTDB_SEED") is { Length: > 0 } only)
        {
            await ReplayReactDb(only, null);
            return;
        }
        var clock = System.Diagnostics.Stopwatch.StartNew();
        var tally = new FuzzTally();
        for (int i = 0; i < ReactDbShortRunCases; i++) await ReplayReactDb(SeedOf(i), tally);
        output.WriteLine($"{ReactDbShortRunCases} ReactDB cases in {clock.Elapsed.TotalSeconds:F1} s: {tally}");
        string[] endings = ["Committed", "UserAborted/KeyNotFound", "UserAborted/User", "TransactionFailedException", "ReactorCallCycleException",
                            "OperationCanceledException", "EngineClosedException"];
        Assert.All(endings, ending => Assert.True(tally.Kinds.ContainsKey(ending), $"no ReactDB call of the run ended {ending}: {tally}"));
    }

    static async Task ReplayReactDb(string seed, FuzzTally? tally)
    {
        var c = ReactDbCases.Generate(PCG.Parse(seed), null, out _);
        try
        {
            await ReactDbFuzzer.Run(c, tally);
        }
        catch (Exception e)
        {
            throw new FuzzViolation($"seed {seed} (replay: CONTEND_FUZZ_REACTDB_SEED={seed}): {e.Message}\n  case: {c}\n{(e is FuzzViolation ? "" : e.ToString())}");
        }
    }

    async Task Replay(string seed, FrontDoorCase? c = null, FuzzTally? tally = null)
    {
        c ??= Case(seed);
        try
        {
            await FrontDoorFuzzer.Run(c, tally);
        }
        catch (Exception e)
        {
            throw new FuzzViolation($"seed {seed} (replay: CONTEND_FUZZ_SEED={seed}): {e.Message}\n  case: {c}\n{(e is FuzzViolation ? "" : e.ToString())}");
        }
    }

    /// <summary>The long run: CsCheck samples cases for <c>CONTEND_FUZZ_SECONDS</c>, half of them
    /// through each front door, and shrinks the first that fails to the smallest it finds,
    /// printing its seed. Skipped unless that is set (<c>build/Build.cs -- fuzz</c> sets it).</summary>
    [LongFuzzFact]
    [Trait("Category", "FuzzLong")]
    public async Task SampledCasesKeepEveryPromise()
    {
        int seconds = int.Parse(Environment.GetEnvironmentVariable(LongFuzzFactAttribute.Seconds)!);
        int cases = 0;
        var clock = System.Diagnostics.Stopwatch.StartNew();
        await Cases.SampleAsync(async c =>
        {
            Interlocked.Increment(ref cases);
            await FrontDoorFuzzer.Run(c);
        }, writeLine: output.WriteLine, time: Math.Max(1, seconds / 2), threads: 1, print: c => c.ToString());
        await ReactDbCases.SampleAsync(async c =>
        {
            Interlocked.Increment(ref cases);
            await ReactDbFuzzer.Run(c);
        }, writeLine: output.WriteLine, time: Math.Max(1, seconds - seconds / 2), threads: 1, print: c => c.ToString());
        Assert.True(cases > 0);
        output.WriteLine($"long run: {cases} cases in {clock.Elapsed.TotalSeconds:F0} s, none failed");
    }
}

/// <summary>A fact that runs only when <see cref="Seconds"/> says for how long.</summary>
public sealed class LongFuzzFactAttribute : FactAttribute
{
    public const string Seconds = "CONTEND_FUZZ_SECONDS";

    public LongFuzzFactAttribute()
    {
        if (!int.TryParse(Environment.GetEnvironmentVariable(Seconds), out int seconds) || seconds <= 0)
            Skip = $"the long fuzz run: set {Seconds}, or run build/Build.cs -- fuzz";
    }
}
