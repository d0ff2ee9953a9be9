namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// Every action a node takes in <c>specs/Chiller/Chiller.tla</c> (the disjuncts of its
/// <c>Protocol</c>), by the same name: the catalogue of crash points. A run counts the steps it
/// takes and hands each to an observer as a trace event (transaction, partition, node), and a
/// crash plan stops the node that takes a given step (<see cref="ChillerCrash"/>).
/// <see cref="ChillerCrashPoints"/> says which the engine takes and which crashes it recovers.
/// </summary>
internal enum ChillerStep
{
    /// <summary>Section 3.3 step 3: an outer record locked (and read) NO_WAIT.</summary>
    CoordLockOuter,
    /// <summary>Step 3: an outer lock denied; the transaction aborts.</summary>
    CoordLockDenied,
    /// <summary>Step 4: the coordinator hands the inner region to its host.</summary>
    CoordDelegate,
    /// <summary>Step 4: the host locks, runs and checks the inner region and sends its log entry.</summary>
    InnerExecute,
    /// <summary>Step 4: a lock held or a check failed at the host; the transaction aborts.</summary>
    InnerReject,
    /// <summary>Section 5.1: a replica holds the entry (and acknowledges it).</summary>
    ReplicaReceive,
    /// <summary>Section 5.1: a replica applies the entry in sequence order (and notifies the coordinator).</summary>
    ReplicaApply,
    /// <summary>Every replica acknowledged: the host installs and releases the inner locks.</summary>
    InnerCommit,
    /// <summary>Step 5: the coordinator has heard from every copy (D6).</summary>
    CoordLearnCommit,
    /// <summary>Step 5: the host rejected the inner region.</summary>
    CoordLearnAbort,
    /// <summary>Step 5: an outer partition runs its deferred bodies, ships its log and commits.</summary>
    OuterCommit,
    /// <summary>Step 5: an outer partition releases what it locked.</summary>
    OuterRelease,
    /// <summary>Every outer partition has answered; the transaction is over.</summary>
    CoordFinish,
    /// <summary>Section 5.2: the cluster manager removes a crashed replica from its partition's
    /// configuration (closing its channels); hosts stop waiting for its acknowledgements.</summary>
    RecoverReplica,
    /// <summary>Section 5.2, first phase for a crashed primary or coordinator: its channels closed.</summary>
    CloseChannels,
    /// <summary>Section 5.2: survivors hand each other the crashed host's pending entries.</summary>
    GatherPending,
    /// <summary>Section 5.2: the crashed host's pending transactions decided from the survivors.</summary>
    DecidePending,
    /// <summary>Section 5.2: a survivor becomes the partition's primary.</summary>
    ElectPrimary,
    /// <summary>Section 5.2: the new primary commits a transaction the crashed host replicated.</summary>
    RecoveryCommit,
    /// <summary>Section 5.2: a participant failed before delegation; the transaction aborts.</summary>
    CoordLearnParticipantFailed,
    /// <summary>Section 5.2: the node the paper names takes over a crashed coordinator's transaction.</summary>
    RecoverCoordinator,
}

/// <summary>A row a step read: its key and the version it saw (the committing attempt's id, 0 if loaded).</summary>
internal readonly record struct ChillerRead(int Table, long Key, long Version);

/// <summary>One step as an observer sees it: the action (null when the node stopped: the spec's
/// Crash), its transaction attempt (0 for the cluster manager's and recovery's own), the
/// partition it is about (-1 for a node that held no copy), the node that took it, the virtual
/// time, and, for CoordLockOuter and InnerExecute, the rows read with the versions they saw.</summary>
internal readonly record struct ChillerEvent(ChillerStep? Step, long Txn, int Partition, int Node, TimeSpan At, IReadOnlyList<ChillerRead> Reads);

/// <summary>Which spec actions the engine takes, and after which of them a crash is recovered.</summary>
internal static class ChillerCrashPoints
{
    /// <summary>The steps of recovery: taken only when a node has failed.</summary>
    public static IReadOnlySet<ChillerStep> Recovery { get; } = new HashSet<ChillerStep>
    {
        ChillerStep.RecoverReplica, ChillerStep.CloseChannels, ChillerStep.GatherPending, ChillerStep.DecidePending,
        ChillerStep.ElectPrimary, ChillerStep.RecoveryCommit, ChillerStep.CoordLearnParticipantFailed, ChillerStep.RecoverCoordinator,
    };

    /// <summary>Steps after which the node that takes them may stop, and is recovered: a primary's
    /// (as outer participant and inner host; CoordLockOuter and CoordLockDenied are the outer
    /// participant's grant and denial), a replica's, a recovering copy's (its gathering, its
    /// decision, its election and what it then commits), and a coordinator's (its own steps, and
    /// RecoverCoordinator, taken by the primary that takes a crashed coordinator over). The two
    /// left are the cluster manager's (CloseChannels, RecoverReplica: Zookeeper's, in the paper,
    /// which does not fail).</summary>
    public static IReadOnlySet<ChillerStep> Recovered { get; } = new HashSet<ChillerStep>
    {
        ChillerStep.CoordLockOuter, ChillerStep.CoordLockDenied, ChillerStep.InnerExecute, ChillerStep.InnerReject,
        ChillerStep.InnerCommit, ChillerStep.OuterCommit, ChillerStep.OuterRelease,
        ChillerStep.ReplicaReceive, ChillerStep.ReplicaApply,
        ChillerStep.GatherPending, ChillerStep.DecidePending, ChillerStep.ElectPrimary, ChillerStep.RecoveryCommit,
        ChillerStep.CoordDelegate, ChillerStep.CoordLearnCommit, ChillerStep.CoordLearnAbort, ChillerStep.CoordLearnParticipantFailed,
        ChillerStep.CoordFinish, ChillerStep.RecoverCoordinator,
    };
}

/// <summary>A crash to inject: the node that takes <paramref name="After"/> for the
/// <paramref name="Occurrence"/>-th time (counted from 1 over the cluster, or over
/// <paramref name="Node"/>'s own steps when given, from virtual time <paramref name="NotBefore"/>
/// on) stops right after it: the step's changes made and its messages sent, nothing after it
/// done (a step is counted once it is complete; a coordinator's CoordLearnCommit and
/// CoordLearnAbort are counted before the outcomes go out, which are the outer partitions' steps).</summary>
internal sealed record ChillerCrash(ChillerStep After, int Occurrence, int? Node = null, TimeSpan NotBefore = default);
