namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// The steps of the failure-free protocol, each named after the action of
/// <c>specs/Chiller/Chiller.tla</c> it implements; a run counts them and can hand each to an
/// observer as a trace event (transaction, partition). The recovery actions (Crash through
/// RecoverCoordinator, and CoordLearnParticipantFailed) are not here: the engine does not
/// recover from failures yet.
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
}
