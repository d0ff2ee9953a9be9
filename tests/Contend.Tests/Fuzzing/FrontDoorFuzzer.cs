using Contend.Engine.History;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;

namespace Contend.Tests.Fuzzing;

/// <summary>How the calls of a run ended, by kind ("Committed", "UserAborted/KeyNotFound",
/// "DuplicateKey in one post", an exception's type name).</summary>
public sealed class FuzzTally
{
    readonly Dictionary<string, int> _kinds = new();

    public IReadOnlyDictionary<string, int> Kinds => _kinds;

    public void Add(FrontDoorFuzzer.Ended ended)
    {
        string kind = ended.Error is OperationCanceledException ? nameof(OperationCanceledException)
            : ended.Error is { } e ? e.GetType().Name
            : ended.Outcome!.Value is { Committed: true } ? "Committed"
            : ended.Outcome.Value.Duplicate is { InsertedBy: not null } ? "DuplicateKey in one post"
            : $"{ended.Outcome.Value.Outcome}/{ended.Outcome.Value.Reason}";
        lock (_kinds) _kinds[kind] = _kinds.GetValueOrDefault(kind) + 1;
    }

    public override string ToString() => string.Join(", ", _kinds.OrderByDescending(k => k.Value).Select(k => $"{k.Key} {k.Value}"));
}

/// <summary>A property of a case that did not hold: its message says which and where.</summary>
public sealed class FuzzViolation(string message) : Exception(message);

/// <summary>
/// Runs one <see cref="FrontDoorCase"/> through <see cref="ContendEngine"/>'s front door and
/// checks what every user of it may rely on: every call's task ends within a bound, with an
/// outcome or an exception its inputs allow (typed: a <see cref="ContendException"/>, or the
/// caller's own cancellation); after the run no lock is left held (a sweep that writes every
/// account commits), the money is all there, the ledger holds the loaded entries and each
/// committed post's, and no more rows, and the history is serializable; and the engine's
/// disposal ends, in the middle of the calls or after them.
/// </summary>
public static class FrontDoorFuzzer
{
    /// <summary>How long every call of a case, together, and then each check may take.</summary>
    public static TimeSpan Bound { get; set; } = TimeSpan.FromSeconds(20);

    public static IReadOnlyList<string> Protocols { get; } = ProtocolRegistry.Names;

    /// <summary>Runs the case; adds how each call ended to <paramref name="tally"/> (by outcome and
    /// reason, or by exception), so that a run can show it reached every kind of ending.</summary>
    public static async Task Run(FrontDoorCase c, FuzzTally? tally = null)
    {
        // Only where every wait ends at the deadline: a batch protocol runs a drawn transaction to its end.
        bool hold = c.DeadlineMs is not null && ProtocolRegistry.TryFind(c.Protocol, out var descriptor) && descriptor.Kind == ProtocolKind.PerTransaction;
        var bank = new FuzzBank(c, holdClaims: hold);
        var options = new EngineOptions
        {
            Protocol = c.Protocol, Workers = c.Workers, RecordHistory = true, Name = "fuzz",
            Deadline = c.DeadlineMs is int ms ? TimeSpan.FromMilliseconds(ms) : null, MaxAttempts = c.MaxAttempts,
            QueueCapacity = c.QueueCapacity, WhenQueueFull = c.WhenFull,
        };
        var engine = new ContendEngine(bank.Db, options);
        await Drive(c.Calls, call => call.CancelAfterMs, (call, cancel) => Call(engine, bank, call, cancel), c.DisposeAfter, engine, async (calls, disposed) =>
        {
            if (bank.HeldTooLong is { } held) throw new FuzzViolation($"a wait for another insert's claim did not end at its deadline: {held}");
            for (int i = 0; i < calls.Length; i++)
            {
                Allowed(c, i, calls[i], disposed);
                tally?.Add(calls[i]);
            }
            if (!disposed) await Quiesced(c, engine, bank, calls);
        });
    }

