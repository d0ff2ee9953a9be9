using Contend.Engine.Protocols.Chiller;
using Microsoft.Coyote.Specifications;
using Monitor = Microsoft.Coyote.Specifications.Monitor;

namespace Contend.Coyote.Chiller;

/// <summary>
/// Chiller's two liveness properties (proofs/Chiller.md section 5) as Coyote monitors, fed every
/// step the cluster takes through <see cref="ChillerOptions.Observer"/>. A monitor is hot while
/// something is owed; Coyote reports it still hot when an iteration ends (the run has drained by
/// then, so what is owed will never come).
/// </summary>
internal static class ChillerLiveness
{
    static ChillerMonitors s_registered;

    /// <summary>Registers the monitors for this iteration; call first in a test body. A twin that
    /// shows one monitor failing on its own, or that another check must catch, registers fewer.</summary>
    public static void Register(ChillerMonitors which = ChillerMonitors.Both)
    {
        s_registered = which;
        if (which.HasFlag(ChillerMonitors.InnerCommitReaches)) Specification.RegisterMonitor<InnerCommitReachesOuterPartitions>();
        if (which.HasFlag(ChillerMonitors.PendingDecided)) Specification.RegisterMonitor<PendingTransactionsDecided>();
    }

    /// <summary>The observer to give the cluster: hands each step to the monitors.</summary>
    public static void Observe(ChillerEvent step)
    {
        var e = new ChillerStepEvent(step);
        if (s_registered.HasFlag(ChillerMonitors.InnerCommitReaches) && step.Step is not null) Specification.Monitor<InnerCommitReachesOuterPartitions>(e);
        if (s_registered.HasFlag(ChillerMonitors.PendingDecided)) Specification.Monitor<PendingTransactionsDecided>(e);
    }
}

/// <summary>Which of <see cref="ChillerLiveness"/>'s monitors an iteration registers.</summary>
[Flags]
internal enum ChillerMonitors
{
    None = 0,
    /// <summary><see cref="InnerCommitReachesOuterPartitions"/></summary>
    InnerCommitReaches = 1,
    /// <summary><see cref="PendingTransactionsDecided"/></summary>
    PendingDecided = 2,
    Both = InnerCommitReaches | PendingDecided,
}

internal sealed class ChillerStepEvent(ChillerEvent step) : Monitor.Event
{
    public ChillerEvent Step { get; } = step;
}

/// <summary>
/// Every transaction whose inner region committed (InnerCommit, or RecoveryCommit on a copy that
/// took over) is eventually committed at every outer partition that granted it a lock
/// (OuterCommit there, by whichever copy serves it then). An outer commit may come before the
/// host's own InnerCommit: the coordinator learns the outcome from the replicas (D6).
/// </summary>
internal sealed class InnerCommitReachesOuterPartitions : Monitor
{
    readonly Dictionary<long, HashSet<int>> _granted = new();
    readonly Dictionary<long, HashSet<int>> _outerCommitted = new();
    readonly HashSet<long> _innerCommitted = new();
    /// <summary>Inner-committed attempts and the outer partitions yet to commit them.</summary>
    readonly Dictionary<long, HashSet<int>> _owed = new();

    [Start, Cold, OnEventDoAction(typeof(ChillerStepEvent), nameof(Observe))]
    sealed class Settled : State;

    [Hot, OnEventDoAction(typeof(ChillerStepEvent), nameof(Observe))]
    sealed class Owing : State;

    void Observe(Event e)
    {
        var s = ((ChillerStepEvent)e).Step;
        switch (s.Step)
        {
            case ChillerStep.CoordLockOuter:
                Of(_granted, s.Txn).Add(s.Partition);
                break;
            case ChillerStep.OuterCommit:
                Of(_outerCommitted, s.Txn).Add(s.Partition);
                if (_owed.TryGetValue(s.Txn, out var owed) && owed.Remove(s.Partition) && owed.Count == 0) _owed.Remove(s.Txn);
                break;
            case ChillerStep.InnerCommit or ChillerStep.RecoveryCommit when _innerCommitted.Add(s.Txn):
                var left = new HashSet<int>(_granted.GetValueOrDefault(s.Txn) ?? []);
                left.ExceptWith(_outerCommitted.GetValueOrDefault(s.Txn) ?? []);
                if (left.Count > 0) _owed[s.Txn] = left;
                break;
            default:
                return;
        }
        if (_owed.Count > 0) RaiseGotoStateEvent<Owing>();
        else RaiseGotoStateEvent<Settled>();
    }

