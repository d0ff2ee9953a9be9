using System.Buffers.Binary;
using Contend.Engine.Runtime;
using Contend.Harness.Workloads;
using Orleans.Transactions.Abstractions;

namespace Contend.Harness.Peers;

// SmartMart's reactors as Orleans transactional grains (the peer of ReactDB's study): a grain per
// reactor, of the same five types, each relation that the workload writes an ITransactionalState.
// Decisions, each of which favours Orleans, so that a ratio against it is not flattered:
// - Relations the workload never writes (item locations, discounts, prices, purchase histories,
//   a customer's group) are plain fields made at activation: Orleans neither copies nor locks
//   them, where ReactDB reads and validates them as rows.
// - add_items asks the store where its items live, and the group for their discounts, in one
//   call each; ReactDB makes a call per item (synchronous, in the cart's container).
// - checkout calls its sections one after another in ascending order, where ReactDB's async
//   deployment calls them all at once. Here a lock wait ended only at Orleans' timeouts (seconds):
//   called at once, two checkouts took their sections in different orders, deadlocked, and the
//   peer fell to 4 txn/s at 4 carts, one call hanging past the client's 30 s. In one order
//   (its own cart, which no other client touches, then its sections ascending, then its
//   customer), no two checkouts can wait for each other in a cycle.
// The grains compute what ReactDB's reactors do (SmartMartReactors.cs): the same prices, the
// same trend prediction over the same history window, the same logic delay per item.

/// <summary>A cart: SmartMart's two transactions.</summary>
public interface IMartCart : IGrainWithIntegerKey
{
    /// <summary>add_items: the customer's group, where each item is sold, its price and its fixed
    /// discount; the cart's lines written.</summary>
    [Transaction(TransactionOption.Create)]
    Task<int> AddItems(long customer, long[] items);

    /// <summary>checkout: each section sells its lines, the customer's visit is recorded, the cart emptied.</summary>
    [Transaction(TransactionOption.Create)]
    Task<long> Checkout();
}

/// <summary>A customer: its marketing group and its visits.</summary>
public interface IMartCustomer : IGrainWithIntegerKey
{
    [Transaction(TransactionOption.Supported)]
    Task<int> Group();

    [Transaction(TransactionOption.Join)]
    Task RecordVisit(long amount);
}

/// <summary>A store section: its inventory, prices and purchase histories.</summary>
public interface IMartSection : IGrainWithIntegerKey
{
    [Transaction(TransactionOption.Supported)]
    Task<long[]> Prices(long[] items);

    /// <summary>Sells (item, quantity, price, fixed discount) lines; returns what they cost after both discounts.</summary>
    [Transaction(TransactionOption.Join)]
    Task<long> Purchase(long[] lines);
}

/// <summary>The store: where each item is sold.</summary>
public interface IMartStore : IGrainWithIntegerKey
{
    [Transaction(TransactionOption.Supported)]
    Task<int[]> Locate(long[] items);
}

/// <summary>A group manager: each item's fixed discount for its group, in basis points.</summary>
public interface IMartGroup : IGrainWithIntegerKey
{
    [Transaction(TransactionOption.Supported)]
    Task<long[]> Discounts(long[] items);
}

/// <summary>A cart's session and lines (item, quantity, price, fixed discount, section).</summary>
[GenerateSerializer]
public sealed class CartState
{
    [Id(0)] public long Customer { get; set; }
    [Id(1)] public int Count { get; set; }
    [Id(2)] public long[] Lines { get; set; } = new long[5 * SmartMart.MaxOrder];
}

/// <summary>A customer's visits, money spent and last amounts.</summary>
[GenerateSerializer]
public sealed class VisitsState
{
    [Id(0)] public long Visits { get; set; }
    [Id(1)] public long Spent { get; set; }
    [Id(2)] public long[] Last { get; set; } = new long[SmartMart.VisitsKept];
}

/// <summary>A section's stock and sales per item; empty until its first sale, then sized.</summary>
[GenerateSerializer]
public sealed class InventoryState
{
    [Id(0)] public long[] OnHand { get; set; } = [];
    [Id(1)] public long[] Sold { get; set; } = [];
}

/// <summary>The mart the grains serve, and the seed their generated data comes from.</summary>
internal sealed record OrleansMart(SmartMart Mart, ulong Seed);

internal sealed class MartCartGrain(OrleansMart mart, [TransactionalState("cart")] ITransactionalState<CartState> cart) : Grain, IMartCart
{
    public async Task<int> AddItems(long customer, long[] items)
    {
        int group = await GrainFactory.GetGrain<IMartCustomer>(customer).Group();
        int[] sectionOf = await GrainFactory.GetGrain<IMartStore>(0).Locate(items);
        int sections = mart.Mart.Sections, perItem = mart.Mart.ItemsPerSection;
        var asked = new Task<long[]>?[sections];
        var bySection = Enumerable.Range(0, sections).Select(s => items.Where((_, j) => sectionOf[j] == s).Select(g => g % perItem).ToArray()).ToArray();
        for (int s = 0; s < sections; s++)
            if (bySection[s].Length > 0) asked[s] = GrainFactory.GetGrain<IMartSection>(s).Prices(bySection[s]);
        var prices = new long[sections][];
        for (int s = 0; s < sections; s++)
            if (asked[s] is { } p) prices[s] = await p;
        long[] discounts = await GrainFactory.GetGrain<IMartGroup>(group).Discounts(items);
        var next = new int[sections];
        await cart.PerformUpdate(state =>
        {
            state.Customer = customer;
            state.Count = items.Length;
            for (int j = 0; j < items.Length; j++)
            {
                int s = sectionOf[j];
                state.Lines[5 * j] = items[j];
                state.Lines[5 * j + 1] = 1;
                state.Lines[5 * j + 2] = prices[s][next[s]++];
                state.Lines[5 * j + 3] = discounts[j];
                state.Lines[5 * j + 4] = s;
            }
        });
        return items.Length;
    }

