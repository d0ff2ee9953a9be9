using System.Diagnostics;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Strife;

/// <summary>
/// The analysis of one batch (seed 002, Section 3; specs/Strife/StrifeAnalysis.tla), stage by
/// stage. The chunked stages run on any worker, a chunk at a time; the serial ones (spot,
/// merge, the schedule) on the worker that finished the stage before them.
/// </summary>
/// <remarks>
/// Decisions, beside the spec's (proofs/Strife.md):
/// <list type="bullet">
/// <item>A program with a key computed from an earlier op's result (a pk-dependency of a read
/// or write; inserted keys do not count) has rows no one knows before it runs. The paper
/// would run a reconnaissance query first (Section 2); we send such a transaction to the
/// residual, where 2PL needs no read-write set. No workload of ours has one.</item>
/// <item>A transaction with a key the index does not hold goes to the residual too. The key
/// may be inserted before the transaction runs (by a transaction of this batch, or of the
/// batch before, which runs while this one is analysed), and then the transaction would
/// touch a row the clustering never saw. Rows are never deleted, so a key found stays found
/// at its row. In TPC-C this is NewOrder's 1% rollback (an unused item id).</item>
/// <item>Parallel allocate claims a transaction's free rows one CAS at a time (Section 4.1).
/// The spec does each transaction atomically; the engine's rule when a CAS finds the row
/// claimed for another cluster is: the transaction goes to the residual and the rows it
/// already claimed stay claimed for its cluster, never rolled back. Rolling back would be
/// wrong: between the claim and the roll-back, another transaction may have joined the
/// cluster because of that row, and after the roll-back a third could claim the row for a
/// different cluster, a conflict across clusters. Left claimed, a row only keeps other
/// transactions out of other clusters; ItemClusterInv (every row of a clustered
/// transaction carries its cluster) still holds, and with it conflict-freedom.</item>
/// <item>Merge is the spec's: pairs with n(i, j) >= alpha |T| / P are joined (transitively),
/// always, not only while |R| >= alpha |T| as the paper's loop does; the debug check after
/// re-allocation is the spec's ResidualBoundInv, not the paper's bound (which fails,
/// StrifeAnalysisPaperBound).</item>
/// <item>The schedule hands out clusters largest first (the paper's worklist is a plain
/// queue): with few workers, a large cluster started last would hold up the barrier.</item>
/// </list>
/// </remarks>
internal sealed class StrifeAnalysis(Database db, StrifeOptions options, Enum? mutants)
{
    readonly MutantFlag _allocateAcross = new(mutants, StrifeMutants.AllocateAcross);
    readonly MutantFlag _ignoreReads = new(mutants, StrifeMutants.IgnoreReads);
    public readonly int MaxClusters = options.SpotRounds;

    /// <summary>Draws the chunk's transactions on this worker and pre-processes them: resolves
    /// each op's row and marks the rows they write (the pre-processing step of Section 3: "the
    /// set of data items accessed in a write mode").</summary>
    /// <remarks>
    /// Looking a key up costs a cache miss on the index line (which holds the key: the row is
    /// not read) and, for a written row, one on its stamp, which the index line names. So
    /// three transactions are in flight: slot s is drawn and its index lines asked for; slot
    /// s-1's stamps are asked for, its index lines having arrived while s was drawn; slot s-2
    /// is looked up and marked, its lines in cache. The misses of one transaction overlap each
    /// other and the drawing of the next, rather than stalling one after another.
    /// </remarks>
    public void Fill(StrifeBatch b, uint number, int chunk, BatchWorker worker)
    {
        int start = chunk * StrifeBatch.ChunkSize, end = Math.Min(b.Count, start + StrifeBatch.ChunkSize);
        // One clock read and one timestamp reservation a chunk, not a transaction: the chunk's
        // transactions enter the batch together, and a shared counter is a contended line.
        long entered = Stopwatch.GetTimestamp();
        long firstTimestamp = worker.NextTimestamps(end - start);
        // The keys of the three slots in flight, each resolved once (a computed key is a delegate call).
        Span<long> keys = stackalloc long[3 * TxnContext.MaxOps];
        for (int slot = start; slot < end + 2; slot++)
        {
            if (slot < end)
            {
                b.Timestamp[slot] = firstTimestamp + (slot - start);
                b.StartTicks[slot] = entered;
                Draw(b, slot, worker, KeysOf(keys, slot));
            }
            if (slot - 1 >= start && slot - 1 < end) PrefetchFound(b, slot - 1, KeysOf(keys, slot - 1));
            if (slot - 2 >= start) Resolve(b, number, slot - 2, KeysOf(keys, slot - 2));
        }
    }

