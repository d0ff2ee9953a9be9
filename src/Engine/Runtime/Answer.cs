using System.Threading.Tasks.Sources;

namespace Contend.Engine.Runtime;

/// <summary>
/// What a caller of an engine's front door awaits: the engine's thread sets it once, and the
/// caller's continuation never runs on that thread (an engine's threads run transactions only).
/// </summary>
internal abstract class Answer<T>
{
    /// <summary>The caller's task; read before the work is queued, since a thread may answer at once.</summary>
    public abstract ValueTask<T> Task { get; }

    public abstract void SetResult(T result);

    public abstract void SetException(Exception error);
}

/// <summary>
/// A reusable answer, an <see cref="IValueTaskSource{TResult}"/> given back to its engine's pool
/// once the caller has read it, so that a transaction in steady state allocates none.
/// </summary>
/// <param name="giveBack">returns the answer to its pool, after the caller's read</param>
/// <param name="frontDoor">the method whose task it is, named in the error of a second read</param>
internal sealed class PooledAnswer<T>(Action<PooledAnswer<T>> giveBack, string frontDoor) : Answer<T>, IValueTaskSource<T>
{
    ManualResetValueTaskSourceCore<T> _core = new() { RunContinuationsAsynchronously = true };

    public override ValueTask<T> Task => new(this, _core.Version);

    public override void SetResult(T result) => _core.SetResult(result);

    public override void SetException(Exception error) => _core.SetException(error);

    public T GetResult(short token)
    {
        // A second read of the same task must not give the answer back twice (two callers
        // would then share it): it fails here, before the pool is touched.
        if (token != _core.Version)
            throw new InvalidOperationException($"a ValueTask from {frontDoor} was awaited twice: await it once (or call AsTask)");
        try
        {
            return _core.GetResult(token);
        }
        finally
        {
            // Read once, as a ValueTask must be: the answer serves another caller from here on.
            _core.Reset();
            giveBack(this);
        }
    }

    public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

    public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}

/// <summary>A one-use answer through a <see cref="TaskCompletionSource{TResult}"/>: for the Coyote
/// tests (an engine's internal switch), whose scheduler controls tasks but not an
/// <see cref="IValueTaskSource{TResult}"/>'s continuations.</summary>
internal sealed class TaskAnswer<T> : Answer<T>
{
    readonly TaskCompletionSource<T> _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public override ValueTask<T> Task => new(_completion.Task);

    public override void SetResult(T result) => _completion.TrySetResult(result);

    public override void SetException(Exception error) => _completion.TrySetException(error);
}
