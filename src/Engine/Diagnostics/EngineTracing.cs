using System.Diagnostics;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;

namespace Contend.Engine.Diagnostics;

/// <summary>
/// One span per transaction on the activity source <see cref="ContendEngine.TelemetryName"/>,
/// child of the caller's activity (an ASP.NET request's, say), from the call to its outcome,
/// tagged with the engine, the protocol, the program, the outcome and the attempts.
/// </summary>
/// <remarks>The span is made when the transaction ends, on the worker that ended it, with the
/// start time and the parent the call recorded: the caller's thread moves on at once, and its
/// <see cref="Activity.Current"/> is not touched. The call records only when a listener is
/// sampling the source, so an engine nobody traces costs one check a transaction and
/// allocates nothing for it.</remarks>
internal static class EngineTracing
{
    public static readonly ActivitySource Source = new(ContendEngine.TelemetryName, typeof(EngineTracing).Assembly.GetName().Version?.ToString());

    public const string SpanName = "contend.transaction";

    /// <summary>The caller's side: whether to trace, and under which parent.</summary>
    public static bool Begin(out ActivityContext parent, out long start)
    {
        parent = default;
        start = 0;
        if (!Source.HasListeners()) return false;
        parent = Activity.Current?.Context ?? default;
        start = Stopwatch.GetTimestamp();
        return true;
    }

    /// <summary>The worker's side: the span of a transaction that ended with <paramref name="outcome"/>
    /// or failed with <paramref name="error"/>.</summary>
    public static void End(in ActivityContext parent, long start, string engine, string protocol, string program, TxnOutcome outcome, Exception? error)
    {
        var began = DateTime.UtcNow - Stopwatch.GetElapsedTime(start);
        using var span = Source.StartActivity(SpanName, ActivityKind.Internal, parent, startTime: began);
        if (span is null) return; // not sampled
        span.SetTag("contend.engine", engine);
        span.SetTag("contend.protocol", protocol);
        span.SetTag("contend.program", program);
        if (error is not null)
        {
            span.SetStatus(ActivityStatusCode.Error, error.Message);
            span.SetTag("contend.outcome", "failed");
            span.SetTag("error.type", error.GetType().FullName);
            return;
        }
        span.SetTag("contend.outcome", outcome.Outcome.ToString());
        span.SetTag("contend.attempts", outcome.Attempts);
        if (outcome.Reason != AbortReason.None) span.SetTag("contend.reason", outcome.Reason.ToString());
    }
}