    /// <summary>
    /// What a case of either front door does with its calls: makes them all at once, each with
    /// its cancellation, disposes the engine after call <paramref name="disposeAfter"/> (never
    /// when it is negative), waits for every call within <see cref="Bound"/>, then hands their
    /// endings to <paramref name="check"/> (told whether the engine was disposed), and at the end
    /// disposes the engine, which must end within the bound too. What breaks first is what the
    /// failure names; a disposal that then hangs is said after it.
    /// </summary>
    internal static async Task Drive<TCall>(IReadOnlyList<TCall> calls, Func<TCall, int> cancelAfterMs, Func<TCall, CancellationToken, Task<Ended>> start,
                                            int disposeAfter, IAsyncDisposable engine, Func<Ended[], bool, Task> check) where TCall : notnull
    {
        var running = new Task<Ended>[calls.Count];
        var cancels = new List<CancellationTokenSource>();
        Task? disposal = null;
        Exception? broken = null;
        try
        {
            for (int i = 0; i < calls.Count; i++)
            {
                if (i == disposeAfter) disposal = engine.DisposeAsync().AsTask();
                int after = cancelAfterMs(calls[i]);
                CancellationTokenSource? cancel = after < 0 ? null : new CancellationTokenSource();
                if (cancel is not null)
                {
                    cancels.Add(cancel);
                    if (after == 0) cancel.Cancel();
                    else cancel.CancelAfter(after);
                }
                running[i] = start(calls[i], cancel?.Token ?? default);
            }
            if (disposeAfter >= calls.Count) disposal = engine.DisposeAsync().AsTask();
            var all = Task.WhenAll(running);
            if (await Task.WhenAny(all, Task.Delay(Bound)) != all)
            {
                var open = Enumerable.Range(0, running.Length).Where(i => !running[i].IsCompleted).Select(i => $"call {i}, {calls[i]}");
                var done = Enumerable.Range(0, running.Length).Where(i => running[i].IsCompleted).Select(i => $"{i}: {Describe(running[i].Result)}");
                throw new FuzzViolation($"calls did not end within {Bound.TotalSeconds} s: {string.Join("; ", open)} (the others ended: {string.Join("; ", done)})");
            }
            await check([.. running.Select(t => t.Result)], disposal is not null);
        }
        catch (Exception e)
        {
            broken = e;
        }
        disposal ??= engine.DisposeAsync().AsTask();
        bool ended = await Task.WhenAny(disposal, Task.Delay(Bound)) == disposal;
        foreach (var cancel in cancels) cancel.Dispose();
        string stuck = ended ? "" : $"the engine's disposal did not end within {Bound.TotalSeconds} s";
        if (broken is FuzzViolation v) throw new FuzzViolation(ended ? v.Message : $"{v.Message}; then {stuck}");
        if (broken is not null) throw new FuzzViolation($"{broken.GetType().Name}: {broken.Message}{(ended ? "" : "; then " + stuck)}\n{broken}");
        if (!ended) throw new FuzzViolation(stuck);
    }

    static string Describe(Ended ended) => ended.Error is { } e ? e.GetType().Name : ended.Outcome!.Value is var o && o.Committed ? "Committed" : $"{ended.Outcome!.Value.Outcome} {ended.Outcome.Value.Reason}";

    /// <summary>How a call ended: its outcome, or what its task threw.</summary>
    public readonly record struct Ended(TxnOutcome? Outcome, Exception? Error, bool Cancelled, long[] Results);

    static async Task<Ended> Call(ContendEngine engine, FuzzBank bank, FuzzCall call, CancellationToken cancel)
    {
        var program = bank[call.Program];
        var results = new long[program.Ops.Length];
        try
        {
            var outcome = await engine.ExecuteAsync(program, call.Args, results, cancel);
            return new Ended(outcome, null, cancel.IsCancellationRequested, results);
        }
        catch (Exception e)
        {
            return new Ended(null, e, cancel.IsCancellationRequested, results);
        }
    }

