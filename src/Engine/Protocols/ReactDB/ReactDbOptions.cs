namespace Contend.Engine.Protocols.ReactDB;

/// <summary>The knobs of a <see cref="ReactDbEngine"/>; checked when the engine is made.</summary>
internal sealed record ReactDbOptions
{
    /// <summary>Containers a deployment may have: each root holds a database context per
    /// container, and the contexts' indices share the 8 bits a transaction id keeps for them.</summary>
    public const int MaxContainers = 16;
    const int MaxContexts = 256;

    /// <summary>Executor threads per container (the paper's transaction executor's pool).</summary>
    public int ExecutorsPerContainer { get; init; } = 1;

    /// <summary>Root transactions running at once; a call past it waits (asynchronously) for one
    /// to end. Each holds a database context per container.</summary>
    public int MaxRootsInFlight { get; init; } = 16;

    /// <summary>Attempts per root before it gives up with <see cref="Outcome.Aborted"/>; null: no limit.</summary>
    public int? MaxAttempts { get; init; }

    /// <summary>The most distinct rows a root may touch in one container (its context's read and
    /// write set); a function that touches more fails its root, naming the limit.</summary>
    public int ContextRows { get; init; } = 256;

    /// <summary>Room for the private copies of those rows, in bytes, per context.</summary>
    public int ContextBytes { get; init; } = 256 * 1024;

    /// <summary>Record every committed root's reads and writes, for the serializability checker.</summary>
    public bool RecordHistory { get; init; }

    /// <summary>Pin each executor thread to a core of its own (Linux), when there are no more
    /// executors than cores; otherwise they run unpinned.</summary>
    public bool PinExecutors { get; init; }

    /// <summary>The engine's name, in errors and thread names.</summary>
    public string Name { get; init; } = "reactdb";

    /// <summary>Throws <see cref="ArgumentException"/> naming the knob out of range for a
    /// deployment of <paramref name="containers"/> containers.</summary>
    internal void Validate(int containers)
    {
        if (ExecutorsPerContainer is < 1 or > 64)
            throw new ArgumentException($"{nameof(ExecutorsPerContainer)} = {ExecutorsPerContainer}: outside 1..64", nameof(ExecutorsPerContainer));
        if (MaxRootsInFlight < 1 || MaxRootsInFlight * containers > MaxContexts)
            throw new ArgumentException($"{nameof(MaxRootsInFlight)} = {MaxRootsInFlight}: outside 1..{MaxContexts / containers} for {containers} containers (a context per root and container, at most {MaxContexts})", nameof(MaxRootsInFlight));
        if (ContextRows is < 1 or > 1 << 16)
            throw new ArgumentException($"{nameof(ContextRows)} = {ContextRows}: outside 1..65536", nameof(ContextRows));
        if (ContextBytes is < 64 or > 64 << 20)
            throw new ArgumentException($"{nameof(ContextBytes)} = {ContextBytes}: outside 64 B..64 MiB", nameof(ContextBytes));
        if (MaxAttempts is < 1)
            throw new ArgumentException($"{nameof(MaxAttempts)} = {MaxAttempts}: at least 1", nameof(MaxAttempts));
        ArgumentException.ThrowIfNullOrEmpty(Name, nameof(Name));
    }
}
