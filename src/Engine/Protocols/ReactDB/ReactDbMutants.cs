namespace Contend.Engine.Protocols.ReactDB;

/// <summary>ReactDB's broken steps, for the Coyote twins that must catch them (test builds only:
/// <see cref="MutantFlag"/>). Each is named after the model of specs/ReactDB that breaks the same
/// step, where one does.</summary>
[Flags]
internal enum ReactDbMutants
{
    None = 0,
    /// <summary>ReactDBMutantCommitBeforeWaiting: the root commits without waiting for the
    /// sub-transactions it did not await.</summary>
    CommitBeforeWaiting = 1,
    /// <summary>ReactDBMutantEnqueueSameContainer: a call into the caller's own container is queued,
    /// not run synchronously in the caller's context.</summary>
    EnqueueSameContainer = 2,
    /// <summary>The engine's alone (the spec's logic cannot abort, D7): a sub-transaction's
    /// <see cref="ReactorCall.AbortRoot"/> ends its own logic without failing the root.</summary>
    ChildAbortNotPropagated = 4,
    /// <summary>ReactDBMutantInstallAtValidation: a container's writes are installed as soon as its
    /// reads are validated, before the next container is.</summary>
    InstallAtValidation = 8,
    /// <summary>ReactDBMutantReadIgnoresLocks: read validation passes a row another root has locked.</summary>
    ReadIgnoresLocks = 16,
    /// <summary>ReactDBPaperLinear: Algorithm 3 as written, each container locking and validating before the next.</summary>
    PaperLinear = 32,
    /// <summary>ReactDBMutantSkipRemoteValidation: only the root's container is validated.</summary>
    SkipRemoteValidation = 64,
    /// <summary>ReactDBMutantPartialWrite: the write phase installs the root's container only.</summary>
    PartialWrite = 128,
    /// <summary>The engine's alone (its front door, not the protocol): a call that waited for a
    /// slot while the engine closed queues its root anyway, on executors that have stopped.</summary>
    StartsAfterClose = 256,
    /// <summary>ReactDBMutantSharedContextThreads: a dequeued sub-transaction takes its root's
    /// context even while another thread holds it, so two threads use one context (D2, D3).</summary>
    SharedContext = 512,
    /// <summary>ReactDBMutantDoubleDequeue: a sub-transaction is left in its container's queue
    /// when a thread takes it, so a second thread runs it again.</summary>
    DoubleDequeue = 1024,
    /// <summary>ReactDBMutantFailedRootHangs: the coordinator is called only when the root's
    /// execution succeeded, so a failed root is never aborted and never answered.</summary>
    FailedRootHangs = 2048,
    /// <summary>The engine's alone (the spec's node is one flow of control): two flows of one
    /// function's logic use the root's context without its strand, and their steps interleave
    /// inside one another (<see cref="ReactorCall"/>'s Strand).</summary>
    UnguardedFlows = 4096,
}

/// <summary>The switches of <see cref="ReactDbMutants"/> as the engine reads them: each false, and
/// folded away, outside the test processes.</summary>
internal readonly struct ReactDbTwins(ReactDbMutants built)
{
    public readonly MutantFlag CommitBeforeWaiting = new(built, ReactDbMutants.CommitBeforeWaiting);
    public readonly MutantFlag EnqueueSameContainer = new(built, ReactDbMutants.EnqueueSameContainer);
    public readonly MutantFlag ChildAbortNotPropagated = new(built, ReactDbMutants.ChildAbortNotPropagated);
    public readonly MutantFlag InstallAtValidation = new(built, ReactDbMutants.InstallAtValidation);
    public readonly MutantFlag PaperLinear = new(built, ReactDbMutants.PaperLinear);
    public readonly MutantFlag SkipRemoteValidation = new(built, ReactDbMutants.SkipRemoteValidation);
    public readonly MutantFlag PartialWrite = new(built, ReactDbMutants.PartialWrite);
    public readonly MutantFlag StartsAfterClose = new(built, ReactDbMutants.StartsAfterClose);
    public readonly MutantFlag SharedContext = new(built, ReactDbMutants.SharedContext);
    public readonly MutantFlag DoubleDequeue = new(built, ReactDbMutants.DoubleDequeue);
    public readonly MutantFlag FailedRootHangs = new(built, ReactDbMutants.FailedRootHangs);
    public readonly MutantFlag UnguardedFlows = new(built, ReactDbMutants.UnguardedFlows);
}