    static HashSet<int> Of(Dictionary<long, HashSet<int>> map, long txn) =>
        map.TryGetValue(txn, out var set) ? set : map[txn] = new HashSet<int>();
}

/// <summary>
/// Every transaction attempt that took a step is eventually decided (Chiller.tla's
/// TerminationProp, the paper's second liveness claim). Decided: its coordinator, or the node
/// that took over from a crashed one, decides (CoordLockDenied, CoordLearnParticipantFailed,
/// CoordLearnCommit, CoordLearnAbort, RecoverCoordinator); or its inner host decides, which is
/// Chiller's commit point (InnerCommit, InnerReject); or, its inner host crashed, recovery
/// decides every pending inner region of that partition (DecidePending, which the engine's new
/// primary takes with ElectPrimary, then RecoveryCommit for those a survivor received). An
/// attempt no participant heard of when its coordinator stopped owes nothing: the spec's
/// RecoverCoordinator aborts it with nobody to tell (its delegation died with its node).
/// </summary>
/// <remarks>The inner host's decision counts because the engine's successor (proofs/Chiller.md,
/// the coordinator's takeover) answers the shares that ask; an attempt with no outer share whose
/// coordinator crashed after delegating is over at its InnerCommit, with nobody left to tell.</remarks>
internal sealed class PendingTransactionsDecided : Monitor
{
    /// <summary>Undecided attempts, each with the partition that executed its inner region (-1: none yet).</summary>
    readonly Dictionary<long, int> _pending = new();
    readonly HashSet<long> _decided = new();
    /// <summary>Undecided attempts that only their coordinator has taken a step of, with its node.</summary>
    readonly Dictionary<long, int> _unheard = new();

    [Start, Cold, OnEventDoAction(typeof(ChillerStepEvent), nameof(Observe))]
    sealed class Settled : State;

    [Hot, OnEventDoAction(typeof(ChillerStepEvent), nameof(Observe))]
    sealed class Pending : State;

    void Observe(Event e)
    {
        var s = ((ChillerStepEvent)e).Step;
        switch (s.Step)
        {
            case null: // a node stopped
                foreach (var (txn, _) in _unheard.Where(kv => kv.Value == s.Node).ToList())
                {
                    _unheard.Remove(txn);
                    _pending.Remove(txn);
                }
                break;
            case ChillerStep.CoordDelegate when !_decided.Contains(s.Txn) && !_pending.ContainsKey(s.Txn):
                _unheard[s.Txn] = s.Node;
                _pending[s.Txn] = -1;
                break;
            case ChillerStep.ElectPrimary:
                foreach (var (txn, _) in _pending.Where(kv => kv.Value == s.Partition).ToList()) Decide(txn);
                break;
            case ChillerStep.CoordLockDenied or ChillerStep.CoordLearnParticipantFailed or ChillerStep.CoordLearnCommit
                 or ChillerStep.CoordLearnAbort or ChillerStep.RecoverCoordinator
                 or ChillerStep.InnerCommit or ChillerStep.InnerReject or ChillerStep.RecoveryCommit:
                Decide(s.Txn);
                break;
            case ChillerStep.InnerExecute when !_decided.Contains(s.Txn):
                _unheard.Remove(s.Txn);
                _pending[s.Txn] = s.Partition;
                break;
            default:
                if (s.Txn == 0 || _decided.Contains(s.Txn)) break;
                _unheard.Remove(s.Txn);
                _pending.TryAdd(s.Txn, -1);
                break;
        }
        if (_pending.Count > 0) RaiseGotoStateEvent<Pending>();
        else RaiseGotoStateEvent<Settled>();
    }

    void Decide(long txn)
    {
        _decided.Add(txn);
        _pending.Remove(txn);
        _unheard.Remove(txn);
    }
}
