using Contend.Engine.Protocols.Chiller;
using Microsoft.Coyote.Specifications;
using Monitor = Microsoft.Coyote.Specifications.Monitor;

namespace Contend.Coyote.Chiller;

/// <summary>
/// Chiller's liveness property as a Coyote monitor, fed every step the cluster takes through
/// <see cref="ChillerOptions.Observer"/>. The monitor is hot while something is owed; Coyote
/// reports it still hot when an iteration ends (the run has drained by then, so what is owed
/// will never come). The second property, every pending transaction eventually decided,
/// has no monitor yet: a first one (an executed inner region ends by InnerCommit, RecoveryCommit
/// or recovery's DecidePending) was never hot on any twin tried, so it could not be shown to fail;
/// the end-of-run check that every transaction ended stands for it.
/// </summary>
internal static class ChillerLiveness
{
    /// <summary>Registers the monitor for this iteration; call first in a test body.</summary>
    public static void Register() => Specification.RegisterMonitor<InnerCommitReachesOuterPartitions>();

    /// <summary>The observer to give the cluster: hands each step to the monitor.</summary>
    public static void Observe(ChillerEvent step)
    {
        if (step.Step is null) return; // a node stopped: the monitor owes nothing for it
        Specification.Monitor<InnerCommitReachesOuterPartitions>(new ChillerStepEvent(step));
    }
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
