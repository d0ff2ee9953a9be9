namespace Contend.Engine.Cluster;

/// <summary>
/// One configuration of the cluster, as the cluster manager decides it: every view has a
/// higher epoch than the one before. A node that is cut off is out for good (crash-stop: a node
/// that fails never rejoins; a restarted process would join as a new node).
/// </summary>
/// <param name="Epoch">counts the views from 1</param>
/// <param name="CutOff">nodes whose channels are closed: nothing from or to them is delivered</param>
/// <param name="Configuration">per partition, the copies that serve (indices into the topology's
/// copies), the primary first</param>
/// <param name="Recovering">partitions whose primary was cut off and whose successor is not elected
/// yet: their configuration's first copy is the candidate, which does not serve</param>
internal sealed record ClusterView(long Epoch, IReadOnlySet<int> CutOff, IReadOnlyList<int[]> Configuration, IReadOnlySet<int> Recovering)
{
    public static ClusterView Initial(ClusterTopology topology) =>
        new(1, new HashSet<int>(), Enumerable.Range(0, topology.Partitions).Select(_ => Enumerable.Range(0, topology.Replicas).ToArray()).ToArray(),
            new HashSet<int>());

    /// <summary>The copies of <paramref name="partition"/> other than its primary that serve.</summary>
    public ReadOnlySpan<int> ReplicasOf(int partition) => Configuration[partition].AsSpan(1);

    /// <summary>The copy of <paramref name="partition"/> that serves as its primary, or -1 while it recovers.</summary>
    public int PrimaryCopy(int partition) => Recovering.Contains(partition) ? -1 : Configuration[partition][0];
}

/// <summary>
/// Failure detection and configuration, behind one interface: an in-process implementation on
/// the simulated clock (<see cref="SimulatedMembership"/>) for tests and the simulation, and
/// later one backed by etcd leases for a cluster of processes. A node learns every new view
/// through <see cref="Watch"/>; the protocol's recovery decides what a view changes
/// (<see cref="Propose"/>).
/// </summary>
internal interface IMembership
{
    ClusterView Current { get; }

    /// <summary>Calls <paramref name="onView"/> on <paramref name="node"/> with every later view,
    /// in epoch order, until the node is cut off.</summary>
    void Watch(int node, Action<ClusterView> onView);

    /// <summary>What the failure detector reports: <paramref name="node"/> has stopped (in
    /// process, the crash injector; with etcd, its lease expired). Calls <paramref name="suspected"/>
    /// once, after the detection delay, on the cluster manager.</summary>
    void ReportDown(int node, Action<int> suspected);

    /// <summary>Installs the next view, made from the current one by <paramref name="change"/>,
    /// and hands it to every node that watches and is not cut off.</summary>
    ClusterView Propose(Func<ClusterView, ClusterView> change);
}

/// <summary>
/// Membership in one process on a <see cref="TimeProvider"/>: a stopped node is suspected after
/// <see cref="DetectionDelay"/> (the lease a real detector waits out), and each watching node
/// learns a new view by its own timer, <see cref="ViewDelay"/> later, so that views reach nodes
/// at different moments between other events, as they would across a network.
/// </summary>
internal sealed class SimulatedMembership(ClusterTopology topology, TimeProvider time, TimeSpan detectionDelay, TimeSpan viewDelay) : IMembership
{
    readonly Dictionary<int, Action<ClusterView>> _watchers = new();

    public TimeSpan DetectionDelay { get; } = detectionDelay > TimeSpan.Zero ? detectionDelay
        : throw new ArgumentOutOfRangeException(nameof(detectionDelay), $"membership: detection delay {detectionDelay} must be positive");
    public TimeSpan ViewDelay { get; } = viewDelay > TimeSpan.Zero ? viewDelay
        : throw new ArgumentOutOfRangeException(nameof(viewDelay), $"membership: view delay {viewDelay} must be positive");

    public ClusterView Current { get; private set; } = ClusterView.Initial(topology);

    public void Watch(int node, Action<ClusterView> onView) => _watchers.Add(node, onView);

    public void ReportDown(int node, Action<int> suspected)
    {
        ITimer? timer = null;
        timer = time.CreateTimer(_ =>
        {
            timer!.Dispose();
            suspected(node);
        }, null, DetectionDelay, Timeout.InfiniteTimeSpan);
    }

    public ClusterView Propose(Func<ClusterView, ClusterView> change)
    {
        var next = change(Current);
        if (next.Epoch != Current.Epoch + 1)
            throw new InvalidOperationException($"membership: view {next.Epoch} proposed over view {Current.Epoch}");
        Current = next;
        foreach (var (node, onView) in _watchers.OrderBy(w => w.Key))
        {
            if (next.CutOff.Contains(node)) continue;
            ITimer? timer = null;
            timer = time.CreateTimer(_ =>
            {
                timer!.Dispose();
                // A node cut off meanwhile learns nothing more.
                if (!Current.CutOff.Contains(node)) onView(next);
            }, null, ViewDelay, Timeout.InfiniteTimeSpan);
        }
        return next;
    }
}
