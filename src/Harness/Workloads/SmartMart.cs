using System.Buffers.Binary;
using System.Diagnostics;
using System.Globalization;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Harness.Workloads;

/// <summary>How SmartMart's reactors are mapped to containers (seed 004, Section 4.1.3).</summary>
internal enum SmartMartDeployment
{
    /// <summary>One container holds every reactor, with an executor per worker thread: each
    /// transaction runs sequentially on one thread, every call synchronous.</summary>
    Sync,
    /// <summary>A container of one executor per store section, and one more for the carts,
    /// customers, group managers and the store: calls to store sections are asynchronous.</summary>
    Async,
}

/// <summary>
/// SmartMart (seed 004, Section 2.3; the application of its reference [34]): an IoT supermarket's
/// self-checkout. A client's interaction is <c>add_items</c> and, once it commits, <c>checkout</c>.
/// </summary>
/// <remarks>
/// The paper's Figure 2 (the schema) is a picture that the seed's text does not carry; its text
/// names four reactor types (Cart, Customer, Group_Manager, Store_Section, the last with
/// <c>inventory</c> and <c>purchase_history</c>) and says there are five types, eight relations,
/// and relations that refer to reactors by name. Decisions, to fill the gap:
/// <list type="bullet">
/// <item>The fifth type is the Store, whose relation <c>item_locations</c> names the store section
/// each item is sold in (the reference to reactors by name); <c>add_items</c> asks it where each
/// scanned item lives.</item>
/// <item>The eight relations: Cart <c>items</c> and <c>session</c>; Customer <c>info</c> (marketing
/// group, visits, money spent) and <c>visits</c> (the last eight amounts); Group_Manager
/// <c>discounts</c> (the fixed discount of each item for its group); Store_Section
/// <c>inventory</c> and <c>purchase_history</c>; Store <c>item_locations</c>.</item>
/// <item>An item's purchase history is one row holding its last 300 daily quantities, not 300
/// rows: a context holds a bounded set of rows, and the trend prediction reads the same 300
/// numbers either way (the paper's equation 1, mean plus standard deviation over the last
/// <c>window</c> of them).</item>
/// <item>The variable discount is the prediction's relative spread, in basis points, capped at
/// 20 %; a section restocks an item by 1,000 when a purchase would take it below zero, so that no
/// checkout fails for stock (the paper's runs have none fail).</item>
/// </list>
/// Scaled to this machine (2 cores, not 2 sockets of 8): 1,000 items per section by default (the
/// paper's 10,000 make 3 GB; the knob takes it), and a cart per client.
/// </remarks>
internal sealed class SmartMart
{
    public const int Groups = 10, CustomersPerCart = 30, HistoryDays = 300, VisitsKept = 8, MaxOrder = 64;
    const int MaxVariableBp = 2_000;

    /// <param name="sectionTheta">0: an order buys an equal share from each of <paramref name="orderSections"/>
    /// sections; above 0: each item's section is drawn by a Zipf law of this exponent over all
    /// sections (seed 004, Section 4.5, which goes from 0.01 to 5)</param>
    public SmartMart(int sections, int itemsPerSection, int orderItems, int orderSections, int window, double delayMicros, double itemTheta, int carts,
                     double sectionTheta = 0)
    {
        if (sections is < 1 or > 15) throw new UsageException($"--sections {sections}: must be in 1..15 (a container each under async)");
        if (itemsPerSection is < 2 or > 1_000_000) throw new UsageException($"--items {itemsPerSection}: must be in 2..1000000");
        if (orderSections < 1 || orderSections > sections) throw new UsageException($"--order-sections {orderSections}: must be in 1..{sections} (--sections)");
        if (orderItems < orderSections || orderItems > MaxOrder || orderItems % orderSections != 0)
            throw new UsageException($"--order-items {orderItems}: must be a multiple of --order-sections ({orderSections}) in {orderSections}..{MaxOrder}");
        if (orderItems / orderSections > itemsPerSection) throw new UsageException($"--order-items {orderItems}: more items per section than a section has ({itemsPerSection})");
        if (window is < 1 or > HistoryDays) throw new UsageException($"--window {window}: must be in 1..{HistoryDays}");
        if (!(delayMicros >= 0) || delayMicros > 100_000) throw new UsageException($"--delay-us {delayMicros.ToString(CultureInfo.InvariantCulture)}: must be in [0, 100000]");
        if (itemTheta is < 0 or >= 1) throw new UsageException($"--item-theta {itemTheta.ToString(CultureInfo.InvariantCulture)}: must be in [0, 1)");
        if (carts is < 1 or > 4096) throw new UsageException($"carts {carts}: must be in 1..4096 (a cart per client)");
        if (!(sectionTheta >= 0) || sectionTheta > 10) throw new UsageException($"--section-theta {sectionTheta.ToString(CultureInfo.InvariantCulture)}: must be in [0, 10]");
        if (sectionTheta > 0 && orderSections != sections)
            throw new UsageException($"--section-theta draws each item's section from all {sections} sections: leave --order-sections at --sections");
        if (sectionTheta > 0 && orderItems > itemsPerSection)
            throw new UsageException($"--section-theta may put all {orderItems} items of an order in one section, which has {itemsPerSection}: raise --items");
        SectionTheta = sectionTheta;
        Sections = sections;
        ItemsPerSection = itemsPerSection;
        OrderItems = orderItems;
        OrderSections = orderSections;
        Window = window;
        DelayTicks = (long)(delayMicros * Stopwatch.Frequency / 1_000_000);
        DelayMicros = delayMicros;
        ItemTheta = itemTheta;
        Carts = carts;
    }