    /// <summary>Whether call <paramref name="i"/> ended in a way its inputs allow.</summary>
    static void Allowed(FrontDoorCase c, int i, Ended ended, bool disposed)
    {
        var call = c.Calls[i];
        var a = call.Args;
        bool Missing(long account) => account >= c.Accounts;
        bool anyMissing = call.Program switch
        {
            FuzzProgram.Transfer => Missing(a[0]) || Missing(a[1]),
            FuzzProgram.Post => Missing(a[0]),
            FuzzProgram.Read => Missing(a[0]) || Missing(a[1]),
            _ => false,
        };
        bool aborts = call.Program is FuzzProgram.Transfer or FuzzProgram.Post && a[3] == FuzzMode.Abort;
        bool throws = call.Program is FuzzProgram.Transfer or FuzzProgram.Post && a[3] == FuzzMode.Throw;
        // StealDB runs each op under its own row's lock: two ops on one row are the program's failure there.
        bool oneRowTwice = call.Program == FuzzProgram.Transfer && a[0] == a[1] || call.Program == FuzzProgram.Read && a[0] == a[1];
        string where = $"call {i}, {call}";
        if (ended.Error is { } error)
        {
            bool ok = error switch
            {
                OperationCanceledException => ended.Cancelled,
                EngineQueueFullException => c.WhenFull == WhenQueueFull.Refuse,
                EngineClosedException => disposed,
                TransactionFailedException f => f.InnerException is FuzzBodyException ? throws
                                              : c.Protocol.StartsWith("StealDB", StringComparison.Ordinal) && oneRowTwice,
                _ => false,
            };
            if (!ok) throw new FuzzViolation($"{where}: ended with {error.GetType().Name}: {error.Message}");
            return;
        }
        var outcome = ended.Outcome!.Value;
        bool allowed = outcome.Outcome switch
        {
            Outcome.Committed => !anyMissing && !aborts && !throws && (call.Program != FuzzProgram.Post || a[1] != a[2]),
            Outcome.UserAborted => outcome.Reason switch
            {
                AbortReason.KeyNotFound => anyMissing,
                AbortReason.User => aborts,
                AbortReason.DuplicateKey => call.Program == FuzzProgram.Post && outcome.Duplicate is { } d
                                            && (d.InsertedBy is null ? true : a[1] == a[2] && d.InsertedBy == "first" && d.Op == "second"),
                AbortReason.TableFull => call.Program == FuzzProgram.Post,
                _ => false,
            },
            // A conflict that used up the attempts, or the deadline; never for a reason that is final.
            Outcome.Aborted => !outcome.Reason.IsFinal() && (outcome.Reason == AbortReason.Deadline ? c.DeadlineMs is not null : c.MaxAttempts is not null),
            _ => false,
        };
        if (!allowed) throw new FuzzViolation($"{where}: ended {outcome.Outcome} ({outcome.Reason}{(outcome.Duplicate is { } dup ? $": {dup}" : "")}), which its inputs do not allow");
        if (outcome.Committed && call.Program == FuzzProgram.Audit && ended.Results.Sum() != c.Accounts * FuzzBank.Opening)
            throw new FuzzViolation($"{where}: a committed audit saw {ended.Results.Sum()}, not the {c.Accounts * FuzzBank.Opening} the bank holds");
    }

    /// <summary>A transaction run with nothing else running: it commits at once unless something
    /// was left held. A deadline of a millisecond or two can still pass before it is done (a
    /// thread descheduled): it is tried a few times more then, and a conflict abort (the attempts
    /// a case allows may be one) too.</summary>
    static async Task<TxnOutcome> Alone(FrontDoorCase c, ContendEngine engine, Engine.Programs.TxnProgram program, long[] results, CancellationToken cancel)
    {
        TxnOutcome outcome = default;
        for (int tries = 0; tries < 5; tries++)
        {
            outcome = await engine.ExecuteAsync(program, [], results, cancel);
            if (outcome.Committed || outcome.Outcome != Outcome.Aborted) return outcome;
            if (outcome.Reason == AbortReason.Deadline ? c.DeadlineMs is null : c.MaxAttempts is null) return outcome;
            await Task.Delay(10, cancel);
        }
        return outcome;
    }

    /// <summary>After every call has ended, with the engine still serving.</summary>
    static async Task Quiesced(FrontDoorCase c, ContendEngine engine, FuzzBank bank, Ended[] calls)
    {
        using var patience = new CancellationTokenSource(Bound);
        var swept = await Alone(c, engine, bank.Sweep(), [], patience.Token);
        if (!swept.Committed) throw new FuzzViolation($"sweeps that write every account, alone, ended {swept.Outcome} ({swept.Reason}): a lock was left held");
        var balances = new long[c.Accounts];
        var audit = await Alone(c, engine, bank[FuzzProgram.Audit], balances, patience.Token);
        if (!audit.Committed || balances.Sum() != c.Accounts * FuzzBank.Opening)
            throw new FuzzViolation($"after the calls the accounts hold {balances.Sum()} (audit {audit.Outcome}), not {c.Accounts * FuzzBank.Opening}");
        var inserted = new HashSet<long>();
        for (int i = 0; i < calls.Length; i++)
            if (c.Calls[i].Program == FuzzProgram.Post && calls[i].Outcome is { Committed: true })
            {
                foreach (long key in c.Calls[i].Args[1..3])
                    if (!inserted.Add(key) || key < c.LoadedEntries)
                        throw new FuzzViolation($"call {i}, {c.Calls[i]}: committed an entry with key {key}, which was there already");
            }
        foreach (long key in inserted)
            if (!bank.EntryHolds(key)) throw new FuzzViolation($"the committed entry with key {key} is not in the ledger whole");
        int rows = bank.Ledger.Count - bank.Ledger.Retired;
        if (rows != c.LoadedEntries + inserted.Count)
            throw new FuzzViolation($"the ledger uses {rows} rows ({bank.Ledger.Retired} more retired by aborts after a claim) for {c.LoadedEntries} loaded and {inserted.Count} committed entries: a refused insert kept its row");
        var report = SerializabilityChecker.Check(engine.History());
        if (!report.Serializable) throw new FuzzViolation($"the history is not serializable: {report.Anomalies.FirstOrDefault()?.Description}");
    }
}
