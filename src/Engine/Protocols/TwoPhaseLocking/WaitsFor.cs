using Contend.Engine.History;
using Contend.Engine.Locks;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// 2PL that waits for a held lock and aborts only when the waits-for graph has a cycle
/// through the waiter. Each worker publishes the rows it holds and the row it waits for;
/// the graph's edges (waiter -> holders of its row) are derived from those, read while the
/// others run. A read can be stale, so a check may see a cycle that was just broken (an
/// abort that was not needed: safe) or miss one still forming; a deadlock is stable, so
/// the waiter re-checks every <see cref="CheckEvery"/> rounds and finds it.
/// </summary>
internal sealed class WaitsFor : LockingProtocol
{
    const int CheckEvery = 32;
    const int Stride = TxnContext.MaxOps + 8; // per worker: [0] held count, [1] waiting row + 1, [8..] held rows; own cache lines

    readonly long[] _published;
    readonly int _workers;
    readonly MutantFlag _missesTwoCycles;

    public WaitsFor(ProtocolSetup setup) : base(setup)
    {
        _workers = setup.Workers;
        _published = new long[setup.Workers * Stride];
        _missesTwoCycles = new(setup.Mutants, TwoPhaseLockingMutants.WaitsForMissesTwoCycles);
    }

    public override string Name => TwoPhaseLockingProtocols.WaitsFor.Name;

    private protected override bool Lock(TxnContext ctx, LockingState state, Table table, int access, bool exclusive, out AbortReason reason)
    {
        long rowKey = HistoryRecorder.RowKey(table.Id, ctx.AccessRow[access]);
        int me = ctx.Worker * Stride;
        var wait = new SpinWait();
        for (int round = 0; ; round++)
        {
            var result = TryLockWord(ctx, state, table, access, exclusive, out _);
            if (result == LockResult.Acquired)
            {
                Volatile.Write(ref _published[me + 1], 0);
                if (exclusive && FindHeld(ctx.Worker, rowKey) >= 0) break; // an upgrade: already listed
                long count = _published[me];
                Volatile.Write(ref _published[me + 8 + count], rowKey);
                Volatile.Write(ref _published[me], count + 1);
                break;
            }
            if (round == 0) Volatile.Write(ref _published[me + 1], rowKey + 1);
            if (result == LockResult.Conflict && round % CheckEvery == 0 && OnCycle(ctx.Worker))
            {
                Volatile.Write(ref _published[me + 1], 0);
                reason = AbortReason.Deadlock;
                return false;
            }
            if (result == LockResult.Conflict && ctx.GivingUp)
            {
                Volatile.Write(ref _published[me + 1], 0);
                reason = AbortReason.Deadline;
                return false;
            }
            Spin.Once(ref wait);
        }
        reason = AbortReason.None;
        return true;
    }

    protected override void ReleaseAll(TxnContext ctx)
    {
        // Unlisted first: a row listed here is still held, so a stale read errs towards a cycle.
        Volatile.Write(ref _published[ctx.Worker * Stride], 0);
        base.ReleaseAll(ctx);
    }

    int FindHeld(int worker, long rowKey)
    {
        int at = worker * Stride;
        long count = Volatile.Read(ref _published[at]);
        for (int i = 0; i < count; i++)
            if (Volatile.Read(ref _published[at + 8 + i]) == rowKey) return i;
        return -1;
    }

    /// <summary>Depth-first search over workers from <paramref name="start"/>: does a chain of waits lead back to it?</summary>
    bool OnCycle(int start)
    {
        Span<bool> visited = stackalloc bool[_workers];
        Span<int> stack = stackalloc int[_workers];
        Span<bool> nextToStart = stackalloc bool[_missesTwoCycles ? _workers : 0];
        int depth = 0;
        stack[depth++] = start;
        while (depth > 0)
        {
            int w = stack[--depth];
            long waiting = Volatile.Read(ref _published[w * Stride + 1]) - 1;
            if (waiting < 0) continue;
            for (int h = 0; h < _workers; h++)
            {
                if (h == w || FindHeld(h, waiting) < 0) continue;
                if (h == start)
                {
                    if (_missesTwoCycles && w != start && nextToStart[w]) continue; // the twin: a cycle of two unseen
                    return true;
                }
                if (visited[h]) continue;
                visited[h] = true;
                if (_missesTwoCycles && w == start) nextToStart[h] = true;
                stack[depth++] = h;
            }
        }
        return false;
    }
}