    public int Sections { get; }
    public int ItemsPerSection { get; }
    public int OrderItems { get; }
    public int OrderSections { get; }
    public int Window { get; }
    public double DelayMicros { get; }
    long DelayTicks { get; }
    public double ItemTheta { get; }
    public double SectionTheta { get; }
    public int Carts { get; }

    /// <summary>The most rows a root touches in one container (its context's size): under sync,
    /// add_items reads each item's location, price and discount and writes its cart line, four
    /// rows an item, besides the session and the customer's; checkout touches three an item.</summary>
    public int RowsPerContext => 4 * OrderItems + 16;

    public string Describe(SmartMartDeployment deployment, int executors) =>
        FormattableString.Invariant($"SmartMart: {Sections} store sections x {ItemsPerSection:N0} items (paper: 8 x 10,000), history of {HistoryDays} days per item in one row, window {Window}; ") +
        FormattableString.Invariant($"{Groups} group managers, {Carts} carts, {CustomersPerCart} customers per cart; orders of {OrderItems} items over {OrderSections} sections, ") +
        FormattableString.Invariant($"delay {DelayMicros} us per item, item skew {ItemTheta}, section skew {SectionTheta}; interaction = add_items then checkout; ") +
        (deployment == SmartMartDeployment.Sync
            ? FormattableString.Invariant($"sync deployment: 1 container, {executors} executors")
            : FormattableString.Invariant($"async deployment: {Sections + 1} containers of 1 executor (a section each, one for the rest)"));

    /// <summary>Makes and loads every relation, and maps the reactors to containers.</summary>
    public Mart Deploy(Database db, SmartMartDeployment deployment, ulong seed)
    {
        int items = Sections * ItemsPerSection;
        var rng = Rng.Seed(seed, 0x5A17);
        Span<byte> row = stackalloc byte[HistoryDays * 4];
        var locations = db.Create("store.item_locations", 8, items);
        for (int g = 0; g < items; g++) locations.Load(g, Longs(row, g / ItemsPerSection));
        for (int group = 0; group < Groups; group++)
        {
            var discounts = db.Create($"group{group}.discounts", 8, items);
            for (int g = 0; g < items; g++) discounts.Load(g, Longs(row, (long)(Rng.Next(ref rng) % 1_000))); // up to 10 %
        }
        for (int s = 0; s < Sections; s++)
        {
            var inventory = db.Create($"section{s}.inventory", 24, ItemsPerSection);
            var history = db.Create($"section{s}.purchase_history", HistoryDays * 4, ItemsPerSection);
            for (int i = 0; i < ItemsPerSection; i++)
            {
                inventory.Load(i, Longs(row, 100 + (long)(Rng.Next(ref rng) % 10_000), 1_000, 0)); // price in cents, on hand, sold
                for (int d = 0; d < HistoryDays; d++)
                    BinaryPrimitives.WriteInt32LittleEndian(row[(4 * d)..], (int)(Rng.Next(ref rng) % 50));
                history.Load(i, row);
            }
        }
        for (int k = 0; k < Carts; k++)
        {
            var cartItems = db.Create($"cart{k}.items", 40, MaxOrder); // item, quantity, price, fixed discount, section
            for (int j = 0; j < MaxOrder; j++) cartItems.Load(j, Longs(row, 0));
            db.Create($"cart{k}.session", 16, 1).Load(0, Longs(row, 0, 0));
            for (int c = 0; c < CustomersPerCart; c++)
            {
                db.Create($"customer{k * CustomersPerCart + c}.info", 24, 1).Load(0, Longs(row, (long)(Rng.Next(ref rng) % Groups), 0, 0));
                var visits = db.Create($"customer{k * CustomersPerCart + c}.visits", 8, VisitsKept);
                for (int v = 0; v < VisitsKept; v++) visits.Load(v, Longs(row, 0));
            }
        }

        var map = new ReactorDeployment(db, deployment == SmartMartDeployment.Sync ? 1 : Sections + 1);
        var store = map.Add("store", 0, "item_locations");
        var groups = Enumerable.Range(0, Groups).Select(g => map.Add($"group{g}", 0, "discounts")).ToArray();
        var sections = Enumerable.Range(0, Sections)
                                 .Select(s => map.Add($"section{s}", deployment == SmartMartDeployment.Sync ? 0 : s + 1, "inventory", "purchase_history")).ToArray();
        var carts = Enumerable.Range(0, Carts).Select(k => map.Add($"cart{k}", 0, "items", "session")).ToArray();
        var customers = Enumerable.Range(0, Carts * CustomersPerCart).Select(c => map.Add($"customer{c}", 0, "info", "visits")).ToArray();
        return new Mart(this, map, store, groups, sections, carts, customers);
    }