    static Span<long> KeysOf(Span<long> keys, int slot) => keys.Slice(slot % 3 * TxnContext.MaxOps, TxnContext.MaxOps);

    /// <summary>Pre-processing, first step: draws the slot's transaction, resolves its keys and
    /// asks for the index lines they hash to.</summary>
    void Draw(StrifeBatch b, int slot, BatchWorker worker, Span<long> keys)
    {
        var program = worker.Draw();
        b.Program[slot] = program;
        if (worker.Ctx.Tag is { } tag) // only ContendEngine's source tags its transactions
        {
            b.Tag[slot] = tag;
            worker.Ctx.Tag = null;
        }
        var args = b.ArgsOf(slot);
        worker.Ctx.Args.AsSpan(0, program.ArgCount).CopyTo(args);
        b.Place[slot] = StrifeBatch.Unplaced;
        b.AccessCount[slot] = 0;
        b.Analysable[slot] = !program.HasKeyDependencies;
        if (!b.Analysable[slot]) return;
        foreach (var op in program.Ops)
        {
            if (op.Mode == AccessMode.Insert) continue;
            keys[op.Index] = op.ResolveKey(args, default);
            db[op.TableId].PrefetchIndex(keys[op.Index]);
        }
    }

    /// <summary>Pre-processing, second step: asks for the stamps of the rows the index lines name
    /// (the lookup itself reads no row: Table's index slot holds the key).</summary>
    void PrefetchFound(StrifeBatch b, int slot, Span<long> keys)
    {
        if (!b.Analysable[slot]) return;
        foreach (var op in b.Program[slot].Ops)
            if (op.Mode != AccessMode.Insert) db[op.TableId].PrefetchFound(keys[op.Index]);
    }

    /// <summary>Pre-processing, last step: finds each op's row, lists the slot's distinct rows,
    /// and marks those it writes.</summary>
    void Resolve(StrifeBatch b, uint number, int slot, Span<long> keys)
    {
        if (!b.Analysable[slot]) return;
        var program = b.Program[slot];
        var args = b.ArgsOf(slot);
        foreach (var op in program.Ops)
        {
            b.OpRow[slot * b.MaxAccess + op.Index] = -1;
            if (op.Mode == AccessMode.Insert) continue;
            var table = db[op.TableId];
            int row = table.Find(keys[op.Index]);
            if (row < 0)
            {
                b.Analysable[slot] = false; // the key may exist by the time it runs: see the remarks
                return;
            }
            b.OpRow[slot * b.MaxAccess + op.Index] = row;
            AddAccess(b, slot, table.Id, row, op.Writes(args));
        }
        int at = slot * b.MaxAccess;
        for (int i = 0; i < b.AccessCount[slot]; i++)
            if (b.AccessWrite[at + i]) StrifeStamp.Mark(ref StampOf(b, at + i), number);
    }

    static void AddAccess(StrifeBatch b, int slot, int table, int row, bool write)
    {
        int at = slot * b.MaxAccess, n = b.AccessCount[slot];
        long access = StrifeBatch.AccessOf(table, row);
        int seen = b.AccessKey.AsSpan(at, n).IndexOf(access);
        if (seen >= 0)
        {
            b.AccessWrite[at + seen] |= write;
            return;
        }
        b.AccessKey[at + n] = access;
        b.AccessWrite[at + n] = write;
        b.AccessCount[slot] = n + 1;
    }

    /// <summary>Whether access <paramref name="at"/> takes part in clustering: its row is written by
    /// some transaction of the batch, so pre-processing stamped it with the batch's number (and,
    /// for the IgnoreReads twin, the access is a write).</summary>
    bool TakesPart(StrifeBatch b, uint number, int at, long stamp) =>
        StrifeStamp.Batch(stamp) == number && (!_ignoreReads || b.AccessWrite[at]);

