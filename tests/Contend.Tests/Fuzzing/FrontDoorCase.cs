using CsCheck;
using Contend.Engine.Runtime;

namespace Contend.Tests.Fuzzing;

/// <summary>One call of a case: which program, its arguments, and when its caller cancels
/// (-1: never; 0: before the call; n: n ms after it).</summary>
public sealed record FuzzCall(FuzzProgram Program, long[] Args, int CancelAfterMs)
{
    public override string ToString() => $"{Program}({string.Join(", ", Args)}){(CancelAfterMs < 0 ? "" : $" cancelled at {CancelAfterMs} ms")}";
}

/// <summary>The programs a case calls (<see cref="FuzzBank"/> builds them).</summary>
public enum FuzzProgram
{
    /// <summary>args: from, to, amount, mode. Writes from -= amount, then to += amount (from may be to).</summary>
    Transfer,
    /// <summary>args: account, key, key, mode. Touches the account, then inserts two entries (the keys may be one).</summary>
    Post,
    /// <summary>args: account, account. Reads both.</summary>
    Read,
    /// <summary>args: none. Reads every account: a committed one sees the whole total.</summary>
    Audit,
}

/// <summary>What a body of the op a mode names does: its work, a <see cref="Engine.Programs.TxnProgram.UserAbort"/>,
/// a throw, or (slow) its work after the first op's body has spun a few milliseconds with its row or key held, so that
/// others queue behind it and meet their deadlines.</summary>
public static class FuzzMode
{
    public const long Work = 0, Abort = 1, Throw = 2, Slow = 3;
}

/// <summary>
/// A front-door case: an engine's options, a bank (accounts that transfers move money between,
/// and a ledger of entries that posts insert), the calls made at it, all at once from a few
/// callers, and whether the engine is disposed while they run.
/// </summary>
public sealed record FrontDoorCase(string Protocol, int Workers, int? DeadlineMs, int? MaxAttempts, int QueueCapacity, WhenQueueFull WhenFull,
                                   int Accounts, int EntryCapacity, int LoadedEntries, FuzzCall[] Calls, int DisposeAfter)
{
    public override string ToString() =>
        $"{Protocol}, {Workers} workers, deadline {(DeadlineMs is int d ? $"{d} ms" : "none")}, attempts {(MaxAttempts is int a ? a : "any")}, " +
        $"queue {QueueCapacity} ({WhenFull}), {Accounts} accounts, ledger of {EntryCapacity} with {LoadedEntries} loaded, " +
        $"{(DisposeAfter < 0 ? "not disposed" : $"disposed after call {DisposeAfter}")}; calls: {string.Join("; ", Calls.AsEnumerable())}";

    /// <summary>Cases over <paramref name="protocols"/>: keys drawn past the accounts (missing),
    /// entry keys drawn from a few (duplicates, within a post and across posts), a ledger small
    /// enough to fill, bodies that abort or throw after a write, cancellations before and during
    /// a call, deadlines short enough to meet, and disposals in the middle.</summary>
    public static Gen<FrontDoorCase> Generator(IReadOnlyList<string> protocols) =>
        from protocol in Gen.OneOf(protocols.ToArray())
        from workers in Gen.Int[1, 3]
        from deadline in Gen.Frequency((3, Gen.Const((int?)null)), (1, Gen.Int[1, 60].Select(ms => (int?)ms)))
        from attempts in Gen.Frequency((3, Gen.Const((int?)null)), (1, Gen.Int[1, 4].Select(n => (int?)n)))
        from queue in Gen.Int[1, 64]
        from whenFull in Gen.OneOf(WhenQueueFull.Wait, WhenQueueFull.Refuse)
        from accounts in Gen.Frequency((3, Gen.Int[2, 3]), (1, Gen.Int[4, 8])) // few accounts: more calls meet on one row
        from loaded in Gen.Int[0, 6]
        from capacity in Gen.Int[loaded + 1, loaded + 24]
        from calls in Call(accounts, loaded).Array[1, 48]
        from dispose in Gen.Frequency((5, Gen.Const(-1)), (1, Gen.Int[0, 48]))
        select new FrontDoorCase(protocol, workers, deadline, attempts, queue, whenFull, accounts, capacity, loaded, calls, dispose);

    static Gen<FuzzCall> Call(int accounts, int loaded)
    {
        var account = Gen.Int[0, accounts + 1].Select(a => (long)a); // the last two are missing
        var entry = Gen.Int[0, loaded + 8].Select(k => (long)k);
        var mode = Gen.Frequency((8, Gen.Const(FuzzMode.Work)), (1, Gen.Const(FuzzMode.Abort)), (1, Gen.Const(FuzzMode.Throw)), (1, Gen.Const(FuzzMode.Slow)));
        var cancel = Gen.Frequency((8, Gen.Const(-1)), (1, Gen.Const(0)), (1, Gen.Int[1, 20]));
        var transfer = Gen.Select(account, account, Gen.Int[1, 50], mode, (from, to, amount, m) => (FuzzProgram.Transfer, new[] { from, to, amount, m }));
        var post = Gen.Select(account, entry, entry, mode, (a, k1, k2, m) => (FuzzProgram.Post, new[] { a, k1, k2, m }));
        var read = Gen.Select(account, account, (a, b) => (FuzzProgram.Read, new[] { a, b }));
        var audit = Gen.Const((FuzzProgram.Audit, Array.Empty<long>()));
        var program = Gen.Frequency((4, transfer), (3, post), (2, read), (1, audit));
        return Gen.Select(program, cancel, (p, c) => new FuzzCall(p.Item1, p.Item2, c));
    }
}