    public async Task<long> Checkout()
    {
        var (customer, lines) = await cart.PerformRead(state => (state.Customer, state.Lines.AsSpan(0, 5 * state.Count).ToArray()));
        int sections = mart.Mart.Sections, perItem = mart.Mart.ItemsPerSection;
        var purchases = new List<long>[sections];
        for (int j = 0; j < lines.Length / 5; j++)
        {
            int s = (int)lines[5 * j + 4];
            (purchases[s] ??= new()).AddRange([lines[5 * j] % perItem, lines[5 * j + 1], lines[5 * j + 2], lines[5 * j + 3]]);
        }
        long total = 0;
        for (int s = 0; s < sections; s++)
            if (purchases[s] is { } p) total += await GrainFactory.GetGrain<IMartSection>(s).Purchase(p.ToArray());
        await GrainFactory.GetGrain<IMartCustomer>(customer).RecordVisit(total);
        await cart.PerformUpdate(state => state.Count = 0);
        return total;
    }
}

internal sealed class MartCustomerGrain(OrleansMart mart, [TransactionalState("visits")] ITransactionalState<VisitsState> visits) : Grain, IMartCustomer
{
    public Task<int> Group()
    {
        ulong rng = Rng.Seed(mart.Seed, (int)this.GetPrimaryKeyLong() + 1);
        return Task.FromResult((int)(Rng.Next(ref rng) % SmartMart.Groups));
    }

    public Task RecordVisit(long amount) => visits.PerformUpdate(state =>
    {
        state.Visits++;
        state.Spent += amount;
        state.Last[state.Visits % SmartMart.VisitsKept] = amount;
    });
}

internal sealed class MartSectionGrain(OrleansMart mart, [TransactionalState("inventory")] ITransactionalState<InventoryState> inventory) : Grain, IMartSection
{
    long[] _prices = [];
    byte[][] _history = [];

    public override Task OnActivateAsync(CancellationToken cancellationToken)
    {
        int items = mart.Mart.ItemsPerSection;
        ulong rng = Rng.Seed(mart.Seed, 0x5EC0 + (int)this.GetPrimaryKeyLong());
        _prices = new long[items];
        _history = new byte[items][];
        for (int i = 0; i < items; i++)
        {
            _prices[i] = 100 + (long)(Rng.Next(ref rng) % 10_000);
            _history[i] = new byte[SmartMart.HistoryDays * 4];
            for (int d = 0; d < SmartMart.HistoryDays; d++)
                BinaryPrimitives.WriteInt32LittleEndian(_history[i].AsSpan(4 * d), (int)(Rng.Next(ref rng) % 50));
        }
        return Task.CompletedTask;
    }

    public Task<long[]> Prices(long[] items) => Task.FromResult(Array.ConvertAll(items, i => _prices[i]));

    public Task<long> Purchase(long[] lines) => inventory.PerformUpdate(state =>
    {
        if (state.OnHand.Length == 0)
        {
            state.OnHand = Enumerable.Repeat(1_000L, mart.Mart.ItemsPerSection).ToArray();
            state.Sold = new long[mart.Mart.ItemsPerSection];
        }
        long amount = 0;
        for (int at = 0; at < lines.Length; at += 4)
        {
            long item = lines[at], quantity = lines[at + 1], price = lines[at + 2], fixedBp = lines[at + 3];
            long onHand = state.OnHand[item] - quantity;
            state.OnHand[item] = onHand < 0 ? onHand + 1_000 : onHand; // restocked
            state.Sold[item] += quantity;
            long variableBp = mart.Mart.VariableDiscountBp(_history[item]);
            mart.Mart.Delay();
            amount += price * quantity * (10_000 - fixedBp - variableBp) / 10_000;
        }
        return amount;
    });
}

internal sealed class MartStoreGrain(OrleansMart mart) : Grain, IMartStore
{
    public Task<int[]> Locate(long[] items) => Task.FromResult(Array.ConvertAll(items, g => (int)(g / mart.Mart.ItemsPerSection)));
}

internal sealed class MartGroupGrain(OrleansMart mart) : Grain, IMartGroup
{
    long[] _discounts = [];

    public override Task OnActivateAsync(CancellationToken cancellationToken)
    {
        ulong rng = Rng.Seed(mart.Seed, 0x6000 + (int)this.GetPrimaryKeyLong());
        _discounts = new long[mart.Mart.Sections * mart.Mart.ItemsPerSection];
        for (int g = 0; g < _discounts.Length; g++) _discounts[g] = (long)(Rng.Next(ref rng) % 1_000); // up to 10 %
        return Task.CompletedTask;
    }

    public Task<long[]> Discounts(long[] items) => Task.FromResult(Array.ConvertAll(items, g => _discounts[g]));
}
