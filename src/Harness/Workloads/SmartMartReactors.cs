using Contend.Engine.Protocols.ReactDB;
using static Contend.Harness.Workloads.SmartMart;

namespace Contend.Harness.Workloads;

/// <summary>
/// SmartMart deployed: its reactors and the functions they offer (seed 004, Table 1). The two
/// roots run on a cart: <see cref="AddItems"/> (the customer's marketing group, where each item
/// is sold, its price in its section and its fixed discount in the group) and
/// <see cref="Checkout"/> (each section updates its inventory and computes the variable discount
/// of what it sells, in parallel under the async deployment; then the customer's visit is
/// recorded and the cart emptied).
/// </summary>
/// <remarks>A root issues every call to the store sections before it awaits any, one call per
/// section, so that the sections work in parallel and no two sub-transactions of one root meet in
/// one container (which would be the conservative abort).</remarks>
internal sealed class Mart
{
    readonly SmartMart _mart;
    readonly Reactor _store;
    readonly Reactor[] _groups, _sections, _carts, _customers;
    readonly ReactorFunction _group, _locate, _prices, _discount, _purchase, _visit;

    public Mart(SmartMart mart, ReactorDeployment deployment, Reactor store, Reactor[] groups, Reactor[] sections, Reactor[] carts, Reactor[] customers)
    {
        _mart = mart;
        Deployment = deployment;
        _store = store;
        _groups = groups;
        _sections = sections;
        _carts = carts;
        _customers = customers;
        _group = new("get_group", (call, _) => ValueTask.FromResult(call.Read(call.Reactor.Relation("info"), 0, row => Field(row, 0))));
        _locate = new("locate", (call, args) => ValueTask.FromResult(call.Read(call.Reactor.Relation("item_locations"), args.Span[0], row => Field(row, 0))));
        _discount = new("get_discount", (call, args) => ValueTask.FromResult(call.Read(call.Reactor.Relation("discounts"), args.Span[0], row => Field(row, 0))));
        _prices = new("get_prices", GetPrices);
        _purchase = new("purchase", Purchase);
        _visit = new("record_visit", RecordVisit);
        AddItems = new("add_items", AddItemsLogic);
        Checkout = new("checkout", CheckoutLogic);
    }

    public ReactorDeployment Deployment { get; }
    /// <summary>A cart's root: args customer, item count, the items' global ids.</summary>
    public ReactorFunction AddItems { get; }
    /// <summary>A cart's root: no args; buys what add_items put in the cart.</summary>
    public ReactorFunction Checkout { get; }

    public Reactor Cart(int cart) => _carts[cart];

    async ValueTask<long> AddItemsLogic(ReactorCall call, ReadOnlyMemory<long> args)
    {
        long customer = args.Span[0];
        int n = (int)args.Span[1];
        var session = call.Reactor.Relation("session");
        call.Write(session, 0, row =>
        {
            SetField(row, 0, customer);
            SetField(row, 1, 0);
            return 0;
        });
        long group = await call.CallAsync(_customers[customer], _group, default);
        var sectionOf = new int[n];
        var perSection = new int[_sections.Length];
        for (int j = 0; j < n; j++)
        {
            sectionOf[j] = (int)await call.CallAsync(_store, _locate, args.Slice(2 + j, 1));
            perSection[sectionOf[j]]++;
        }
        // One call per section for its items' prices, all issued before any is awaited.
        var items = new long[_sections.Length][];
        var prices = new long[_sections.Length][];
        var pending = new ValueTask<long>[_sections.Length];
        for (int s = 0; s < _sections.Length; s++)
        {
            if (perSection[s] == 0) continue;
            items[s] = new long[perSection[s]];
            prices[s] = new long[perSection[s]];
            perSection[s] = 0;
        }
        for (int j = 0; j < n; j++)
        {
            int s = sectionOf[j];
            items[s][perSection[s]++] = args.Span[2 + j] % _mart.ItemsPerSection;
        }
        for (int s = 0; s < _sections.Length; s++)
            if (items[s] is not null) pending[s] = call.CallAsync(_sections[s], _prices, items[s], prices[s]);
        for (int s = 0; s < _sections.Length; s++)
            if (items[s] is not null) await pending[s];
        Array.Clear(perSection);
        var cartItems = call.Reactor.Relation("items");
        for (int j = 0; j < n; j++)
        {
            long gid = args.Span[2 + j];
            int s = sectionOf[j];
            long price = prices[s][perSection[s]++];
            long fixedBp = await call.CallAsync(_groups[group], _discount, args.Slice(2 + j, 1));
            call.Write(cartItems, j, row =>
            {
                SetField(row, 0, gid);
                SetField(row, 1, 1);
                SetField(row, 2, price);
                SetField(row, 3, fixedBp);
                SetField(row, 4, s);
                return 0;
            });
        }
        call.Write(session, 0, row =>
        {
            SetField(row, 1, n);
            return 0;
        });
        return n;
    }

