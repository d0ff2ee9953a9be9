using Contend.Engine.Protocols.StealDB;
using Contend.Engine.Runtime;

namespace Contend.Tests;

/// <summary>The engine's test hooks (mutants, traces, audits): on in the test projects, which set the
/// runtime switch, and refused, not ignored, in a process without it.</summary>
public class TestHooksTests
{
    [Fact]
    public void TestProjectsEnableTheHooks()
    {
        // Without the switch every trace validation and audited test would fail at its first
        // attach, and every mutant at its protocol's construction.
        Assert.True(TestHooks.Enabled, $"the test project does not set the runtime switch {TestHooks.SwitchName}");
    }

    [Fact]
    public void AHookAttachedWithoutTheSwitchIsRefusedByName()
    {
        var trace = new StealDbTrace();
        var refused = Assert.Throws<InvalidOperationException>(() => TestHooks.Attach(trace, "Trace", enabled: false));
        Assert.Contains("Trace: this process has not enabled the engine's test hooks", refused.Message);
        Assert.Contains(TestHooks.SwitchName, refused.Message);
    }

    [Fact]
    public void AHookAttachedWithTheSwitchIsKeptAndNoHookIsAlwaysAccepted()
    {
        var trace = new StealDbTrace();
        Assert.Same(trace, TestHooks.Attach(trace, "Trace", enabled: true));
        Assert.Null(TestHooks.Attach<StealDbTrace>(null, "Trace", enabled: false));
    }
}
