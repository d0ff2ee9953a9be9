using System.Buffers.Binary;
using Contend.Engine.Cluster;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseCommit;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Harness.Workloads;

/// <summary>
/// TPC-C NewOrder and Payment, 50:50, over <c>warehouses</c> warehouses.
/// Included: warehouse, district, customer, item and stock rows with the fields the two
/// transactions read and write; NewOrder's 5-15 lines, 1% of them supplied by a remote
/// warehouse, and its 1% rollback (an unused item id on the last line); Payment's 15%
/// remote customers; NURand customer and item ids; and the inserts (orders, new-order,
/// order lines, history) unless turned off. DBx1000's transaction mix, minus what follows.
/// Left out: Payment's 60% customer selection by last name (customers are chosen by id),
/// the customer's bad-credit data update, the 3,000 initial orders per district, and the
/// other three transactions. With inserts off the rollback is off too, as in DBx1000, so
/// the two are compared on the same transactions.
/// With <c>newOrderOnly</c>, every transaction is a NewOrder shaped as StealDB's Figure 1
/// (seed 000): the district op comes first and every other op depends on it, so that the
/// district record is where waiters queue and the rest is what they steal. (In the mix, every
/// op but the inserts is a DAG root, in DBx1000's order.)
/// With <c>remote</c> set, it replaces TPC-C's two remote probabilities as Chiller's Section
/// 7.4.2 varies them: a Payment's customer is of another warehouse with that probability, and
/// a NewOrder has one line (chosen at random) supplied by another warehouse with it, its other
/// lines by the home one.
/// Across a cluster (<see cref="IPartitionedWorkload"/>) the records are split by warehouse
/// (<see cref="WarehouseMap"/>), items kept whole on every partition (they are only read).
/// </summary>
internal sealed class Tpcc(int warehouses, bool inserts, int orderCapacity, bool newOrderOnly = false, double? remote = null) : IWorkload, IPartitionedWorkload
{
    readonly int _warehouses = warehouses;
    readonly bool _inserts = inserts;
    readonly bool _newOrderOnly = newOrderOnly;
    readonly double? _remote = remote;
    /// <summary>The tables' ids, in the order <see cref="Load(Database, int, IPartitionMap?)"/> creates them.</summary>
    /// <summary>The contended tables, as Chiller's lookup table marks them.</summary>
    public const int WarehouseTableId = WarehouseTable, DistrictTableId = DistrictTable;
    const int WarehouseTable = 0, DistrictTable = 1, CustomerTable = 2, ItemTable = 3, StockTable = 4,
              OrdersTable = 5, NewOrderTable = 6, OrderLineTable = 7, HistoryTable = 8;
    public const int Districts = 10, Customers = 3000, Items = 100_000, MinLines = 5, MaxLines = 15;
    // Payload sizes as TPC-C's row sizes (clause 1.3), so rows span the cache lines they would.
    const int WarehouseSize = 89, DistrictSize = 95, CustomerSize = 655, ItemSize = 82, StockSize = 306,
              OrderSize = 32, NewOrderSize = 8, OrderLineSize = 40, HistorySize = 48;
    const int LineArgs = 5, ArgsPerLine = 3;

    readonly TxnProgram[] _newOrder = new TxnProgram[MaxLines + 1];
    TxnProgram _payment = null!;
    long _customerC, _itemC;
    /// <summary>The cluster's map, once a partition is loaded.</summary>
    IPartitionMap? _map;

    public string Name => "tpcc";

    public string Describe() =>
        (_newOrderOnly ? "TPC-C NewOrder only, district op first (StealDB's Figure 1), " : "TPC-C NewOrder + Payment 50:50, ") + $"{_warehouses} warehouse(s), " +
        (_inserts ? $"with inserts (room for {orderCapacity:N0} orders) and the 1% NewOrder rollback" : "no inserts and no rollback (as DBx1000)") +
        (_remote is double r ? string.Create(System.Globalization.CultureInfo.InvariantCulture, $", remote warehouse {r:P0} of Payments' customers and of NewOrders (one line)") : "") +
        "; customers by id only (no by-last-name), no bad-credit update, no initial orders, no Delivery/OrderStatus/StockLevel";

    public static long DistrictKey(long w, long d) => w * Districts + d;
    public static long CustomerKey(long w, long d, long c) => DistrictKey(w, d) * Customers + c;
    public static long StockKey(long w, long i) => w * Items + i;
    public static long OrderKey(long w, long d, long orderId) => (DistrictKey(w, d) << 24) | orderId;
    /// <summary>A Payment's history row: its home warehouse in the high bits, so that the row
    /// lives with it across a cluster, then the stream that made it and its number there.</summary>
    public static long HistoryKey(long w, long stream, long number) => (w << 44) | (stream << 28) | number;

