using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Harness.Workloads;
using Xunit.Abstractions;

namespace Contend.Tests.TwoPhaseCommit;

/// <summary>
/// TPC-C split by warehouse over a simulated cluster: every record of warehouse w on partition
/// w mod P, items on every partition, a transaction's home warehouse on its coordinator's node.
/// Under each protocol the merged history is serializable and atomic; the remote-warehouse knob
/// decides how many transactions use more than one partition (none at 0); a map that keeps a
/// written table on every partition is refused.
/// </summary>
public class TpccClusterTests(ITestOutputHelper output)
{
    static TwoPhaseCommitOptions Options(string protocol, int partitions) =>
        new(protocol, new ClusterTopology(nodes: 2, partitions), Seed: 5)
        {
            Map = new Tpcc.WarehouseMap(partitions),
            Faults = NetworkFaults.Delay(TimeSpan.FromMicroseconds(20)),
            ReplyTimeout = TimeSpan.FromMilliseconds(2),
            Retransmit = TimeSpan.FromMicroseconds(200),
        };

    [Fact]
    public void The_map_puts_every_record_of_a_warehouse_with_it_and_keeps_items_everywhere()
    {
        var map = new Tpcc.WarehouseMap(3);
        const int Warehouse = 0, District = 1, Customer = 2, Item = 3, Stock = 4, Orders = 5, OrderLine = 7, History = 8;
        for (long w = 0; w < 7; w++)
        {
            int home = (int)(w % 3);
            Assert.Equal(home, map.PartitionOf(Warehouse, w));
            Assert.Equal(home, map.PartitionOf(District, Tpcc.DistrictKey(w, 9)));
            Assert.Equal(home, map.PartitionOf(Customer, Tpcc.CustomerKey(w, 9, Tpcc.Customers - 1)));
            Assert.Equal(home, map.PartitionOf(Stock, Tpcc.StockKey(w, Tpcc.Items - 1)));
            Assert.Equal(home, map.PartitionOf(Orders, Tpcc.OrderKey(w, 9, (1 << 24) - 1)));
            Assert.Equal(home, map.PartitionOf(OrderLine, Tpcc.OrderKey(w, 9, (1 << 24) - 1) * 16 + 15));
            Assert.Equal(home, map.PartitionOf(History, Tpcc.HistoryKey(w, 65_535, (1 << 28) - 1)));
        }
        Assert.True(map.Replicates(Item));
        Assert.False(map.Replicates(Stock));
        Assert.Contains("kept on every partition", Assert.Throws<ArgumentException>(() => map.PartitionOf(Item, 5)).Message);
    }

    public static TheoryData<string> Protocols() => new(TwoPhaseCommitSimulation.Protocols);

    [Theory]
    [MemberData(nameof(Protocols))]
    public void Serializable_and_atomic_with_remote_warehouses(string protocol)
    {
        var tpcc = new Tpcc(warehouses: 4, inserts: true, orderCapacity: 20_000, remote: 0.5);
        int[] warehousesLoaded = [];
        var r = TwoPhaseCommitSimulation.Run(tpcc, Options(protocol, 4), TimeSpan.FromMilliseconds(30),
                                             dbs => warehousesLoaded = dbs.Select(db => db.Tables[0].Count).ToArray());
        var report = SerializabilityChecker.Check(r.History);
        output.WriteLine($"{protocol}: {r.Stats.Commits} commits, {r.MultiPartitionShare:P0} across partitions, {r.Stats.TotalAborts} aborts");
        Assert.True(report.Serializable, string.Join("\n", report.Anomalies.Select(a => a.Description)));
        Assert.Empty(r.Atomicity);
        Assert.Empty(r.Unfinished);
        Assert.Empty(r.Failures);
        Assert.Equal([1, 1, 1, 1], warehousesLoaded);
        Assert.True(r.Stats.Commits > 50, $"only {r.Stats.Commits} commits");
        // Half the Payments and NewOrders reach another warehouse, on another partition.
        Assert.InRange(r.MultiPartitionShare, 0.2, 0.8);
    }

    [Fact]
    public void With_no_remote_warehouse_every_transaction_stays_on_its_home_partition()
    {
        var tpcc = new Tpcc(warehouses: 4, inserts: true, orderCapacity: 20_000, remote: 0);
        var r = TwoPhaseCommitSimulation.Run(tpcc, Options("NoWait", 4), TimeSpan.FromMilliseconds(20));
        Assert.True(r.Stats.Commits > 50, $"only {r.Stats.Commits} commits");
        Assert.Equal(0, r.MultiPartitionCommits);
        Assert.True(SerializabilityChecker.Check(r.History).Serializable);
    }

    /// <summary>Keeps table 0 on every partition: the bank's transfers write it.</summary>
    sealed class ReplicatesAccounts(int partitions) : IPartitionMap
    {
        readonly HashPartitionMap _hash = new(partitions);
        public int Partitions => partitions;
        public int PartitionOf(int table, long key) => _hash.PartitionOf(table, key);
        public bool Replicates(int table) => table == 0;
    }

    [Fact]
    public void A_map_that_keeps_a_written_table_on_every_partition_is_refused()
    {
        var options = new TwoPhaseCommitOptions("NoWait", new ClusterTopology(2, 2), 1) { Map = new ReplicatesAccounts(2) };
        var e = Assert.Throws<ArgumentException>(() => TwoPhaseCommitSimulation.Run(new Bank(20, 2), options, TimeSpan.FromMilliseconds(1)));
        Assert.Contains("program transfer, op", e.Message);
        Assert.Contains("writes table account, which the partition map keeps on every partition", e.Message);
    }
}