    ref long StampOf(StrifeBatch b, int at) => ref db[b.AccessTable(at)].Stamp(b.AccessRow(at));

    /// <summary>Asks for a slot's stamp lines: called a slot ahead by the stages that read every
    /// stamp of a slot, so that the misses of the next overlap the work on this one.</summary>
    void PrefetchStamps(StrifeBatch b, int slot)
    {
        int at = slot * b.MaxAccess;
        for (int i = 0; i < b.AccessCount[slot]; i++) db[b.AccessTable(at + i)].PrefetchStamp(b.AccessRow(at + i));
    }

    /// <summary>The clusters a slot's rows are in: 0 (none), 1 (then <paramref name="cluster"/>),
    /// or 2 for two or more. With <paramref name="byRoot"/>, clusters count by merge's roots.</summary>
    int ClustersOf(StrifeBatch b, uint number, int slot, bool byRoot, out int cluster, out bool any)
    {
        cluster = 0;
        any = false;
        int at = slot * b.MaxAccess;
        for (int i = 0; i < b.AccessCount[slot]; i++)
        {
            long stamp = Volatile.Read(ref StampOf(b, at + i));
            Debug.Assert(!b.AccessWrite[at + i] || StrifeStamp.Batch(stamp) == number, $"batch {number}, slot {slot}: a row the transaction writes was not stamped by pre-processing");
            if (!TakesPart(b, number, at + i, stamp)) continue;
            any = true;
            int c = StrifeStamp.Cluster(stamp);
            if (c == 0) continue;
            if (byRoot) c = b.Root(c);
            if (cluster == 0) cluster = c;
            else if (c != cluster) return 2;
        }
        return cluster == 0 ? 0 : 1;
    }

    /// <summary>Spot, Algorithm 1 (StrifeAnalysis.tla SpotPick): k random picks; a pick none of
    /// whose rows has a cluster seeds a new one with them. Serial.</summary>
    public void Spot(StrifeBatch b, uint number)
    {
        ulong rng = Rng.Seed(options.Seed, (int)number);
        for (int pick = 0; pick < options.SpotRounds; pick++)
        {
            int slot = (int)(Rng.Next(ref rng) % (ulong)b.Count);
            if (!b.Analysable[slot] || b.Place[slot] != StrifeBatch.Unplaced) continue;
            if (ClustersOf(b, number, slot, byRoot: false, out _, out bool any) != 0 || !any) continue;
            int c = ++b.Clusters;
            bool joined = TryJoin(b, number, slot, c, reallocating: false);
            Debug.Assert(joined, $"batch {number}: spot's claim of slot {slot}'s free rows failed, but spot runs alone");
        }
        // StrifeAnalysis.tla Allocate2: "spot seeded nothing: start cluster 1".
        if (b.Clusters == 0) b.Clusters = 1;
        for (int c = 0; c <= b.Clusters; c++) b.Parent[c] = c;
    }

    /// <summary>Allocate, Algorithm 2, over one chunk (StrifeAnalysis.tla Allocate1 / Allocate2):
    /// a transaction whose rows lie in one cluster joins it; in two or more, the residual; in
    /// none, it waits for the second round, which gives it a random cluster.</summary>
    public void Allocate(StrifeBatch b, uint number, int chunk, bool secondRound, ref ulong rng)
    {
        int end = Math.Min(b.Count, (chunk + 1) * StrifeBatch.ChunkSize);
        for (int slot = chunk * StrifeBatch.ChunkSize; slot < end; slot++)
        {
            if (slot + 1 < end && b.Place[slot + 1] == StrifeBatch.Unplaced) PrefetchStamps(b, slot + 1);
            if (b.Place[slot] != StrifeBatch.Unplaced) continue;
            if (!b.Analysable[slot])
            {
                b.Place[slot] = StrifeBatch.Residual;
                continue;
            }
            switch (ClustersOf(b, number, slot, byRoot: false, out int cluster, out _))
            {
                case 0 when !secondRound:
                    break; // Algorithm 2 lines 3-4
                case 0:
                    TryJoin(b, number, slot, 1 + (int)(Rng.Next(ref rng) % (ulong)b.Clusters), reallocating: false); // lines 17-22
                    break;
                case 1:
                    TryJoin(b, number, slot, cluster, reallocating: false); // lines 6-10
                    break;
                default:
                    if (_allocateAcross) TryJoin(b, number, slot, cluster, reallocating: false);
                    else b.Place[slot] = StrifeBatch.Residual; // lines 12-13
                    break;
            }
        }
    }

