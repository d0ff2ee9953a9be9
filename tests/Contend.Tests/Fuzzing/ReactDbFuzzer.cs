using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;

namespace Contend.Tests.Fuzzing;

/// <summary>
/// Runs one <see cref="ReactDbCase"/> through <see cref="ReactDbEngine"/>'s front door with the
/// promises of <see cref="FrontDoorFuzzer"/>: every call ends within a bound, as its inputs
/// allow (a call chain back into a container its caller holds ends with
/// <see cref="ReactorCallCycleException"/>); after the calls no context is held, the money is
/// all there and the history is serializable; and disposal ends.
/// </summary>
public static class ReactDbFuzzer
{
    public static async Task Run(ReactDbCase c, FuzzTally? tally = null)
    {
        var bank = new ReactorFuzzBank(c);
        var engine = new ReactDbEngine(bank.Deployment, new ReactDbOptions
        {
            ExecutorsPerContainer = c.Executors, MaxAttempts = c.MaxAttempts, MaxRootsInFlight = c.MaxRoots, RecordHistory = true, Name = "fuzz",
        }, c.ThrowingLogger ? new ThrowingLogger() : null);
        var bound = FrontDoorFuzzer.Bound;
        await FrontDoorFuzzer.Drive(c.Calls, call => call.CancelAfterMs, (call, cancel) => Call(engine, bank, call, cancel), c.DisposeAfter, engine, async (calls, disposed) =>
        {
            for (int i = 0; i < calls.Length; i++)
            {
                Allowed(c, i, calls[i], disposed);
                tally?.Add(calls[i]);
            }
            // A logger that throws may have failed the engine with the last call: then there is nothing to audit.
            bool mayHaveFailed = c.ThrowingLogger && c.Calls.Any(other => other.Function == ReactorFuzzFunction.Transfer && other.Args[4] == FuzzMode.Throw);
            if (disposed || mayHaveFailed) return;
            if (engine.ContextsHeld() is int held and > 0) throw new FuzzViolation($"after every call ended, {held} contexts are still held");
            var audit = await engine.ExecuteAsync(bank.Deployment.Reactors[0], bank[ReactorFuzzFunction.Audit], default).AsTask().WaitAsync(bound);
            long total = c.Reactors * ReactDbCase.Rows * ReactDbCase.Opening;
            if (!audit.Outcome.Committed || audit.Value != total)
                throw new FuzzViolation($"after the calls an audit ended {audit.Outcome.Outcome} and saw {audit.Value}, not {total}");
            var report = SerializabilityChecker.Check(engine.History());
            if (!report.Serializable) throw new FuzzViolation($"the history is not serializable: {report.Anomalies.FirstOrDefault()?.Description}");
        });
    }

    /// <summary>The reactor a call's root runs on: a chain starts at its first reactor.</summary>
    static int RootOf(ReactorFuzzCall call) => call.Function == ReactorFuzzFunction.Chain ? (int)call.Args[0] : call.Reactor;

    static async Task<FrontDoorFuzzer.Ended> Call(ReactDbEngine engine, ReactorFuzzBank bank, ReactorFuzzCall call, CancellationToken cancel)
    {
        try
        {
            var result = await engine.ExecuteAsync(bank.Deployment.Reactors[RootOf(call)], bank[call.Function], call.Args, cancel);
            return new FrontDoorFuzzer.Ended(result.Outcome, null, cancel.IsCancellationRequested, [result.Value]);
        }
        catch (Exception e)
        {
            return new FrontDoorFuzzer.Ended(null, e, cancel.IsCancellationRequested, []);
        }
    }

    /// <summary>Whether a chain leaves a container and comes back to it: then a caller of the call
    /// that comes back holds that container's context.</summary>
    static bool ComesBack(ReactDbCase c, long[] chain)
    {
        var left = new HashSet<int>();
        for (int i = 1; i < chain.Length; i++)
        {
            int from = c.ContainerOf(chain[i - 1]), to = c.ContainerOf(chain[i]);
            if (from == to) continue;
            left.Add(from);
            if (left.Contains(to)) return true;
        }
        return false;
    }

    static void Allowed(ReactDbCase c, int i, FrontDoorFuzzer.Ended ended, bool disposed)
    {
        var call = c.Calls[i];
        var a = call.Args;
        bool Missing(long row) => row >= ReactDbCase.Rows;
        // What the logic meets first, in its order: the root's own row, then the callee's mode, then its row.
        (AbortReason? Reason, bool Throws, bool Cycle) expected = call.Function switch
        {
            ReactorFuzzFunction.Transfer when Missing(a[0]) => (AbortReason.KeyNotFound, false, false),
            ReactorFuzzFunction.Transfer when a[4] == FuzzMode.Abort => (AbortReason.User, false, false),
            ReactorFuzzFunction.Transfer when a[4] == FuzzMode.Throw => (null, true, false),
            ReactorFuzzFunction.Transfer when Missing(a[2]) => (AbortReason.KeyNotFound, false, false),
            ReactorFuzzFunction.Chain when ComesBack(c, a) => (null, false, true),
            _ => (null, false, false),
        };
        string where = $"call {i}, {call}";
        if (ended.Error is { } error)
        {
            bool ok = error switch
            {
                OperationCanceledException => ended.Cancelled,
                EngineClosedException => disposed,
                // The logger threw as a function's failure was logged: the engine failed, and said so.
                EngineFailedException => c.ThrowingLogger && c.Calls.Any(other => other.Function == ReactorFuzzFunction.Transfer && other.Args[4] == FuzzMode.Throw),
                ReactorCallCycleException => expected.Cycle,
                TransactionFailedException f => f.InnerException is FuzzBodyException && expected.Throws,
                _ => false,
            };
            if (!ok) throw new FuzzViolation($"{where}: ended with {error.GetType().Name}: {error.Message}");
            return;
        }
        var outcome = ended.Outcome!.Value;
        bool allowed = outcome.Outcome switch
        {
            Outcome.Committed => expected is (null, false, false),
            Outcome.UserAborted => outcome.Reason == expected.Reason,
            Outcome.Aborted => !outcome.Reason.IsFinal() && c.MaxAttempts is not null,
            _ => false,
        };
        if (!allowed) throw new FuzzViolation($"{where}: ended {outcome.Outcome} ({outcome.Reason}), which its inputs do not allow");
        long total = c.Reactors * ReactDbCase.Rows * ReactDbCase.Opening;
        if (outcome.Committed && call.Function == ReactorFuzzFunction.Audit && ended.Results[0] != total)
            throw new FuzzViolation($"{where}: a committed audit saw {ended.Results[0]}, not the {total} the reactors hold");
    }
}

/// <summary>A host's logger that throws at every warning and error it is given.</summary>
public sealed class ThrowingLogger : Microsoft.Extensions.Logging.ILogger
{
    public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
    public bool IsEnabled(Microsoft.Extensions.Logging.LogLevel logLevel) => true;
    public void Log<TState>(Microsoft.Extensions.Logging.LogLevel logLevel, Microsoft.Extensions.Logging.EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
    {
        if (logLevel >= Microsoft.Extensions.Logging.LogLevel.Warning) throw new InvalidOperationException("the host's logger broke");
    }
}
