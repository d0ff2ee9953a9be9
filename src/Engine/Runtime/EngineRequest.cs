using System.Diagnostics;
using Contend.Engine.Diagnostics;
using Contend.Engine.Programs;

namespace Contend.Engine.Runtime;

/// <summary>
/// One transaction submitted to a <see cref="ContendEngine"/>, from its acceptance to its answer:
/// the program, a copy of its arguments, where its results go, and the caller's token. It rides
/// through a batch as its <see cref="TxnContext.Tag"/>. A pooled one is reused once its caller
/// has read its answer.
/// </summary>
internal sealed class EngineRequest : Durability.IDurableAnswer
{
    readonly Answer<TxnOutcome> _answer;
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

    /// <param name="giveBack">returns a pooled request to its engine's pool once the caller has
    /// read its answer; null: a one-use request answered through a task (the Coyote tests)</param>
    public EngineRequest(Action<EngineRequest>? giveBack)
    {
        _answer = giveBack is null ? new TaskAnswer<TxnOutcome>()
                                   : new PooledAnswer<TxnOutcome>(_ => giveBack(this), "ContendEngine.ExecuteAsync");
    }

    /// <summary>Reused after its answer is read (else one use only).</summary>
    public bool Pooled => _answer is PooledAnswer<TxnOutcome>;

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
    public ValueTask<TxnOutcome> Task => _answer.Task;

    /// <summary>A commit's outcome while it waits for its epoch to be durable.</summary>
    TxnOutcome _held;

    /// <summary>Ends the request with its outcome, copying a commit's op results first; runs no
    /// caller code on this thread. A durable engine's commit ends once its epoch is durable.</summary>
    public void Succeed(TxnContext ctx, TxnOutcome outcome)
    {
        if (Interlocked.Exchange(ref _ended, 1) != 0) return;
        if (outcome.Committed && !Results.IsEmpty) ctx.Results.AsSpan(0, Program.Ops.Length).CopyTo(Results.Span);
        if (outcome.Committed && ctx.Log is { } log)
        {
            if (ctx.CommitEpoch <= 0)
            {
                // A protocol's commit that skipped its log step: never acknowledged, and the engine fails.
                var error = new InvalidOperationException($"program {Program.Name} committed without its log step: a durable engine must not acknowledge it");
                ((Durability.IDurableAnswer)this).Fail(error);
                throw error;
            }
            _held = outcome;
            log.Hold(ctx.CommitEpoch, this);
            return;
        }
        Answer(outcome);
    }

    void Durability.IDurableAnswer.Acknowledge() => Answer(_held);

    /// <summary>A held commit's failure: its request was marked ended when it was held.</summary>
    void Durability.IDurableAnswer.Fail(Exception error) => Raise(error);

    void Answer(TxnOutcome outcome)
    {
        if (_traced) Trace(outcome, null);
        Forget();
        _answer.SetResult(outcome);
    }

    public void Fail(Exception error)
    {
        if (Interlocked.Exchange(ref _ended, 1) != 0) return;
        Raise(error);
    }

    void Raise(Exception error)
    {
        if (_traced) Trace(default, error);
        Forget();
        _answer.SetException(error);
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
}