    /// <summary>The warehouse a record of <paramref name="table"/> belongs to, from its key; -1 for an item (every warehouse's).</summary>
    static long WarehouseOf(int table, long key) => table switch
    {
        WarehouseTable => key,
        DistrictTable => key / Districts,
        CustomerTable => key / (Districts * Customers),
        StockTable => key / Items,
        OrdersTable or NewOrderTable => (key >> 24) / Districts,
        OrderLineTable => (key >> 28) / Districts,
        HistoryTable => key >> 44,
        _ => -1,
    };

    /// <summary>
    /// TPC-C split by warehouse: warehouse w and every record of it (its districts, customers,
    /// stock, orders and history) on partition w mod the partitions; items on every partition.
    /// Decision: round robin rather than ranges, so that any number of warehouses spreads evenly.
    /// </summary>
    public sealed class WarehouseMap(int partitions) : IPartitionMap
    {
        public int Partitions { get; } = partitions is >= 1 and <= ClusterTopology.MaxPartitions ? partitions
            : throw new ArgumentOutOfRangeException(nameof(partitions), $"tpcc warehouse map: {partitions} partitions, must be 1..{ClusterTopology.MaxPartitions}");

        public int PartitionOf(int table, long key) => WarehouseOf(table, key) is >= 0 and var w ? (int)(w % Partitions)
            : throw new ArgumentException($"tpcc warehouse map: table {table} is kept on every partition", nameof(table));

        public bool Replicates(int table) => table == ItemTable;
    }

    public IReadOnlyList<TxnProgram> Programs => [.. _newOrder[MinLines..], _payment];

    public void Load(Database db) => Load(db, 0, null);

    /// <summary>One partition's share of the warehouses, as <paramref name="map"/> places them (null: all of them), and every item.</summary>
    public void Load(Database db, int partition, IPartitionMap? map)
    {
        if (_warehouses is < 1 or > 1000) throw new ArgumentOutOfRangeException("warehouses", $"tpcc: warehouses = {_warehouses} must be in 1..1000");
        if (_inserts && orderCapacity is < 1000 or > 50_000_000) throw new ArgumentOutOfRangeException(nameof(orderCapacity), $"tpcc: order capacity {orderCapacity} must be in 1000..50000000");
        if (_remote is double r && !(r >= 0 && r <= 1)) throw new ArgumentOutOfRangeException("remote", $"tpcc: remote probability {r} must be in [0, 1]");
        ulong rng = Rng.Seed(0x7C7C, 0);
        _customerC = (long)(Rng.Next(ref rng) % 1024);
        _itemC = (long)(Rng.Next(ref rng) % 8192);
        _map = map;
        var here = Enumerable.Range(0, _warehouses).Where(w => map is null || map.PartitionOf(WarehouseTable, w) == partition).ToArray();
        int n = Math.Max(1, here.Length);
        var warehouse = Create(db, "warehouse", WarehouseSize, n, WarehouseTable);
        var district = Create(db, "district", DistrictSize, n * Districts, DistrictTable);
        var customer = Create(db, "customer", CustomerSize, n * Districts * Customers, CustomerTable);
        var item = Create(db, "item", ItemSize, Items, ItemTable);
        var stock = Create(db, "stock", StockSize, n * Items, StockTable);
        foreach (int w in here)
        {
            // A warehouse's values from a stream of its own: the same wherever it is loaded.
            ulong values = Rng.Seed(0x7C7C, w + 1);
            Set(warehouse.Payload(warehouse.Load(w)), 0, 30_000_000, (long)(Rng.Next(ref values) % 2001));
            for (int d = 0; d < Districts; d++)
            {
                Set(district.Payload(district.Load(DistrictKey(w, d))), 0, 3_000_000, (long)(Rng.Next(ref values) % 2001), 1);
                for (int c = 0; c < Customers; c++)
                    Set(customer.Payload(customer.Load(CustomerKey(w, d, c))), 0, -1000, 1000, 1, (long)(Rng.Next(ref values) % 5001));
            }
            for (int i = 0; i < Items; i++)
                Set(stock.Payload(stock.Load(StockKey(w, i))), 0, 10 + (long)(Rng.Next(ref values) % 91));
        }
        for (int i = 0; i < Items; i++)
            Set(item.Payload(item.Load(i)), 0, 100 + (long)(Rng.Next(ref rng) % 9901));
        if (_inserts)
        {
            // The partition's share of the orders, as of the warehouses (all of them on one node).
            int orders = map is null ? orderCapacity : Math.Max(1000, (int)((long)orderCapacity * n / _warehouses));
            Create(db, "orders", OrderSize, orders, OrdersTable);
            Create(db, "new_order", NewOrderSize, orders, NewOrderTable);
            Create(db, "order_line", OrderLineSize, orders * 11, OrderLineTable);
            Create(db, "history", HistorySize, orders, HistoryTable);
        }
        for (int lines = MinLines; lines <= MaxLines; lines++) _newOrder[lines] = BuildNewOrder(db, lines);
        _payment = BuildPayment(db);
    }

