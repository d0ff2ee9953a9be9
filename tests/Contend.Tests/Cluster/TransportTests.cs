using Contend.Engine.Cluster;

namespace Contend.Tests.Cluster;

/// <summary>The simulated clock, the in-process transport's seeded faults, the topology and the partition maps.</summary>
public class TransportTests
{
    [Fact]
    public void Simulated_timers_fire_in_due_order_then_in_the_order_set_and_a_changed_timer_fires_once()
    {
        var time = new SimulatedTime();
        var fired = new List<string>();
        time.CreateTimer(_ => fired.Add("b@2"), null, TimeSpan.FromTicks(2), Timeout.InfiniteTimeSpan);
        time.CreateTimer(_ => fired.Add("a@1"), null, TimeSpan.FromTicks(1), Timeout.InfiniteTimeSpan);
        time.CreateTimer(_ => fired.Add("c@2"), null, TimeSpan.FromTicks(2), Timeout.InfiniteTimeSpan);
        var moved = time.CreateTimer(_ => fired.Add("moved@5"), null, TimeSpan.FromTicks(1), Timeout.InfiniteTimeSpan);
        moved.Change(TimeSpan.FromTicks(5), Timeout.InfiniteTimeSpan);
        var gone = time.CreateTimer(_ => fired.Add("disposed"), null, TimeSpan.FromTicks(3), Timeout.InfiniteTimeSpan);
        gone.Dispose();
        var every = time.CreateTimer(_ => fired.Add($"tick@{time.GetTimestamp()}"), null, TimeSpan.FromTicks(4), TimeSpan.FromTicks(4));
        Assert.True(time.RunUntil(TimeSpan.FromTicks(8)));
        every.Dispose();
        Assert.False(time.RunUntil(TimeSpan.FromTicks(100)));
        Assert.Equal(["a@1", "b@2", "c@2", "tick@4", "moved@5", "tick@8"], fired);
        Assert.Equal(TimeSpan.FromTicks(100), time.Elapsed);
    }

    static List<(long At, int From, int Payload)> Exchange(ulong seed, NetworkFaults faults, int messages = 400)
    {
        var time = new SimulatedTime();
        var transport = new InProcessTransport(3, time, faults, seed);
        var got = new List<(long, int, int)>();
        for (int n = 0; n < 3; n++) transport.Attach(n, e => got.Add((time.GetTimestamp(), e.From, (int)e.Message)));
        for (int i = 0; i < messages; i++)
        {
            int from = i % 3;
            transport.Send(new Envelope(from, (from + 1) % 3, i));
            time.RunUntil(time.Elapsed + TimeSpan.FromMicroseconds(5));
        }
        time.RunUntil(time.Elapsed + TimeSpan.FromSeconds(1));
        Assert.Equal(messages, transport.Sent);
        Assert.Equal(transport.Sent - transport.Dropped + transport.Duplicated, transport.Delivered);
        Assert.Equal(transport.Delivered, got.Count);
        return got;
    }

    static readonly NetworkFaults Faulty = new(new LinkFaults(TimeSpan.FromMicroseconds(10), TimeSpan.FromMicroseconds(100), Drop: 0.1, Duplicate: 0.1, Reorder: 0.2));

    [Fact]
    public void The_same_seed_delivers_the_same_messages_at_the_same_times_and_another_seed_does_not()
    {
        var first = Exchange(42, Faulty);
        Assert.Equal(first, Exchange(42, Faulty));
        Assert.NotEqual(first, Exchange(43, Faulty));
    }

    [Fact]
    public void Faults_lose_double_and_reorder_about_as_often_as_asked()
    {
        var got = Exchange(5, Faulty, messages: 3000);
        int distinct = got.Select(g => g.Payload).Distinct().Count();
        double lost = 1 - distinct / 3000.0;
        double doubled = (got.Count - distinct) / (double)distinct;
        Assert.InRange(lost, 0.07, 0.13);
        Assert.InRange(doubled, 0.07, 0.13);
        // Overtaken: a message delivered after one sent later on the same link.
        int overtaken = 0;
        foreach (var link in got.GroupBy(g => g.From))
        {
            int highest = -1;
            foreach (var g in link)
            {
                if (g.Payload < highest) overtaken++;
                highest = Math.Max(highest, g.Payload);
            }
        }
        Assert.True(overtaken > 100, $"only {overtaken} messages overtaken");
    }

    [Fact]
    public void A_cut_link_loses_everything_sent_while_it_is_down_and_nothing_else()
    {
        var faults = NetworkFaults.Delay(TimeSpan.FromMicroseconds(10)) with
        {
            Cuts = [new LinkCut(0, 1, TimeSpan.FromMicroseconds(500), TimeSpan.FromMicroseconds(500))],
        };
        var got = Exchange(1, faults, messages: 600);
        var sentAt = (int i) => i * 5; // µs: Exchange sends one message every 5 µs
        var fromZero = got.Where(g => g.From == 0).Select(g => g.Payload).ToHashSet();
        for (int i = 0; i < 600; i += 3)
            Assert.Equal(sentAt(i) is < 500 or >= 1000, fromZero.Contains(i));
        Assert.Equal(200, got.Count(g => g.From == 1)); // the other links are whole
    }