    /// <summary>A section's prices of the items in args, into the caller's results.</summary>
    ValueTask<long> GetPrices(ReactorCall call, ReadOnlyMemory<long> args)
    {
        var inventory = call.Reactor.Relation("inventory");
        for (int j = 0; j < args.Length; j++) call.Results.Span[j] = call.Read(inventory, args.Span[j], row => Field(row, 0));
        return ValueTask.FromResult((long)args.Length);
    }

    async ValueTask<long> CheckoutLogic(ReactorCall call, ReadOnlyMemory<long> args)
    {
        var session = call.Reactor.Relation("session");
        long customer = call.Read(session, 0, row => Field(row, 0));
        int n = (int)call.Read(session, 0, row => Field(row, 1));
        if (n == 0) call.AbortRoot(); // an empty cart has nothing to buy
        var cartItems = call.Reactor.Relation("items");
        var lines = new long[n * 5];
        var perSection = new int[_sections.Length];
        for (int j = 0; j < n; j++)
        {
            int at = 5 * j;
            call.Read(cartItems, j, row =>
            {
                for (int f = 0; f < 5; f++) lines[at + f] = Field(row, f);
                return 0;
            });
            perSection[lines[at + 4]]++;
        }
        // Each section gets (item, quantity, price, fixed discount) for each of its lines.
        var purchases = new long[_sections.Length][];
        for (int s = 0; s < _sections.Length; s++)
        {
            if (perSection[s] > 0) purchases[s] = new long[4 * perSection[s]];
            perSection[s] = 0;
        }
        for (int j = 0; j < n; j++)
        {
            int s = (int)lines[5 * j + 4];
            var into = purchases[s].AsSpan(4 * perSection[s]++);
            into[0] = lines[5 * j] % _mart.ItemsPerSection;
            into[1] = lines[5 * j + 1];
            into[2] = lines[5 * j + 2];
            into[3] = lines[5 * j + 3];
        }
        var pending = new ValueTask<long>[_sections.Length];
        for (int s = 0; s < _sections.Length; s++)
            if (purchases[s] is not null) pending[s] = call.CallAsync(_sections[s], _purchase, purchases[s]);
        long total = 0;
        for (int s = 0; s < _sections.Length; s++)
            if (purchases[s] is not null) total += await pending[s];
        await call.CallAsync(_customers[customer], _visit, new[] { total });
        call.Write(session, 0, row =>
        {
            SetField(row, 1, 0);
            return 0;
        });
        return total;
    }

    /// <summary>A section sells the items in args: takes them from its inventory, predicts each
    /// one's demand from its purchase history, and returns what they cost after both discounts.</summary>
    ValueTask<long> Purchase(ReactorCall call, ReadOnlyMemory<long> args)
    {
        var inventory = call.Reactor.Relation("inventory");
        var history = call.Reactor.Relation("purchase_history");
        long amount = 0;
        for (int at = 0; at < args.Length; at += 4)
        {
            long item = args.Span[at], quantity = args.Span[at + 1], price = args.Span[at + 2], fixedBp = args.Span[at + 3];
            call.Write(inventory, item, row =>
            {
                long onHand = Field(row, 1) - quantity;
                SetField(row, 1, onHand < 0 ? onHand + 1_000 : onHand); // restocked
                SetField(row, 2, Field(row, 2) + quantity);
                return 0;
            });
            long variableBp = call.Read(history, item, _mart.VariableDiscountBp);
            _mart.Delay();
            amount += price * quantity * (10_000 - fixedBp - variableBp) / 10_000;
        }
        return ValueTask.FromResult(amount);
    }

    /// <summary>A customer records a visit's amount: visits and money spent, and the amount among
    /// the last <see cref="VisitsKept"/>.</summary>
    ValueTask<long> RecordVisit(ReactorCall call, ReadOnlyMemory<long> args)
    {
        long amount = args.Span[0];
        long visits = call.Write(call.Reactor.Relation("info"), 0, row =>
        {
            long v = Field(row, 1) + 1;
            SetField(row, 1, v);
            SetField(row, 2, Field(row, 2) + amount);
            return v;
        });
        call.Write(call.Reactor.Relation("visits"), visits % VisitsKept, row =>
        {
            SetField(row, 0, amount);
            return 0;
        });
        return ValueTask.FromResult(visits);
    }
}