    static Table Create(Database db, string name, int payload, int capacity, int id)
    {
        var table = db.Create(name, payload, capacity);
        if (table.Id != id) throw new InvalidOperationException($"tpcc: table {name} has id {table.Id}, not {id}: load TPC-C into an empty database");
        return table;
    }

    static void Set(Span<byte> row, int field, params ReadOnlySpan<long> values)
    {
        for (int i = 0; i < values.Length; i++) BinaryPrimitives.WriteInt64LittleEndian(row[((field + i) * 8)..], values[i]);
    }

    static long Get(ReadOnlySpan<byte> row, int field) => BinaryPrimitives.ReadInt64LittleEndian(row[(field * 8)..]);

    static void Add(Span<byte> row, int field, long delta) => Set(row, field, Get(row, field) + delta);

    // NewOrder args: [0] w, [1] d, [2] customer, [3] lines, [4] all local; then per line
    // [5 + 3i] item, [6 + 3i] supplying warehouse, [7 + 3i] quantity.
    TxnProgram BuildNewOrder(Database db, int lines)
    {
        var b = new ProgramBuilder($"new_order_{lines}", db, LineArgs + ArgsPerLine * MaxLines);
        // district: takes the next order id (d_next_o_id, field 2) and returns it.
        OpBody district = (row, a, r) =>
        {
            long orderId = Get(row, 2);
            Set(row, 2, orderId + 1);
            return orderId;
        };
        var districtKey = KeySource.Computed((a, r) => DistrictKey(a[0], a[1]));
        string[] after = _newOrderOnly ? ["district"] : [];
        if (_newOrderOnly)
        {
            b.Write("district", "district", districtKey, district);
            b.Read("warehouse", "warehouse", KeySource.FromArg(0), (row, a, r) => Get(row, 1), after);
        }
        else
        {
            b.Read("warehouse", "warehouse", KeySource.FromArg(0), (row, a, r) => Get(row, 1));
            b.Write("district", "district", districtKey, district);
        }
        int districtOp = _newOrderOnly ? 0 : 1; // either way the customer is op 2 and line i's item op 3 + 2i
        b.Read("customer", "customer", KeySource.Computed((a, r) => CustomerKey(a[0], a[1], a[2])), (row, a, r) => Get(row, 4), after);
        for (int i = 0; i < lines; i++)
        {
            int at = LineArgs + ArgsPerLine * i;
            b.Read($"item{i}", "item", KeySource.FromArg(at), (row, a, r) => Get(row, 1), after);
            b.Write($"stock{i}", "stock", KeySource.Computed((a, r) => StockKey(a[at + 1], a[at])), (row, a, r) =>
            {
                long quantity = Get(row, 1), ordered = a[at + 2];
                Set(row, 1, quantity >= ordered + 10 ? quantity - ordered : quantity - ordered + 91);
                Add(row, 2, ordered);
                Add(row, 3, 1);
                if (a[at + 1] != a[0]) Add(row, 4, 1);
                return 0;
            }, after);
        }
        if (_inserts)
        {
            b.Insert("order", "orders", KeySource.Computed((a, r) => OrderKey(a[0], a[1], r[districtOp]), "district"),
                     (row, a, r) => { Set(row, 0, a[2], a[3], a[4]); return 0; });
            b.Insert("new_order", "new_order", KeySource.Computed((a, r) => OrderKey(a[0], a[1], r[districtOp]), "district"),
                     (row, a, r) => { Set(row, 0, r[districtOp]); return 0; });
            for (int i = 0; i < lines; i++)
            {
                int at = LineArgs + ArgsPerLine * i, line = i, itemOp = 3 + 2 * i;
                b.Insert($"line{i}", "order_line", KeySource.Computed((a, r) => OrderKey(a[0], a[1], r[districtOp]) * 16 + line, "district"),
                         (row, a, r) => { Set(row, 0, a[at], a[at + 1], a[at + 2], a[at + 2] * r[itemOp]); return 0; }, $"item{i}");
            }
        }
        return b.BodiesNeverAbort().Build(); // the rollback is a missing item key, not a body's abort
    }