    [Fact]
    public void A_node_messages_itself_without_faults()
    {
        var time = new SimulatedTime();
        var transport = new InProcessTransport(2, time, new NetworkFaults(new LinkFaults(TimeSpan.Zero, TimeSpan.Zero, Drop: 1)), 9);
        var got = new List<int>();
        transport.Attach(0, e => got.Add((int)e.Message));
        transport.Attach(1, _ => Assert.Fail("every message between nodes is dropped"));
        for (int i = 0; i < 50; i++) transport.Send(new Envelope(0, 0, i));
        transport.Send(new Envelope(0, 1, -1));
        time.RunUntil(TimeSpan.FromSeconds(1));
        Assert.Equal(Enumerable.Range(0, 50), got);
    }

    [Fact]
    public void Bad_faults_and_nodes_are_refused_with_what_is_wrong()
    {
        var time = new SimulatedTime();
        var e1 = Assert.Throws<ArgumentOutOfRangeException>(() => new InProcessTransport(2, time, new NetworkFaults(new LinkFaults(TimeSpan.Zero, TimeSpan.Zero, Drop: 1.5)), 1));
        Assert.Contains("drop probability 1.5", e1.Message);
        var e2 = Assert.Throws<ArgumentOutOfRangeException>(() => new InProcessTransport(2, time, NetworkFaults.None with { Links = new Dictionary<(int, int), LinkFaults> { [(0, 5)] = LinkFaults.None } }, 1));
        Assert.Contains("link 0->5", e2.Message);
        var transport = new InProcessTransport(2, time, NetworkFaults.None, 1);
        transport.Attach(0, _ => { });
        Assert.Contains("node 1 has no receiver", Assert.Throws<InvalidOperationException>(() => transport.Send(new Envelope(0, 1, 0))).Message);
        Assert.Contains("node 2", Assert.Throws<ArgumentOutOfRangeException>(() => transport.Send(new Envelope(0, 2, 0))).Message);
    }

    [Fact]
    public void Topology_places_each_partitions_copies_on_distinct_nodes_primary_first()
    {
        var topology = new ClusterTopology(nodes: 3, partitions: 6, replicas: 2);
        for (int p = 0; p < 6; p++)
        {
            var copies = topology.CopiesOf(p).ToArray();
            Assert.Equal(2, copies.Distinct().Count());
            Assert.Equal(topology.PrimaryOf(p), copies[0]);
            Assert.Contains(p, topology.PrimariesOn(copies[0]).ToArray());
        }
        Assert.All(Enumerable.Range(0, 3), n => Assert.Equal(2, topology.PrimariesOn(n).Length));
        Assert.Contains("3 copies of each partition on 2 nodes", Assert.Throws<ArgumentOutOfRangeException>(() => new ClusterTopology(2, 4, 3)).Message);
        long txn = ClusterTxnId.Make(node: 7, slot: 3, attempt: 12345);
        Assert.Equal((7, 3), (ClusterTxnId.NodeOf(txn), ClusterTxnId.SlotOf(txn)));
        Assert.True(txn > 0);
    }

    [Fact]
    public void Partition_maps_hash_range_and_lookup()
    {
        var hash = new HashPartitionMap(4);
        var counts = new int[4];
        for (long k = 0; k < 4000; k++) counts[hash.PartitionOf(0, k)]++;
        Assert.All(counts, c => Assert.InRange(c, 850, 1150));
        Assert.Equal(hash.PartitionOf(0, 77), hash.PartitionOf(3, 77));

        var range = new RangePartitionMap([100, 200]);
        Assert.Equal(3, range.Partitions);
        Assert.Equal([0, 0, 1, 1, 2, 2], new long[] { long.MinValue, 99, 100, 199, 200, long.MaxValue }.Select(k => range.PartitionOf(0, k)));
        Assert.Contains("bound 1 (100) is not above bound 0 (100)", Assert.Throws<ArgumentException>(() => new RangePartitionMap([100, 100])).Message);

        var lookup = new LookupPartitionMap(range);
        lookup.Place(table: 1, key: 5, partition: 2);
        Assert.Equal(2, lookup.PartitionOf(1, 5));
        Assert.Equal(0, lookup.PartitionOf(0, 5)); // another table's key 5 is not placed
        Assert.Contains("placed on partition 3, but there are 3", Assert.Throws<ArgumentOutOfRangeException>(() => lookup.Place(1, 6, 3)).Message);
    }
}
