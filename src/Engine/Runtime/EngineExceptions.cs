using Contend.Engine.Programs;

namespace Contend.Engine.Runtime;

/// <summary>The base of what <see cref="ContendEngine"/> throws about its own state or a
/// transaction's failure (bad arguments are <see cref="ArgumentException"/>s; a caller's
/// cancellation is an <see cref="OperationCanceledException"/>).</summary>
public abstract class ContendException : Exception
{
    private protected ContendException(string message, Exception? inner = null) : base(message, inner)
    {
    }

    /// <summary>True when the same call may succeed if made again later (on this engine or,
    /// for a closed one, another).</summary>
    public abstract bool Retryable { get; }
}

/// <summary>The request queue was full and the engine is configured to refuse
/// (<see cref="WhenQueueFull.Refuse"/>): nothing ran; try again after a back-off.</summary>
public sealed class EngineQueueFullException : ContendException
{
    internal EngineQueueFullException(int capacity)
        : base($"the engine's request queue is full ({capacity} waiting): nothing ran; retry after a back-off, or configure WhenQueueFull.Wait")
    {
    }

    /// <inheritdoc/>
    public override bool Retryable => true;
}

/// <summary>The engine is closing or closed (<see cref="ContendEngine.DisposeAsync"/>): the
/// transaction did not run.</summary>
public sealed class EngineClosedException : ContendException
{
    internal EngineClosedException(string name)
        : base($"engine '{name}' is closed and takes no more transactions: the transaction did not run")
    {
    }

    /// <inheritdoc/>
    public override bool Retryable => false;
}

/// <summary>The engine failed (a worker's thread died: under Strife, a body threw in a
/// clustered attempt of a program built with <see cref="ProgramBuilder.BodiesNeverAbort"/>,
/// which writes in place without images and cannot be undone) before this transaction ended,
/// and takes no more. The transaction did not commit; the rows that attempt wrote keep what
/// was written.</summary>
public sealed class EngineFailedException : ContendException
{
    internal EngineFailedException(string name, Exception cause)
        : base($"engine '{name}' failed and takes no more transactions: {cause.Message}", cause)
    {
    }

    /// <inheritdoc/>
    public override bool Retryable => false;
}

/// <summary>The transaction's program failed: one of its bodies or key functions threw (a bug in
/// the program, the exception inner). Its attempt was undone and its locks released; the
/// engine goes on, and under a batch protocol so does the batch. The same call fails the same way.</summary>
public sealed class TransactionFailedException : ContendException
{
    internal TransactionFailedException(TxnProgram program, Exception cause)
        : base($"program {program.Name} threw: {cause.Message}; its attempt was undone", cause)
    {
        Program = program.Name;
    }

    /// <summary>The program's name.</summary>
    public string Program { get; }

    /// <inheritdoc/>
    public override bool Retryable => false;
}

/// <summary>A ReactDB root whose call chain came back into a container where one of the chain's
/// own callers holds the root's context: every retry would meet the same conservative abort, so
/// the root ends here, undone, with the chain named. A bug of the functions or the deployment (put
/// the reactors of the chain in one container, or call the first one's reactor from outside
/// the chain); the same call fails the same way.</summary>
public sealed class ReactorCallCycleException : ContendException
{
    internal ReactorCallCycleException(string program, string chain)
        : base($"root {program}: its call chain {chain} comes back into the container whose context its caller holds; every attempt would abort there, so the root ended undone")
    {
        Program = program;
        Chain = chain;
    }

    /// <summary>The root's function.</summary>
    public string Program { get; }

    /// <summary>The chain of calls, from the holder of the context to the call that met it.</summary>
    public string Chain { get; }

    /// <inheritdoc/>
    public override bool Retryable => false;
}
