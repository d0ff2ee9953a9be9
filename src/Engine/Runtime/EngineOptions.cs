using Contend.Engine.Protocols;

namespace Contend.Engine.Runtime;

/// <summary>What <see cref="ContendEngine.ExecuteAsync(Programs.TxnProgram, ReadOnlySpan{long}, CancellationToken)"/>
/// does when the engine's request queue is full.</summary>
public enum WhenQueueFull
{
    /// <summary>The call returns at once and its task waits for room (no thread blocks); its token cancels the wait.</summary>
    Wait,
    /// <summary>The call's task faults at once with <see cref="EngineQueueFullException"/> (the call
    /// itself does not throw): the caller sheds the load.</summary>
    Refuse,
}

/// <summary>What a <see cref="ContendEngine"/> keeps when its process dies.</summary>
public enum DurabilityMode
{
    /// <summary>Nothing: the tables live in memory only, and a restart starts from what is loaded.
    /// A call's task completes when its transaction commits.</summary>
    None,
    /// <summary>Every commit acknowledged: each committed transaction's writes go to a log in
    /// <see cref="EngineOptions.DataDirectory"/>, synced once an epoch
    /// (<see cref="EngineOptions.EpochLength"/>), and a call's task completes only once its
    /// epoch is durable. An engine opened on the directory again recovers them. What a crash
    /// loses is only what no caller was told had committed.</summary>
    Durable,
}

/// <summary>How a <see cref="ContendEngine"/> is made. Checked when the engine is constructed;
/// an error names the option. Settable, so that a host binds it from configuration
/// (<c>IOptions</c>); the engine keeps a copy of what it was made with, and later changes to the
/// caller's instance do nothing to it.</summary>
public sealed record EngineOptions
{
    /// <summary>The protocol's name (<see cref="ProtocolRegistry.Names"/>), per-transaction or batch, in any case.</summary>
    public string Protocol { get; set; } = "StealDB";

    /// <summary>The engine's worker threads, 1..255: the protocol's worker slots. More than the
    /// machine's cores slows the queue-lock protocols by orders of magnitude, whose waiters hand
    /// locks along a queue (a descheduled one stalls everyone behind it).</summary>
    public int Workers { get; set; } = Math.Min(255, Environment.ProcessorCount);

    /// <summary>The protocol's knobs (its <see cref="ProtocolDescriptor.OptionsType"/>); null: its defaults.</summary>
    public ProtocolOptions? ProtocolOptions { get; set; }

    /// <summary>Transactions accepted and not yet taken by a worker, at most (at least 1).</summary>
    public int QueueCapacity { get; set; } = 1024;

    /// <summary>What a submission meets when <see cref="QueueCapacity"/> are waiting.</summary>
    public WhenQueueFull WhenQueueFull { get; set; } = WhenQueueFull.Wait;

    /// <summary>Pin each worker to a core of its own among those the process may run on (Linux),
    /// taken in turn across the process's engines. Off by default: an engine embedded in a
    /// service shares its cores with the service's threads, and a pinned worker cannot move off
    /// a core another thread is busy on. Turn it on where the engine's workers are the machine's.</summary>
    public bool Pin { get; set; }

    /// <summary>Record every commit's reads and writes, for <see cref="ContendEngine.History"/>.</summary>
    public bool RecordHistory { get; set; }

    /// <summary>What the meter's series are tagged with as their workload.</summary>
    public string Name { get; set; } = "embedded";

    /// <summary>The longest a transaction may take from its submission; null: no limit. Past it,
    /// a per-transaction protocol's transaction gives up wherever it is, queued, in a lock wait
    /// or before a retry, and ends <see cref="Outcome.Aborted"/> with
    /// <see cref="AbortReason.Deadline"/>, its attempt undone. Under the queue locks (Mcs,
    /// StealDB) the waiter gives up at once, but its node stays queued until the lock ahead of
    /// it is released, and the answer comes then. Under a batch protocol it does not apply: a
    /// batch draws the transaction from the queue and runs it to its end.</summary>
    public TimeSpan? Deadline { get; set; }

    /// <summary>The most attempts a per-transaction protocol's transaction makes, the conflict
    /// aborts retried included; null: no limit. When the last one loses a conflict, the
    /// transaction ends <see cref="Outcome.Aborted"/> with that conflict's reason.</summary>
    public int? MaxAttempts { get; set; }

    /// <summary>What a crash keeps (<see cref="DurabilityMode.None"/>: nothing).</summary>
    public DurabilityMode Durability { get; set; } = DurabilityMode.None;

    /// <summary>Where a durable engine keeps its log and checkpoint (created if missing; one engine
    /// at a time). Opening an engine on a directory that has them recovers the tables: a row of
    /// the checkpoint or the log takes the place of the loaded row of its key, and a loaded row
    /// they do not have stays as loaded. Required with <see cref="DurabilityMode.Durable"/>.</summary>
    public string? DataDirectory { get; set; }