    static ReadOnlySpan<byte> Longs(Span<byte> into, params ReadOnlySpan<long> values)
    {
        for (int i = 0; i < values.Length; i++) BinaryPrimitives.WriteInt64LittleEndian(into[(8 * i)..], values[i]);
        return into[..(8 * values.Length)];
    }

    internal static long Field(ReadOnlySpan<byte> row, int i) => BinaryPrimitives.ReadInt64LittleEndian(row[(8 * i)..]);

    internal static void SetField(Span<byte> row, int i, long value) => BinaryPrimitives.WriteInt64LittleEndian(row[(8 * i)..], value);

    /// <summary>Spins for the application-logic delay of one item.</summary>
    internal void Delay()
    {
        if (DelayTicks == 0) return;
        long until = Stopwatch.GetTimestamp() + DelayTicks;
        while (Stopwatch.GetTimestamp() < until) Thread.SpinWait(20);
    }

    /// <summary>The trend prediction of seed 004's equation 1 over an item's last
    /// <see cref="Window"/> days: mean plus standard deviation; returns the variable discount in
    /// basis points, the prediction's spread relative to its mean, capped.</summary>
    internal long VariableDiscountBp(ReadOnlySpan<byte> history)
    {
        double sum = 0, squares = 0;
        for (int d = HistoryDays - Window; d < HistoryDays; d++)
        {
            int q = BinaryPrimitives.ReadInt32LittleEndian(history[(4 * d)..]);
            sum += q;
            squares += (double)q * q;
        }
        double mean = sum / Window, sd = Math.Sqrt(Math.Max(0, squares / Window - mean * mean));
        double prediction = mean + sd;
        return Math.Min(MaxVariableBp, (long)(sd / (prediction + 1) * 10_000));
    }

    /// <summary>A client's stream of interactions: its own cart, a uniform customer of the
    /// cart's, <see cref="OrderSections"/> distinct sections and as many distinct items in each
    /// (with <see cref="SectionTheta"/>, each distinct item in a section drawn by the Zipf law).</summary>
    public Client CreateClient(int cart, ulong seed) => new(this, cart, seed);

    internal sealed class Client(SmartMart mart, int cart, ulong seed)
    {
        ulong _rng = Rng.Seed(seed, cart + 1);
        readonly Zipf? _items = mart.ItemTheta > 0 ? new Zipf(mart.ItemsPerSection, mart.ItemTheta) : null;
        readonly int[] _sections = Enumerable.Range(0, mart.Sections).ToArray();
        /// <summary>With section skew: the Zipf law's cumulative weights of sections 0..n-1, the last 1.</summary>
        readonly double[]? _sectionCdf = mart.SectionTheta > 0 ? Cumulative(mart.Sections, mart.SectionTheta) : null;

        static double[] Cumulative(int n, double theta)
        {
            var cdf = new double[n];
            double sum = 0;
            for (int i = 0; i < n; i++) cdf[i] = sum += Math.Pow(i + 1, -theta);
            for (int i = 0; i < n; i++) cdf[i] /= sum;
            return cdf;
        }

        long NextItem() => _items is null ? (long)(Rng.Next(ref _rng) % (ulong)mart.ItemsPerSection) : _items.Next(ref _rng) - 1;

        public int Cart => cart;

        /// <summary>add_items' arguments: customer, item count, the items' global ids.</summary>
        public long[] NextOrder()
        {
            var args = new long[2 + mart.OrderItems];
            args[0] = cart * CustomersPerCart + (long)(Rng.Next(ref _rng) % CustomersPerCart);
            args[1] = mart.OrderItems;
            if (_sectionCdf is not null)
            {
                for (int next = 2; next < args.Length;)
                {
                    double u = Rng.NextDouble(ref _rng);
                    int section = Array.FindIndex(_sectionCdf, c => u < c);
                    if (section < 0) section = _sectionCdf.Length - 1; // u at the last weight's rounding
                    long gid = (long)section * mart.ItemsPerSection + NextItem();
                    if (Array.IndexOf(args, gid, 2, next - 2) < 0) args[next++] = gid;
                }
                return args;
            }
            for (int i = 0; i < mart.OrderSections; i++) // a partial shuffle draws distinct sections
            {
                int j = i + (int)(Rng.Next(ref _rng) % (ulong)(_sections.Length - i));
                (_sections[i], _sections[j]) = (_sections[j], _sections[i]);
            }
            int perSection = mart.OrderItems / mart.OrderSections, at = 2;
            for (int i = 0; i < mart.OrderSections; i++)
            {
                int first = at;
                while (at < first + perSection)
                {
                    long gid = (long)_sections[i] * mart.ItemsPerSection + NextItem();
                    if (Array.IndexOf(args, gid, first, at - first) < 0) args[at++] = gid;
                }
            }
            return args;
        }
    }
}
