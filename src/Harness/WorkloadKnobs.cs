using System.CommandLine;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;

namespace Contend.Harness;

/// <summary>The workloads' knobs as command-line options, and a factory per workload name.</summary>
internal sealed class WorkloadKnobs
{
    public static readonly string[] Workloads = ["ycsb", "stealdb", "tpcc", "smartmart"];

    readonly Option<long> _rows = new("--rows") { Description = "ycsb: rows", DefaultValueFactory = _ => 1_000_000 };
    readonly Option<int> _requests = new("--requests") { Description = "ycsb: requests per transaction", DefaultValueFactory = _ => 16 };
    readonly Option<double> _readFraction = new("--read-fraction") { Description = "ycsb: fraction of requests that read", DefaultValueFactory = _ => 0.5 };
    readonly Option<double> _theta = new("--theta") { Description = "ycsb: Zipf skew in [0, 1)", DefaultValueFactory = _ => 0.9 };
    readonly Option<int> _partitions = new("--partitions") { Description = "ycsb: key ranges, each with its own hot keys; a transaction stays in one", DefaultValueFactory = _ => 1 };
    readonly Option<int> _tables = new("--tables") { Description = "stealdb: tables", DefaultValueFactory = _ => 32 };
    readonly Option<int> _tableRows = new("--table-rows") { Description = "stealdb: records per table", DefaultValueFactory = _ => 100_000 };
    readonly Option<int> _ops = new("--ops") { Description = "stealdb: increments per transaction (one per table)", DefaultValueFactory = _ => 32 };
    readonly Option<int> _hot = new("--hot") { Description = "stealdb: records of the first table in use (0: all)", DefaultValueFactory = _ => 1 };
    readonly Option<int> _warehouses = new("--warehouses") { Description = "tpcc: warehouses", DefaultValueFactory = _ => 1 };
    readonly Option<bool> _noInserts = new("--no-inserts") { Description = "tpcc: leave out inserts and the 1% rollback, as DBx1000 does" };
    readonly Option<bool> _newOrderOnly = new("--new-order-only") { Description = "tpcc: NewOrder alone, district op first (StealDB's study)" };
    readonly Option<double?> _remote = new("--remote") { Description = "tpcc: probability that a Payment's customer, and one line of a NewOrder, is of another warehouse (default: TPC-C's 15% and 1% a line)" };
    readonly Option<int> _orderCapacity = new("--order-capacity") { Description = "tpcc: orders the insert tables can hold", DefaultValueFactory = _ => 1_000_000 };
    readonly Option<int> _sections = new("--sections") { Description = "smartmart: store sections", DefaultValueFactory = _ => 8 };
    readonly Option<int> _items = new("--items") { Description = "smartmart: items per store section (paper: 10000)", DefaultValueFactory = _ => 1_000 };
    readonly Option<int> _orderItems = new("--order-items") { Description = "smartmart: items per checkout", DefaultValueFactory = _ => 32 };
    readonly Option<int> _orderSections = new("--order-sections") { Description = "smartmart: store sections an order buys from", DefaultValueFactory = _ => 8 };
    readonly Option<int> _window = new("--window") { Description = "smartmart: days of purchase history the trend prediction reads", DefaultValueFactory = _ => 150 };
    readonly Option<double> _delay = new("--delay-us") { Description = "smartmart: application-logic delay per item bought, microseconds", DefaultValueFactory = _ => 0 };
    readonly Option<double> _itemTheta = new("--item-theta") { Description = "smartmart: Zipf skew of the items chosen in a section, in [0, 1)", DefaultValueFactory = _ => 0 };
    readonly Option<double> _sectionTheta = new("--section-theta") { Description = "smartmart: Zipf exponent drawing each item's store section, 0 (an equal share of --order-sections) to 10", DefaultValueFactory = _ => 0 };
    readonly Option<int> _carts = new("--carts") { Description = "smartmart: carts, a client each", DefaultValueFactory = _ => 2 };

