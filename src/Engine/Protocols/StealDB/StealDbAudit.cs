namespace Contend.Engine.Protocols.StealDB;

/// <summary>
/// StealDB.tla's invariants, checked on the engine as it runs (tests only): every event the
/// protocol reports is checked at once, and the first violation goes to <see cref="Fail"/>
/// (Coyote's assertion in the systematic tests) and is kept in <see cref="Violations"/>.
/// <list type="bullet">
/// <item>ExactlyOnceInv: no op runs twice; every op of a committing transaction ran; and
/// StealDBCore's ExactlyOnceCoreInv: no op is claimed twice.</item>
/// <item>MutualExclusionInv: a row is used by one transaction at a time, from grant to release,
/// unless every user holds it shared.</item>
/// <item>TwoPhaseProp: a transaction that released a lock takes none after.</item>
/// <item>StealTokenTakenOnceInv: each stored steal context is taken by one stealer.</item>
/// <item>FailedTxnUndoneInv, the engine's own (the spec has no exceptions): a transaction whose
/// body threw raises the exception only once it holds no lock (<see cref="Raised"/>).</item>
/// </list>
/// One lock guards it all: the events are few in a test and the checks must see them in order.
/// </summary>
internal sealed class StealDbAudit(Action<string>? fail = null)
{
    readonly object _gate = new();
    readonly Dictionary<(long Tid, int Op), int> _runs = new();
    readonly Dictionary<long, long> _rowUser = new();
    readonly Dictionary<long, HashSet<long>> _rowReaders = new();
    readonly HashSet<long> _shrinking = new();
    readonly HashSet<(int Word, long Context)> _taken = new();
    readonly HashSet<(long Tid, int Op)> _claimed = new();

    public Action<string>? Fail { get; set; } = fail;
    public List<string> Violations { get; } = new();
    public long Takes { get; private set; }
    /// <summary>The most transactions seen reading one row at once (non-vacuity: shares happen).</summary>
    public int MostReaders { get; private set; }

    void Violated(string message)
    {
        Violations.Add(message);
        Fail?.Invoke(message);
    }

    /// <summary>ExactlyOnceCoreInv: the claim (Alg. 2 line 1) succeeds once per op.</summary>
    public void Claimed(long tid, int op)
    {
        lock (_gate)
        {
            if (!_claimed.Add((tid, op))) Violated($"ExactlyOnceCoreInv: op {op} of transaction {tid} claimed twice");
        }
    }

    public void Executed(long tid, int op)
    {
        lock (_gate)
        {
            int runs = _runs[(tid, op)] = _runs.GetValueOrDefault((tid, op)) + 1;
            if (runs > 1) Violated($"ExactlyOnceInv: op {op} of transaction {tid} ran {runs} times");
        }
    }

    public void Committing(long tid, int ops)
    {
        lock (_gate)
        {
            for (int op = 0; op < ops; op++)
            {
                int runs = _runs.GetValueOrDefault((tid, op));
                if (runs != 1) Violated($"ExactlyOnceInv: transaction {tid} commits, but its op {op} ran {runs} times");
            }
        }
    }

    public void Acquired(long row, long tid, bool shared)
    {
        lock (_gate)
        {
            if (_shrinking.Contains(tid)) Violated($"TwoPhaseProp: transaction {tid} takes the lock of row {row:X} after releasing one");
            if (_rowUser.TryGetValue(row, out long user) && user != tid)
                Violated($"MutualExclusionInv: row {row:X} granted to transaction {tid} while transaction {user} writes it");
            var readers = _rowReaders.GetValueOrDefault(row);
            if (!shared && readers is not null && readers.Any(r => r != tid))
                Violated($"MutualExclusionInv: row {row:X} granted for writing to transaction {tid} while transaction {readers.First(r => r != tid)} reads it");
            if (!shared) _rowUser[row] = tid;
            else if (readers is null) _rowReaders[row] = [tid];
            else readers.Add(tid);
            if (shared) MostReaders = Math.Max(MostReaders, _rowReaders[row].Count);
        }
    }

    public void Released(long row, long tid)
    {
        lock (_gate)
        {
            _shrinking.Add(tid);
            if (_rowUser.TryGetValue(row, out long user) && user == tid) _rowUser.Remove(row);
            if (_rowReaders.TryGetValue(row, out var readers) && readers.Remove(tid) && readers.Count == 0) _rowReaders.Remove(row);
        }
    }

    public void Taken(int word, long context)
    {
        lock (_gate)
        {
            Takes++;
            if (!_taken.Add((word, context)))
                Violated($"StealTokenTakenOnceInv: steal context {context:X} of worker {word}'s word was taken twice");
        }
    }

    /// <summary>Deadlock victims so far, and how many of them were on a cycle through a stolen op.</summary>
    public int Victims, StolenCycleVictims;

    /// <summary>A waiter aborted as a deadlock's victim; <paramref name="throughStolenOp"/>: its cycle runs through a stolen op.</summary>
    public void Victim(bool throughStolenOp)
    {
        Interlocked.Increment(ref Victims);
        if (throughStolenOp) Interlocked.Increment(ref StolenCycleVictims);
    }

    /// <summary>FailedTxnUndoneInv: the owner's worker raised transaction <paramref name="tid"/>'s
    /// exception; every lock it took must be released by now.</summary>
    public void Raised(long tid)
    {
        lock (_gate)
        {
            foreach (var (row, user) in _rowUser)
            {
                if (user == tid) Violated($"FailedTxnUndoneInv: transaction {tid} raised its body's exception while it holds row {row:X}");
            }
            foreach (var (row, readers) in _rowReaders)
            {
                if (readers.Contains(tid)) Violated($"FailedTxnUndoneInv: transaction {tid} raised its body's exception while it reads row {row:X}");
            }
        }
    }
}
