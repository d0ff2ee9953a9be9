namespace Contend.Engine.Protocols.Chiller;

/// <summary>Deliberately broken steps of Chiller, each the code's form of a mutant of
/// <c>specs/Chiller/Chiller.tla</c>, for the tests that must catch them (internal, test builds
/// only: <see cref="MutantFlag"/>).</summary>
[Flags]
internal enum ChillerMutants
{
    None = 0,
    /// <summary>An outer partition releases each lock as soon as its op has run in step 3, before
    /// the inner region commits: 2PL's shrinking phase begun before the transaction's serialization
    /// point (the merged history is not serializable). The code's form of the outer locks the spec
    /// holds from CoordLockOuter to OuterCommit, which its serialization-point argument (D8) rests on.</summary>
    OuterReleasesEarly = 1,
    /// <summary>ChillerMutantOuterUnilateralAbort: an outer partition that denies a lock also
    /// aborts the other attempts it holds locks for, as a 2PC participant may before it votes;
    /// the inner region of one may have committed already (atomicity fails).</summary>
    OuterAbortsUnilaterally = 2,
    /// <summary>ChillerMutantWaitForCutOffReplica: a host keeps waiting for the acknowledgements of a
    /// replica that recovery removed from the configuration (its transactions never end).</summary>
    HostWaitsForRemovedReplica = 4,
    /// <summary>ChillerMutantCommitBeforeAcks: the inner host commits as soon as it has sent its
    /// entry, before any replica has it; a crash then loses a transaction it committed (atomicity
    /// and durability fail).</summary>
    HostCommitsOnSend = 8,
    /// <summary>ChillerMutantDecideBeforeGather: the candidate of a recovery decides and takes over
    /// from its own log without gathering the other survivors' (D9); an entry only another survivor
    /// received is then lost on one copy and kept on another.</summary>
    DecideBeforeGather = 16,
    /// <summary>Takeover by an outer participant: a partition holding a share of a transaction whose
    /// coordinator is cut off decides it alone (aborts and releases) instead of asking the node
    /// Section 5.2 names; the inner host may have committed it (atomicity fails). The code's form
    /// of the spec's MutantOuterRelease (ChillerMutantOuterUnilateralAbort) after a coordinator's
    /// crash, which RecoverCoordinator's D7 rules out.</summary>
    OuterParticipantTakesOver = 32,
    /// <summary>ChillerMutantServeBeforeCatchUp, and with it what D4's kept locks stand for: the
    /// copy that takes over serves as soon as it has gathered, and applies the entries it gathered
    /// but could not apply in order only 0.5 ms later; until then it grants locks on rows whose committed updates it lacks, and the
    /// late apply overwrites what it served since (not serializable, replicas disagree).</summary>
    ServesBeforeCatchUp = 64,
    /// <summary>The engine's form of ChillerMutantNoticeToPartition (D2): a coordinator slot takes
    /// an inner region's notification for any attempt of its own as for the one under way, so a
    /// late or repeated notice of an earlier attempt (a host left without replicas notifies all
    /// it committed again) commits an attempt whose inner region never ran (atomicity fails).</summary>
    CoordinatorTakesUnaddressedNotice = 128,
}