    // Payment args: [0] w, [1] d, [2] customer's w, [3] customer's d, [4] customer, [5] amount, [6] history key.
    TxnProgram BuildPayment(Database db)
    {
        var b = new ProgramBuilder("payment", db, 7);
        b.Write("warehouse", "warehouse", KeySource.FromArg(0), (row, a, r) => { Add(row, 0, a[5]); return 0; });
        b.Write("district", "district", KeySource.Computed((a, r) => DistrictKey(a[0], a[1])), (row, a, r) => { Add(row, 0, a[5]); return 0; });
        b.Write("customer", "customer", KeySource.Computed((a, r) => CustomerKey(a[2], a[3], a[4])), (row, a, r) =>
        {
            Add(row, 0, -a[5]);
            Add(row, 1, a[5]);
            Add(row, 2, 1);
            return 0;
        });
        if (_inserts)
            b.Insert("history", "history", KeySource.FromArg(6), (row, a, r) => { Set(row, 0, CustomerKey(a[2], a[3], a[4]), a[0], a[1], a[5]); return 0; });
        return b.BodiesNeverAbort().Build();
    }

    public ITransactionSource CreateSource(int worker, ulong seed) => new Source(this, worker, Rng.Seed(seed, worker), null);

    /// <summary>A cluster coordinator slot's stream: its transactions' home warehouses are those
    /// on <paramref name="homePartitions"/> (any, when the slot's node holds none).</summary>
    public ITransactionSource CreateSource(int stream, ulong seed, IReadOnlyList<int> homePartitions)
    {
        var map = _map ?? throw new InvalidOperationException("tpcc: a cluster's stream before its partitions were loaded");
        long[] homes = Enumerable.Range(0, _warehouses).Where(w => homePartitions.Contains(map.PartitionOf(WarehouseTable, w))).Select(w => (long)w).ToArray();
        return new Source(this, stream, Rng.Seed(seed, stream), homes.Length > 0 ? homes : null);
    }

    /// <param name="homes">the warehouses a transaction's home is drawn from; null: all</param>
    sealed class Source(Tpcc w, int stream, ulong rng, long[]? homes) : ITransactionSource
    {
        ulong _rng = rng;
        long _historySeq;

        long Uniform(long lo, long hi) => lo + (long)(Rng.Next(ref _rng) % (ulong)(hi - lo + 1));

        bool Chance(double p) => (Rng.Next(ref _rng) >> 11) * (1.0 / (1UL << 53)) < p;

        long NuRand(long a, long c, long lo, long hi) => (((Uniform(0, a) | Uniform(lo, hi)) + c) % (hi - lo + 1)) + lo;

        long OtherWarehouse(long home) => w._warehouses == 1 ? home : (home + Uniform(1, w._warehouses - 1)) % w._warehouses;

        public TxnProgram Next(TxnContext ctx)
        {
            var a = ctx.Args;
            long home = homes is null ? Uniform(0, w._warehouses - 1) : homes[Uniform(0, homes.Length - 1)];
            a[0] = home;
            a[1] = Uniform(0, Districts - 1);
            if (w._newOrderOnly || Rng.Next(ref _rng) % 2 == 0)
            {
                int lines = (int)Uniform(MinLines, MaxLines);
                a[2] = NuRand(1023, w._customerC, 1, Customers) - 1;
                a[3] = lines;
                long allLocal = 1;
                int remoteLine = w._remote is double p && Chance(p) ? (int)Uniform(0, lines - 1) : -1;
                for (int i = 0; i < lines; i++)
                {
                    int at = LineArgs + ArgsPerLine * i;
                    long item;
                    bool repeated;
                    do // distinct items, so a NewOrder never locks one stock row twice
                    {
                        item = NuRand(8191, w._itemC, 1, Items) - 1;
                        repeated = false;
                        for (int j = 0; j < i; j++) repeated |= a[LineArgs + ArgsPerLine * j] == item;
                    } while (repeated);
                    a[at] = item;
                    a[at + 1] = (w._remote is null ? Uniform(1, 100) == 1 : i == remoteLine) ? OtherWarehouse(home) : home;
                    a[at + 2] = Uniform(1, 10);
                    if (a[at + 1] != home) allLocal = 0;
                }
                a[4] = allLocal;
                if (w._inserts && Uniform(1, 100) == 1) a[LineArgs + ArgsPerLine * (lines - 1)] = Items; // unused id: rollback
                return w._newOrder[lines];
            }
            // 15% (or the remote knob): a customer of a random district of another warehouse (with one warehouse,
            // of a random district of the home one, as DBx1000 does).
            bool remote = w._remote is double q ? Chance(q) : Uniform(1, 100) <= 15;
            a[2] = remote ? OtherWarehouse(home) : home;
            a[3] = remote ? Uniform(0, Districts - 1) : a[1];
            a[4] = NuRand(1023, w._customerC, 1, Customers) - 1;
            a[5] = Uniform(100, 500_000);
            a[6] = HistoryKey(home, stream, ++_historySeq);
            return w._payment;
        }
    }
}
