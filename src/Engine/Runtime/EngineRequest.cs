using System.Diagnostics;
using System.Threading.Tasks.Sources;
using Contend.Engine.Diagnostics;
using Contend.Engine.Programs;

namespace Contend.Engine.Runtime;

/// <summary>
/// One transaction submitted to a <see cref="ContendEngine"/>, from its acceptance to its answer:
/// the program, a copy of its arguments, where its results go, and the caller's token. It rides
/// through a batch as its <see cref="TxnContext.Tag"/>.
/// </summary>
internal abstract class EngineRequest
{
    public TxnProgram Program = null!;
    /// <summary>Grown to the largest argument count seen, and reused.</summary>
    public long[] Args = [];
    public Memory<long> Results;
    public CancellationToken Cancel;
    /// <summary>When it gives up, a Stopwatch timestamp; long.MaxValue: never (<see cref="EngineOptions.Deadline"/>).</summary>
    public long Deadline;
    /// <summary>1 once answered: a failing engine may try to fail a request already answered.</summary>
    int _ended;
    /// <summary>The engine that answers it, for its span.</summary>
    ContendEngine? _engine;
    /// <summary>Set when a listener samples the engine's spans (<see cref="EngineTracing"/>).</summary>
    bool _traced;
    ActivityContext _traceParent;
    long _traceStart;

    public void Fill(ContendEngine engine, TxnProgram program, ReadOnlySpan<long> args, Memory<long> results, CancellationToken cancel, long deadline)
    {
        Deadline = deadline;
        _engine = engine;
        _traced = EngineTracing.Begin(out _traceParent, out _traceStart);
        Program = program;
        if (Args.Length < args.Length) Args = new long[args.Length];
        args.CopyTo(Args);
        Results = results;
        Cancel = cancel;
        _ended = 0;
    }

    /// <summary>The caller's task.</summary>
    public abstract ValueTask<TxnOutcome> Task { get; }

    /// <summary>Ends the request with its outcome, copying a commit's op results first; runs no
    /// caller code on this thread.</summary>
    public void Succeed(TxnContext ctx, TxnOutcome outcome)
    {
        if (Interlocked.Exchange(ref _ended, 1) != 0) return;
        if (outcome.Committed && !Results.IsEmpty) ctx.Results.AsSpan(0, Program.Ops.Length).CopyTo(Results.Span);
        if (_traced) Trace(outcome, null);
        Forget();
        SetResult(outcome);
    }

    public void Fail(Exception error)
    {
        if (Interlocked.Exchange(ref _ended, 1) != 0) return;
        if (_traced) Trace(default, error);
        Forget();
        SetException(error);
    }

    void Trace(TxnOutcome outcome, Exception? error) =>
        EngineTracing.End(_traceParent, _traceStart, _engine!.Options.Name, _engine.Options.Protocol, Program.Name, outcome, error);

    /// <summary>Drops the references a pooled request would otherwise keep alive.</summary>
    void Forget()
    {
        _engine = null;
        _traced = false;
        Program = null!;
        Results = default;
        Cancel = default;
    }

    protected abstract void SetResult(TxnOutcome outcome);
    protected abstract void SetException(Exception error);
}

/// <summary>
/// The request of the async path: a reusable <see cref="IValueTaskSource{TResult}"/>, back in
/// its engine's pool once the caller has read its result, so that a transaction in steady state
/// allocates nothing. Continuations run on the thread pool, never on a worker.
/// </summary>
internal sealed class PooledRequest(Action<PooledRequest> giveBack) : EngineRequest, IValueTaskSource<TxnOutcome>
{
    ManualResetValueTaskSourceCore<TxnOutcome> _core = new() { RunContinuationsAsynchronously = true };

    public override ValueTask<TxnOutcome> Task => new(this, _core.Version);

    protected override void SetResult(TxnOutcome outcome) => _core.SetResult(outcome);
    protected override void SetException(Exception error) => _core.SetException(error);

    public TxnOutcome GetResult(short token)
    {
        // A second read of the same task must not give the request back twice (two callers
        // would then share it): it fails here, before the pool is touched.
        if (token != _core.Version)
            throw new InvalidOperationException("a ValueTask from ContendEngine.ExecuteAsync was awaited twice: await it once (or call AsTask)");
        try
        {
            return _core.GetResult(token);
        }
        finally
        {
            // Read once, as a ValueTask must be: the request serves another caller from here on.
            _core.Reset();
            giveBack(this);
        }
    }

    public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

    public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}

/// <summary>A request answered through a <see cref="TaskCompletionSource{TResult}"/>: for the
/// Coyote tests (<see cref="ContendEngine"/>'s internal switch), whose scheduler controls
/// tasks but not an <see cref="IValueTaskSource{TResult}"/>'s continuations.</summary>
internal sealed class TaskRequest : EngineRequest
{
    readonly TaskCompletionSource<TxnOutcome> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public override ValueTask<TxnOutcome> Task => new(_completion.Task);

    protected override void SetResult(TxnOutcome outcome) => _completion.TrySetResult(outcome);
    protected override void SetException(Exception error) => _completion.TrySetException(error);
}
