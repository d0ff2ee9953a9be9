using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Hosting;
using Contend.Samples.Bank;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

// Settings beside the program (appsettings.json), wherever it is started from.
var builder = WebApplication.CreateBuilder(new WebApplicationOptions { Args = args, ContentRootPath = AppContext.BaseDirectory });
int accounts = builder.Configuration.GetValue("Bank:Accounts", 16);
long opening = builder.Configuration.GetValue("Bank:Opening", 1_000L);

// docs: embed begin
// The engine: options from the "Contend" section, the accounts loaded and the programs built
// once, started with the host and drained when it stops.
builder.Services.AddContend((db, _) => Bank.Open(db, accounts, opening));

var telemetry = builder.Services.AddOpenTelemetry()
    .WithMetrics(metrics => metrics.AddMeter(ContendEngine.TelemetryName).AddPrometheusExporter());
if (builder.Configuration["OTEL_EXPORTER_OTLP_ENDPOINT"] is not null) // spans go to a collector when there is one
    telemetry.WithTracing(tracing => tracing.AddSource(ContendEngine.TelemetryName).AddOtlpExporter());

var app = builder.Build();

app.MapPost("/transfers", async (Transfer t, ContendEngine engine, Bank bank, CancellationToken cancel) =>
{
    if ((bank.Unknown(t.From) ?? bank.Unknown(t.To)) is { } unknown) return Results.NotFound(new Refusal(unknown));
    if (t.From == t.To || t.Amount <= 0) return Results.BadRequest(new Refusal("a transfer moves a positive amount between two accounts"));
    var balances = new long[2];
    TxnOutcome outcome = await engine.ExecuteAsync(bank.Transfer, [t.From, t.To, t.Amount], balances, cancel);
    return outcome switch
    {
        { Committed: true } => Results.Ok(new Transferred(balances[0], balances[1])),
        { Reason: AbortReason.KeyNotFound } => Results.NotFound(new Refusal("no such account")),
        { Outcome: Outcome.Aborted } => Results.StatusCode(StatusCodes.Status503ServiceUnavailable), // gave up: retry later
        _ => Results.Conflict(new Refusal($"refused: {outcome.Reason}")), // not enough money
    };
});
// docs: embed end

app.MapGet("/accounts/{id:long}", async (long id, ContendEngine engine, Bank bank, CancellationToken cancel) =>
{
    if (bank.Unknown(id) is { } unknown) return Results.NotFound(new Refusal(unknown));
    var balance = new long[1];
    await engine.ExecuteAsync(bank.Balance, [id], balance, cancel);
    return Results.Ok(new Account(id, balance[0]));
});

app.MapGet("/audit", async (ContendEngine engine, Bank bank, CancellationToken cancel) =>
{
    var balances = new long[bank.Accounts];
    await engine.ExecuteAsync(bank.Audit, [.. Enumerable.Range(0, bank.Accounts).Select(a => (long)a)], balances, cancel);
    return Results.Ok(new Audit(balances.Sum(), bank.Accounts * bank.Opening, balances));
});

app.MapPrometheusScrapingEndpoint(); // /metrics

// The engine's typed failures as HTTP: shed load and closing are 503s a client may retry later.
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

record Transfer(long From, long To, long Amount);
record Transferred(long FromBalance, long ToBalance);
record Account(long Id, long Balance);
record Audit(long Total, long Expected, long[] Balances);
record Refusal(string Error);
