using Contend.Engine.Cluster;

namespace Contend.Tests.Cluster;

/// <summary>The cost model's workers: a message waits for its node's first free worker, takes it
/// for a message's cost plus its ops', and is handled when that is over; a node's message to
/// itself costs its ops alone; nodes do not share workers.</summary>
public class NodeWorkersTests
{
    [Fact]
    public void Messages_queue_for_a_nodes_workers_and_are_handled_when_their_cost_is_spent()
    {
        var time = new SimulatedTime();
        var workers = new NodeWorkers(2, new CpuModel(2, TimeSpan.FromMicroseconds(10), TimeSpan.FromMicroseconds(1)), time);
        var handled = new List<(string What, double At)>();
        void Note(Envelope e) => handled.Add(((string)e.Message, time.Elapsed.TotalMicroseconds));
        workers.Run(new Envelope(1, 0, "a"), ops: 0, Note);   // worker 1 of node 0: 0..10
        workers.Run(new Envelope(1, 0, "b"), ops: 5, Note);   // worker 2 of node 0: 0..15
        workers.Run(new Envelope(1, 0, "c"), ops: 0, Note);   // waits for worker 1: 10..20
        workers.Run(new Envelope(0, 0, "self"), ops: 2, Note); // a call: waits for worker 2, 15..17
        workers.Run(new Envelope(0, 1, "other"), ops: 0, Note); // node 1's own worker: 0..10
        time.RunUntil(TimeSpan.FromMilliseconds(1));
        Assert.Equal([("a", 10.0), ("other", 10.0), ("b", 15.0), ("self", 17.0), ("c", 20.0)], handled.OrderBy(h => h.At).ThenBy(h => h.What).ToList());
        Assert.Equal(TimeSpan.FromMicroseconds(10 + 15 + 10 + 2 + 10).Ticks, workers.BusyTicks);
    }

    [Fact]
    public void A_model_out_of_range_is_refused_by_name()
    {
        Assert.Contains("0 workers a node", Assert.Throws<ArgumentOutOfRangeException>(() => new CpuModel(0, TimeSpan.Zero, TimeSpan.Zero).Validated()).Message);
        Assert.Contains("must not be negative", Assert.Throws<ArgumentOutOfRangeException>(() => new CpuModel(1, TimeSpan.FromTicks(-1), TimeSpan.Zero).Validated()).Message);
    }
}