    /// <summary>Claims the slot's free rows for cluster <paramref name="c"/>, one CAS each, and
    /// places it there; if a row turns out claimed for another cluster, the slot is residual and
    /// its claims stay (see the remarks).</summary>
    bool TryJoin(StrifeBatch b, uint number, int slot, int c, bool reallocating)
    {
        int at = slot * b.MaxAccess;
        for (int i = 0; i < b.AccessCount[slot]; i++)
        {
            ref long stamp = ref StampOf(b, at + i);
            long seen = Volatile.Read(ref stamp);
            if (!TakesPart(b, number, at + i, seen)) continue;
            int got = StrifeStamp.Cluster(seen) != 0 ? StrifeStamp.Cluster(seen) : StrifeStamp.Claim(ref stamp, number, c, reallocating);
            if (reallocating) got = b.Root(got);
            if (got != c && !_allocateAcross)
            {
                b.Place[slot] = StrifeBatch.Residual;
                return false;
            }
        }
        b.Place[slot] = c;
        return true;
    }

    /// <summary>Merge, Algorithm 3, with the spec's criterion (StrifeAnalysis.tla Merge): clusters
    /// i and j are joined when n(i, j) * P >= alpha * |T|, P the number of pairs. Serial.</summary>
    public void Merge(StrifeBatch b, uint number)
    {
        int k = b.Clusters, stride = MaxClusters + 1;
        long pairs = (long)k * (k - 1) / 2;
        if (pairs == 0) return;
        for (int i = 1; i <= k; i++) Array.Clear(b.PairCount, i * stride + 1, k);
        Span<int> seen = stackalloc int[TxnContext.MaxOps];
        for (int slot = 0; slot < b.Count; slot++)
        {
            if (b.Place[slot] != StrifeBatch.Residual || !b.Analysable[slot]) continue;
            int n = DistinctClusters(b, number, slot, seen);
            for (int x = 0; x < n; x++)
                for (int y = 0; y < n; y++)
                    if (seen[x] < seen[y]) b.PairCount[seen[x] * stride + seen[y]]++;
        }
        double threshold = options.Alpha * b.Count;
        for (int i = 1; i <= k; i++)
            for (int j = i + 1; j <= k; j++)
            {
                int n = b.PairCount[i * stride + j];
                if (n == 0 || n * (double)pairs < threshold) continue;
                int ri = b.Root(i), rj = b.Root(j);
                if (ri != rj) b.Parent[Math.Max(ri, rj)] = Math.Min(ri, rj); // the spec's Root: the smallest joined
            }
        for (int c = 1; c <= k; c++) b.Parent[c] = b.Root(c); // flat: one hop for every reader after
    }

    /// <summary>The distinct clusters (as allocate left them) of a slot's rows, into <paramref name="into"/>.</summary>
    int DistinctClusters(StrifeBatch b, uint number, int slot, Span<int> into)
    {
        int n = 0, at = slot * b.MaxAccess;
        for (int i = 0; i < b.AccessCount[slot]; i++)
        {
            long stamp = Volatile.Read(ref StampOf(b, at + i));
            int c = StrifeStamp.Cluster(stamp);
            if (!TakesPart(b, number, at + i, stamp) || c == 0 || StrifeStamp.Reallocated(stamp) || into[..n].Contains(c)) continue;
            into[n++] = c;
        }
        return n;
    }