    /// <summary>How often a durable engine syncs its log: a commit is acknowledged at the end of
    /// the epoch it committed in, so this is about half a call's added latency, and a caller
    /// that waits for each call before the next makes at most one commit per epoch. 1 ms to 1 s;
    /// 20 ms by default, within the 10-40 ms SiloR ran with.</summary>
    public TimeSpan EpochLength { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>A durable engine's logger threads, each writing its own file for its share of the
    /// workers; null: one per 8 workers.</summary>
    public int? Loggers { get; set; }

    /// <summary>Where the files go instead of <see cref="DataDirectory"/>: the tests' simulated disk.</summary>
    internal Contend.Engine.Durability.ILogStorage? Storage { get; init; }

    /// <summary>Throws <see cref="ArgumentException"/> naming the first option out of range, as
    /// the engine's constructor does (a host checks at start-up with it).</summary>
    public void Validate()
    {
        CheckRanges();
        // The registry keeps a protocol that is not serializable, as the history checker's
        // positive control; the tests run it through the engine's internal constructor, a service never.
        if (ProtocolRegistry.TryFind(Protocol, out var d) && !d.Serializable)
            throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(Protocol)}: {d.Name} is the history checker's control and not serializable; an engine serves {string.Join(", ", ProtocolRegistry.Names)}", nameof(Protocol));
    }

    /// <summary>Throws <see cref="ArgumentException"/> naming the first option out of range.</summary>
    internal void CheckRanges()
    {
        if (string.IsNullOrWhiteSpace(Protocol))
            throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(Protocol)}: a protocol name is required ({string.Join(", ", ProtocolRegistry.Names)})", nameof(Protocol));
        if (!ProtocolRegistry.TryFind(Protocol, out var descriptor))
            throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(Protocol)}: {ProtocolRegistry.Unknown(Protocol)}", nameof(Protocol));
        if (Workers is < 1 or > 255)
            throw new ArgumentOutOfRangeException(nameof(Workers), Workers, $"{nameof(EngineOptions)}.{nameof(Workers)} {Workers}: must be 1..255");
        if (QueueCapacity < 1)
            throw new ArgumentOutOfRangeException(nameof(QueueCapacity), QueueCapacity, $"{nameof(EngineOptions)}.{nameof(QueueCapacity)} {QueueCapacity}: must be at least 1");
        if (!Enum.IsDefined(WhenQueueFull))
            throw new ArgumentOutOfRangeException(nameof(WhenQueueFull), WhenQueueFull, $"{nameof(EngineOptions)}.{nameof(WhenQueueFull)} {WhenQueueFull}: Wait or Refuse");
        if (string.IsNullOrEmpty(Name))
            throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(Name)}: the meter's workload tag must not be empty", nameof(Name));
        if (Deadline is { } deadline && deadline <= TimeSpan.Zero)
            throw new ArgumentOutOfRangeException(nameof(Deadline), deadline, $"{nameof(EngineOptions)}.{nameof(Deadline)} {deadline}: must be positive, or null for none");
        if (MaxAttempts is < 1)
            throw new ArgumentOutOfRangeException(nameof(MaxAttempts), MaxAttempts, $"{nameof(EngineOptions)}.{nameof(MaxAttempts)} {MaxAttempts}: must be at least 1, or null for no limit");
        if (!Enum.IsDefined(Durability))
            throw new ArgumentOutOfRangeException(nameof(Durability), Durability, $"{nameof(EngineOptions)}.{nameof(Durability)} {Durability}: None or Durable");
        if (Durability == DurabilityMode.Durable && string.IsNullOrWhiteSpace(DataDirectory) && Storage is null)
            throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(DataDirectory)}: a durable engine needs a directory for its log", nameof(DataDirectory));
        if (Durability == DurabilityMode.None && DataDirectory is not null)
            throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(DataDirectory)}: set, but {nameof(Durability)} is None (nothing would be written there); set {nameof(Durability)} to Durable", nameof(DataDirectory));
        if (EpochLength < TimeSpan.FromMilliseconds(1) || EpochLength > TimeSpan.FromSeconds(1))
            throw new ArgumentOutOfRangeException(nameof(EpochLength), EpochLength, $"{nameof(EngineOptions)}.{nameof(EpochLength)} {EpochLength}: must be 1 ms to 1 s");
        if (Loggers is < 1 || Loggers > Workers)
            throw new ArgumentOutOfRangeException(nameof(Loggers), Loggers, $"{nameof(EngineOptions)}.{nameof(Loggers)} {Loggers}: must be 1..{nameof(Workers)} ({Workers}), or null for one per 8 workers");
        if (ProtocolOptions is { } knobs)
        {
            if (knobs.GetType() != descriptor.OptionsType)
                throw new ArgumentException($"{nameof(EngineOptions)}.{nameof(ProtocolOptions)}: protocol {descriptor.Name} takes {descriptor.OptionsType?.Name ?? "no options"}; the setup has {knobs.GetType().Name}", nameof(ProtocolOptions));
            knobs.Validate(Workers); // names the knob
        }
    }
}