    /// <summary>Each knob with the workload it belongs to.</summary>
    (Option Option, string Workload)[] All =>
    [
        (_rows, "ycsb"), (_requests, "ycsb"), (_readFraction, "ycsb"), (_theta, "ycsb"), (_partitions, "ycsb"),
        (_tables, "stealdb"), (_tableRows, "stealdb"), (_ops, "stealdb"), (_hot, "stealdb"),
        (_warehouses, "tpcc"), (_noInserts, "tpcc"), (_newOrderOnly, "tpcc"), (_orderCapacity, "tpcc"), (_remote, "tpcc"),
        (_sections, "smartmart"), (_items, "smartmart"), (_orderItems, "smartmart"), (_orderSections, "smartmart"), (_window, "smartmart"),
        (_delay, "smartmart"), (_itemTheta, "smartmart"), (_sectionTheta, "smartmart"), (_carts, "smartmart"),
    ];

    public void AddTo(Command command)
    {
        foreach (var (o, _) in All) command.Options.Add(o);
    }

    /// <summary>The workload's factory. A knob given for another workload is an error, not
    /// ignored: a run of ycsb with --hot 5 would otherwise report a contention it never had.</summary>
    public Func<IWorkload> Factory(string name, ParseResult p)
    {
        if (Workloads.Contains(name)) RefuseOthers(All, name, p);
        return Make(name, p);
    }

    /// <summary>SmartMart from its knobs (<c>contend run --protocol ReactDB</c>); a knob of another workload is an error.</summary>
    public SmartMart SmartMart(ParseResult p)
    {
        RefuseOthers(All, "smartmart", p);
        return new SmartMart(p.GetValue(_sections), p.GetValue(_items), p.GetValue(_orderItems), p.GetValue(_orderSections), p.GetValue(_window),
                             p.GetValue(_delay), p.GetValue(_itemTheta), p.GetValue(_carts), p.GetValue(_sectionTheta));
    }

    /// <summary>YCSB's shape for ReactDB's one-container run (<c>contend run --protocol ReactDB
    /// --workload ycsb</c>); a knob of another workload, or key ranges, is an error.</summary>
    public (long Rows, int Requests, double ReadFraction, double Theta) ReactDbYcsb(ParseResult p)
    {
        RefuseOthers(All, "ycsb", p);
        if (p.GetResult(_partitions) is { Implicit: false })
            throw new UsageException($"{_partitions.Name} is not a knob of ReactDB's ycsb run: one reactor owns the whole table");
        return (p.GetValue(_rows), p.GetValue(_requests), p.GetValue(_readFraction), p.GetValue(_theta));
    }

    /// <summary>Throws when a knob of <paramref name="knobs"/> that belongs to another workload
    /// than <paramref name="workload"/> was given (<c>contend run</c>'s and <c>contend cluster</c>'s).</summary>
    public static void RefuseOthers(IEnumerable<(Option Option, string Workload)> knobs, string workload, ParseResult p)
    {
        foreach (var (o, owner) in knobs)
            if (owner != workload && p.GetResult(o) is { Implicit: false })
                throw new UsageException($"{o.Name} is a {owner} knob; this run's workload is {workload}");
    }

    Func<IWorkload> Make(string name, ParseResult p) => name switch
    {
        "ycsb" => () => new Ycsb(p.GetValue(_rows), p.GetValue(_requests), p.GetValue(_readFraction), p.GetValue(_theta), p.GetValue(_partitions)),
        "stealdb" => () => new StealDbMicro(p.GetValue(_tables), p.GetValue(_tableRows), p.GetValue(_ops), p.GetValue(_hot)),
        "tpcc" => () => new Tpcc(p.GetValue(_warehouses), !p.GetValue(_noInserts), p.GetValue(_orderCapacity), p.GetValue(_newOrderOnly), p.GetValue(_remote)),
        "smartmart" => throw new UsageException("workload smartmart is an application of reactors: it runs under --protocol ReactDB"),
        _ => throw new UsageException($"unknown workload '{name}' (known: {string.Join(", ", Workloads)})"),
    };
}