    /// <summary>Re-allocation over one chunk (StrifeAnalysis.tla Reallocate): a residual whose rows
    /// now lie in one cluster, by merge's roots, joins it by allocate's rule.</summary>
    public void Reallocate(StrifeBatch b, uint number, int chunk)
    {
        int end = Math.Min(b.Count, (chunk + 1) * StrifeBatch.ChunkSize);
        for (int slot = chunk * StrifeBatch.ChunkSize; slot < end; slot++)
        {
            if (slot + 1 < end && b.Place[slot + 1] == StrifeBatch.Residual) PrefetchStamps(b, slot + 1);
            if (b.Place[slot] != StrifeBatch.Residual || !b.Analysable[slot]) continue;
            if (ClustersOf(b, number, slot, byRoot: true, out int root, out _) == 1)
                TryJoin(b, number, slot, root, reallocating: true);
        }
    }

    /// <summary>Groups the clustered slots by root, largest cluster first, and lists the residuals.
    /// Serial; ends the analysis.</summary>
    public void Schedule(StrifeBatch b, uint number)
    {
        Span<int> size = stackalloc int[MaxClusters + 1];
        size.Clear();
        b.Residuals = 0;
        for (int slot = 0; slot < b.Count; slot++)
        {
            int place = b.Place[slot];
            Debug.Assert(place != StrifeBatch.Unplaced, $"batch {number}: slot {slot} left unplaced by the analysis (PartitionInv)");
            if (place == StrifeBatch.Residual) b.ResidualOrder[b.Residuals++] = slot;
            else size[b.Place[slot] = b.Root(place)]++;
        }
        b.WorkClusters = 0;
        for (int c = 1; c <= b.Clusters; c++)
        {
            if (size[c] == 0) continue;
            int at = b.WorkClusters++;
            while (at > 0 && size[b.WorkStart[at - 1]] < size[c]) // insertion sort of roots, by size, descending
            {
                b.WorkStart[at] = b.WorkStart[at - 1];
                at--;
            }
            b.WorkStart[at] = c;
        }
        Span<int> next = stackalloc int[MaxClusters + 1];
        int start = 0;
        for (int w = 0; w < b.WorkClusters; w++)
        {
            int c = b.WorkStart[w];
            next[c] = start;
            b.WorkLength[w] = size[c];
            b.WorkStart[w] = start;
            start += size[c];
        }
        for (int slot = 0; slot < b.Count; slot++)
            if (b.Place[slot] != StrifeBatch.Residual) b.WorkOrder[next[b.Place[slot]]++] = slot;
        AssertResidualBound(b, number);
    }

    /// <summary>StrifeAnalysis.tla ResidualBoundInv, in debug builds: every residual that took part
    /// either spans two clusters merge did not join or touches a row no cluster held when
    /// allocate ended; and those of the first kind are fewer than alpha |T|.</summary>
    [Conditional("DEBUG")]
    void AssertResidualBound(StrifeBatch b, uint number)
    {
        if (_allocateAcross || _ignoreReads) return; // the twins break what the bound rests on
        int spanning = 0;
        Span<int> clusters = stackalloc int[TxnContext.MaxOps];
        for (int r = 0; r < b.Residuals; r++)
        {
            int slot = b.ResidualOrder[r];
            if (!b.Analysable[slot]) continue;
            int n = DistinctClusters(b, number, slot, clusters);
            bool spans = false;
            for (int x = 1; x < n && !spans; x++) spans = b.Root(clusters[x]) != b.Root(clusters[0]);
            bool touchesFree = false;
            int at = slot * b.MaxAccess;
            for (int i = 0; i < b.AccessCount[slot]; i++)
            {
                long stamp = Volatile.Read(ref StampOf(b, at + i));
                touchesFree |= TakesPart(b, number, at + i, stamp) && (StrifeStamp.Cluster(stamp) == 0 || StrifeStamp.Reallocated(stamp));
            }
            Debug.Assert(spans || touchesFree, $"batch {number}: residual slot {slot} spans no unjoined pair and touches no free row (ResidualBoundInv)");
            if (spans) spanning++;
        }
        Debug.Assert(spanning < options.Alpha * b.Count || b.Count == 0,
            $"batch {number}: {spanning} residuals span unjoined clusters, not fewer than alpha |T| = {options.Alpha * b.Count} (ResidualBoundInv)");
    }
}
