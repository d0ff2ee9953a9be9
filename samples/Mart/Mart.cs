using System.Buffers.Binary;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Storage;

namespace Contend.Samples.Mart;

/// <summary>
/// The store's reactors and functions. Each store section is a reactor owning its items' stock
/// and the count sold of each; each cart is a reactor owning one line per (section, item), the
/// quantity in the cart. Sections and carts are spread over the containers by number, so a
/// checkout's calls to the sections mostly leave its cart's container: sub-transactions queued
/// there, committed with the cart's lines by ReactDB's commit across containers.
/// </summary>
public sealed class Mart
{
    readonly Reactor[] _sections, _carts;

    public int Sections => _sections.Length;
    public int Items { get; }
    public int Carts => _carts.Length;
    public long Opening { get; }

    /// <summary>args: section, item, quantity. Adds to the cart's line; result: the line after.</summary>
    public ReactorFunction AddItem { get; }

    /// <summary>Takes every line of the cart from its section's stock and empties the cart, or, an
    /// item short of stock, aborts the whole root; result: the number of items bought.</summary>
    public ReactorFunction Checkout { get; }

    /// <summary>args: item. Result: the section's stock of it.</summary>
    public ReactorFunction Stock { get; }

    /// <summary>Every section's stock plus what it sold, in one root; result: the sum, which every
    /// checkout keeps at Sections x Items x Opening.</summary>
    public ReactorFunction Audit { get; }

    /// <summary>The first section's reactor, where an audit's root runs.</summary>
    public Reactor Office => _sections[0];

    public Reactor Cart(int cart) => _carts[cart];
    public Reactor Section(int section) => _sections[section];

    /// <summary>Loads the store into the empty database and deploys its reactors.</summary>
    public static (Mart Mart, ReactorDeployment Deployment) Open(Database db, int containers, int sections, int items, int carts, long opening)
    {
        if (sections < 1 || items < 1 || carts < 1 || opening < 0)
            throw new ArgumentException($"Mart: {sections} sections, {items} items, {carts} carts and an opening stock of {opening}; each must be positive (the stock at least 0)");
        var stock = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(stock, opening);
        var none = new byte[sizeof(long)];
        var deployment = new ReactorDeployment(db, containers);
        var sectionReactors = new Reactor[sections];
        for (int s = 0; s < sections; s++)
        {
            var stockTable = db.Create($"section{s}.stock", sizeof(long), items);
            var soldTable = db.Create($"section{s}.sold", sizeof(long), items);
            for (int i = 0; i < items; i++)
            {
                stockTable.Load(i, stock);
                soldTable.Load(i, none);
            }
            sectionReactors[s] = deployment.Add($"section{s}", s % containers, "stock", "sold");
        }
        var cartReactors = new Reactor[carts];
        for (int c = 0; c < carts; c++)
        {
            var lines = db.Create($"cart{c}.lines", sizeof(long), sections * items);
            for (int l = 0; l < sections * items; l++) lines.Load(l, none);
            cartReactors[c] = deployment.Add($"cart{c}", c % containers, "lines");
        }
        return (new Mart(sectionReactors, cartReactors, items, opening), deployment);
    }

    Mart(Reactor[] sections, Reactor[] carts, int items, long opening)
    {
        _sections = sections;
        _carts = carts;
        Items = items;
        Opening = opening;
        AddItem = new ReactorFunction("add_item", (call, args) =>
        {
            long line = args.Span[0] * items + args.Span[1], quantity = args.Span[2];
            return ValueTask.FromResult(call.Write(call.Reactor.Relation("lines"), line, row => Add(row, quantity)));
        });
        var take = new ReactorFunction("take", Take);
        Checkout = new ReactorFunction("checkout", (call, _) => CheckoutAsync(call, take));
        Stock = new ReactorFunction("stock", (call, args) =>
            ValueTask.FromResult(call.Read(call.Reactor.Relation("stock"), args.Span[0], Value)));
        var count = new ReactorFunction("count", (call, _) =>
        {
            Relation stock = call.Reactor.Relation("stock"), sold = call.Reactor.Relation("sold");
            long sum = 0;
            for (int i = 0; i < items; i++) sum += call.Read(stock, i, Value) + call.Read(sold, i, Value);
            return ValueTask.FromResult(sum);
        });
        Audit = new ReactorFunction("audit", async (call, _) =>
        {
            var counts = new ValueTask<long>[_sections.Length];
            for (int s = 0; s < counts.Length; s++) counts[s] = call.CallAsync(_sections[s], count, default);
            long total = 0;
            foreach (var c in counts) total += await c;
            return total;
        });
    }

    /// <summary>The cart's lines, one call a section that has any (queued on its container), then
    /// the lines emptied; the calls run in parallel with each other.</summary>
    async ValueTask<long> CheckoutAsync(ReactorCall call, ReactorFunction take)
    {
        var lines = call.Reactor.Relation("lines");
        var calls = new List<ValueTask<long>>();
        for (int s = 0; s < _sections.Length; s++)
        {
            var wanted = new List<long>();
            for (int i = 0; i < Items; i++)
            {
                long quantity = call.Read(lines, s * Items + i, Value);
                if (quantity == 0) continue;
                wanted.Add(i);
                wanted.Add(quantity);
                call.Write(lines, s * Items + i, row => Set(row, 0));
            }
            if (wanted.Count > 0) calls.Add(call.CallAsync(_sections[s], take, wanted.ToArray()));
        }
        long bought = 0;
        foreach (var c in calls) bought += await c;
        return bought;
    }

    /// <summary>args: (item, quantity) pairs of one section. Each comes off the stock and onto the
    /// sold count; an item short of stock aborts the whole root, so nothing of the checkout is
    /// written in any container.</summary>
    static ValueTask<long> Take(ReactorCall call, ReadOnlyMemory<long> args)
    {
        var stock = call.Reactor.Relation("stock");
        var sold = call.Reactor.Relation("sold");
        long taken = 0;
        for (int p = 0; p < args.Length; p += 2)
        {
            long item = args.Span[p], quantity = args.Span[p + 1];
            if (call.Read(stock, item, Value) < quantity) call.AbortRoot(); // out of stock
            call.Write(stock, item, row => Add(row, -quantity));
            call.Write(sold, item, row => Add(row, quantity));
            taken += quantity;
        }
        return ValueTask.FromResult(taken);
    }

    /// <summary>Null if the cart, section and item exist; else what does not.</summary>
    public string? Unknown(int? cart, int section, int item) =>
        cart is { } c && (uint)c >= (uint)Carts ? $"no cart {c}: carts are 0..{Carts - 1}"
        : (uint)section >= (uint)Sections ? $"no section {section}: sections are 0..{Sections - 1}"
        : (uint)item >= (uint)Items ? $"no item {item}: items are 0..{Items - 1}"
        : null;

    static long Value(ReadOnlySpan<byte> row) => BinaryPrimitives.ReadInt64LittleEndian(row);

    static long Add(Span<byte> row, long amount)
    {
        long v = BinaryPrimitives.ReadInt64LittleEndian(row) + amount;
        BinaryPrimitives.WriteInt64LittleEndian(row, v);
        return v;
    }

    static long Set(Span<byte> row, long value)
    {
        BinaryPrimitives.WriteInt64LittleEndian(row, value);
        return value;
    }
}
