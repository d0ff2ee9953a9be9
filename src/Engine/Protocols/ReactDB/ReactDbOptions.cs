namespace Contend.Engine.Protocols.ReactDB;

/// <summary>How a <see cref="ReactDbEngine"/> is made. Checked when the engine is constructed;
/// an error names the option. Settable, so that a host binds it from configuration; the engine
/// keeps a copy of what it was made with.</summary>
public sealed record ReactDbOptions
{
    /// <summary>Containers a deployment may have: each root holds a database context per
    /// container, and the contexts' indices share the 8 bits a transaction id keeps for them.</summary>
    public const int MaxContainers = 16;

    /// <summary>Database contexts an engine may hold: <see cref="MaxRootsInFlight"/> times the
    /// deployment's containers, at most.</summary>
    public const int MaxContexts = 256;

    /// <summary>Executor threads per container (the paper's transaction executor's pool), 1..64.
    /// The paper's sync deployment is one container with N; async, N containers with one.</summary>
    public int ExecutorsPerContainer { get; set; } = 1;

    /// <summary>Root transactions running at once; a call past it waits (asynchronously) for one
    /// to end. Each holds a database context per container, so times the containers it is at most
    /// <see cref="MaxContexts"/>.</summary>
    public int MaxRootsInFlight { get; set; } = 16;

    /// <summary>Attempts per root before it gives up with <see cref="Outcome.Aborted"/>; null: no limit.</summary>
    public int? MaxAttempts { get; set; }

    /// <summary>The most distinct rows a root may touch in one container (its context's read and
    /// write set), 1..65536; a function that touches more fails its root, naming the limit.</summary>
    public int ContextRows { get; set; } = 256;

    /// <summary>Room for the private copies of those rows, in bytes, per context (64 B..64 MiB).</summary>
    public int ContextBytes { get; set; } = 256 * 1024;

    /// <summary>Record every committed root's reads and writes, for <see cref="ReactDbEngine.History"/>.</summary>
    public bool RecordHistory { get; set; }

    /// <summary>Pin each executor thread to a core of its own (Linux), when there are no more
    /// executors than cores; otherwise they run unpinned.</summary>
    public bool PinExecutors { get; set; }

    /// <summary>The engine's name: in errors, logs and thread names, and the workload tag of its metrics.</summary>
    public string Name { get; set; } = "reactdb";

    /// <summary>Throws <see cref="ArgumentException"/> naming the first option out of range, as the
    /// engine's constructor does (which also checks <see cref="MaxRootsInFlight"/> against the
    /// deployment's containers).</summary>
    public void Validate() => Validate(containers: 1);

    /// <summary>As <see cref="Validate()"/>, for a deployment of <paramref name="containers"/> containers.</summary>
    internal void Validate(int containers)
    {
        if (ExecutorsPerContainer is < 1 or > 64)
            throw new ArgumentOutOfRangeException(nameof(ExecutorsPerContainer), ExecutorsPerContainer, $"{nameof(ReactDbOptions)}.{nameof(ExecutorsPerContainer)} = {ExecutorsPerContainer}: outside 1..64");
        if (MaxRootsInFlight < 1 || MaxRootsInFlight * containers > MaxContexts)
            throw new ArgumentOutOfRangeException(nameof(MaxRootsInFlight), MaxRootsInFlight, $"{nameof(ReactDbOptions)}.{nameof(MaxRootsInFlight)} = {MaxRootsInFlight}: outside 1..{MaxContexts / containers} for {containers} containers (a context per root and container, at most {MaxContexts})");
        if (ContextRows is < 1 or > 1 << 16)
            throw new ArgumentOutOfRangeException(nameof(ContextRows), ContextRows, $"{nameof(ReactDbOptions)}.{nameof(ContextRows)} = {ContextRows}: outside 1..65536");
        if (ContextBytes is < 64 or > 64 << 20)
            throw new ArgumentOutOfRangeException(nameof(ContextBytes), ContextBytes, $"{nameof(ReactDbOptions)}.{nameof(ContextBytes)} = {ContextBytes}: outside 64 B..64 MiB");
        if (MaxAttempts is < 1)
            throw new ArgumentOutOfRangeException(nameof(MaxAttempts), MaxAttempts, $"{nameof(ReactDbOptions)}.{nameof(MaxAttempts)} = {MaxAttempts}: at least 1, or null for no limit");
        if (string.IsNullOrEmpty(Name))
            throw new ArgumentException($"{nameof(ReactDbOptions)}.{nameof(Name)}: the engine's name must not be empty", nameof(Name));
    }
}
