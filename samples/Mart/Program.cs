using Contend.Engine.Protocols;
using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Hosting;
using Contend.Samples.Mart;

// Settings beside the program (appsettings.json), wherever it is started from.
var builder = WebApplication.CreateBuilder(new WebApplicationOptions { Args = args, ContentRootPath = AppContext.BaseDirectory });
var store = builder.Configuration.GetSection("Mart");
Mart? mart = null;

// The engine: options from the "ReactDB" section, the store loaded and deployed once, started
// with the host and drained when it stops (its history checked then, when it records one).
builder.Services.AddReactDb((db, _) =>
{
    (mart, var deployment) = Mart.Open(db, store.GetValue("Containers", 2), store.GetValue("Sections", 4), store.GetValue("Items", 4),
                                       store.GetValue("Carts", 8), store.GetValue("Opening", 30L));
    return deployment;
});

var app = builder.Build();
var engine = app.Services.GetRequiredService<ReactDbEngine>(); // loads the store now, not at the first request
var shop = mart!;

app.MapPost("/carts/{cart:int}/items", async (int cart, Line line, CancellationToken cancel) =>
{
    if (shop.Unknown(cart, line.Section, line.Item) is { } unknown) return Results.NotFound(new Refusal(unknown));
    if (line.Quantity <= 0) return Results.BadRequest(new Refusal($"quantity {line.Quantity}: add at least one"));
    var r = await engine.ExecuteAsync(shop.Cart(cart), shop.AddItem, new long[] { line.Section, line.Item, line.Quantity }, cancel);
    return r.Outcome.Committed ? Results.Ok(new InCart(line.Section, line.Item, r.Value)) : Results.Conflict(new Refusal($"refused: {r.Outcome.Reason}"));
});

app.MapPost("/carts/{cart:int}/checkout", async (int cart, CancellationToken cancel) =>
{
    if (shop.Unknown(cart, 0, 0) is { } unknown) return Results.NotFound(new Refusal(unknown));
    var r = await engine.ExecuteAsync(shop.Cart(cart), shop.Checkout, default, cancel);
    return r.Outcome.Committed ? Results.Ok(new Bought(r.Value))
         : Results.Conflict(new Refusal(r.Outcome.Outcome == Outcome.UserAborted ? "refused: out of stock" : $"refused: {r.Outcome.Reason}"));
});

app.MapGet("/sections/{section:int}/items/{item:int}", async (int section, int item, CancellationToken cancel) =>
{
    if (shop.Unknown(null, section, item) is { } unknown) return Results.NotFound(new Refusal(unknown));
    var r = await engine.ExecuteAsync(shop.Section(section), shop.Stock, new long[] { item }, cancel);
    return Results.Ok(new Stocked(section, item, r.Value));
});

app.MapGet("/audit", async (CancellationToken cancel) =>
{
    var r = await engine.ExecuteAsync(shop.Office, shop.Audit, default, cancel);
    return Results.Ok(new Audit(r.Value, shop.Sections * shop.Items * shop.Opening));
});

// The engine's typed failures as HTTP: closing is a 503 a client may retry elsewhere.
app.Use(async (context, next) =>
{
    try
    {
        await next(context);
    }
    catch (ContendException e) when (!context.Response.HasStarted)
    {
        context.Response.StatusCode = e.Retryable || e is EngineClosedException ? StatusCodes.Status503ServiceUnavailable : StatusCodes.Status500InternalServerError;
        await context.Response.WriteAsJsonAsync(new Refusal(e.Message));
    }
});

app.Run();

record Line(int Section, int Item, long Quantity);
record InCart(int Section, int Item, long Quantity);
record Bought(long Items);
record Stocked(int Section, int Item, long Stock);
record Audit(long Total, long Expected);
record Refusal(string Error);
