using System.Net;
using System.Net.Http.Json;
using System.Text.RegularExpressions;

namespace Contend.Tests;

/// <summary>
/// The sample store (samples/Mart, ReactDB behind AddReactDb) as its users meet it: a process
/// on loopback, carts filled and checked out by concurrent HTTP callers while audits run, then
/// stopped by SIGTERM. Every response is checked; every audit, one root across every section's
/// container, finds stock plus sold unchanged; the stock left is the opening less what the
/// committed checkouts bought; bad input gets a 404 or 400 naming it; the stop drains the engine
/// and its history is serializable.
/// </summary>
public partial class MartServiceTests
{
    const int Carts = 8, Rounds = 40, AuditEvery = 10, Sections = 4, Items = 4, Opening = 30;
    static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    record InCart(int Section, int Item, long Quantity);
    record Bought(long Items);
    record Stocked(int Section, int Item, long Stock);
    record Audit(long Total, long Expected);
    record Refusal(string Error);

    [GeneratedRegex(@"history of (\d+) committed transactions checked: serializable")]
    private static partial Regex Serializable();

    [Fact]
    public async Task ConcurrentCheckoutsKeepTheStockAndASerializableHistory()
    {
        using var service = SampleProcess.Start("Mart", "--urls", "http://127.0.0.1:0", "--ReactDB:RecordHistory=true",
                                                "--Mart:Containers=2", $"--Mart:Sections={Sections}", $"--Mart:Items={Items}",
                                                $"--Mart:Carts={Carts}", $"--Mart:Opening={Opening}");
        using var http = new HttpClient { BaseAddress = new Uri(await service.Url.WaitAsync(Patience)), Timeout = Patience };
        const long expected = Sections * Items * Opening;
        long committed = 0, bought = 0, refused = 0;
        var callers = Enumerable.Range(0, Carts).Select(cart => Task.Run(async () =>
        {
            var rng = new Random(cart);
            for (int round = 0; round < Rounds; round++)
            {
                if (round % AuditEvery == AuditEvery - 1)
                {
                    var audit = await http.GetFromJsonAsync<Audit>("/audit");
                    Assert.Equal(new Audit(expected, expected), audit); // one root over both containers while checkouts run
                    Interlocked.Increment(ref committed);
                }
                for (int line = 1 + rng.Next(2); line > 0; line--)
                {
                    int section = rng.Next(Sections), item = rng.Next(Items), quantity = 1 + rng.Next(3);
                    using var added = await http.PostAsJsonAsync($"/carts/{cart}/items", new { section, item, quantity });
                    Assert.Equal(HttpStatusCode.OK, added.StatusCode);
                    var inCart = await added.Content.ReadFromJsonAsync<InCart>();
                    Assert.True(inCart!.Quantity >= quantity && inCart.Section == section && inCart.Item == item, $"{inCart}");
                    Interlocked.Increment(ref committed);
                }
                using var checkout = await http.PostAsync($"/carts/{cart}/checkout", null);
                if (checkout.StatusCode == HttpStatusCode.OK)
                {
                    Interlocked.Add(ref bought, (await checkout.Content.ReadFromJsonAsync<Bought>())!.Items);
                    Interlocked.Increment(ref committed);
                }
                else
                {
                    Assert.True(checkout.StatusCode == HttpStatusCode.Conflict, $"{checkout.StatusCode}: {await checkout.Content.ReadAsStringAsync()}");
                    Assert.Equal("refused: out of stock", (await checkout.Content.ReadFromJsonAsync<Refusal>())!.Error);
                    Interlocked.Increment(ref refused);
                }
            }
        })).ToArray();
        await Task.WhenAll(callers).WaitAsync(Patience);
        Assert.True(bought > 0 && refused > 0, $"{bought} items bought, {refused} checkouts refused: the run shows neither a sale or a shortage");

        long left = 0;
        for (int s = 0; s < Sections; s++)
            for (int i = 0; i < Items; i++)
            {
                var stocked = await http.GetFromJsonAsync<Stocked>($"/sections/{s}/items/{i}");
                Assert.True(stocked!.Stock >= 0, $"{stocked}");
                left += stocked.Stock;
                committed++;
            }
        Assert.Equal(expected - bought, left);

        using (var unknown = await http.PostAsync($"/carts/{Carts}/checkout", null))
        {
            Assert.Equal(HttpStatusCode.NotFound, unknown.StatusCode);
            Assert.Equal($"no cart {Carts}: carts are 0..{Carts - 1}", (await unknown.Content.ReadFromJsonAsync<Refusal>())!.Error);
        }
        using (var none = await http.PostAsJsonAsync("/carts/0/items", new { section = 0, item = 0, quantity = 0 }))
        {
            Assert.Equal(HttpStatusCode.BadRequest, none.StatusCode);
            Assert.Equal("quantity 0: add at least one", (await none.Content.ReadFromJsonAsync<Refusal>())!.Error);
        }

        string log = service.Stop(Patience);
        var verdict = Serializable().Match(log);
        Assert.True(verdict.Success, log);
        // The history holds a root once for each container it used: a checkout or an audit, two.
        Assert.InRange(long.Parse(verdict.Groups[1].Value), committed, 2 * committed);
    }
}
