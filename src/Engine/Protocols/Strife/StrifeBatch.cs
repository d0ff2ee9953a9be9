using System.Diagnostics;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.Strife;

/// <summary>Where a batch is. The analysis stages are StrifeAnalysis.tla's; the rest are
/// StrifeExec.tla's bphase.</summary>
internal enum BatchPhase : byte
{
    /// <summary>The buffer waits for its batch to be started.</summary>
    Idle,
    /// <summary>A worker is setting the buffer up (counters, size).</summary>
    Starting,
    /// <summary>Drawing transactions and pre-processing them, in chunks on any worker.</summary>
    Filling,
    /// <summary>Allocate's first round (Algorithm 2 lines 2-13), in chunks.</summary>
    Allocate1,
    /// <summary>Allocate's second round (lines 16-32), in chunks.</summary>
    Allocate2,
    /// <summary>Re-allocation of residuals after merge, in chunks.</summary>
    Reallocate,
    /// <summary>StrifeExec.tla "analysed": clusters and residuals known, waiting for the batch before.</summary>
    Analysed,
    /// <summary>The conflict-free phase.</summary>
    Clusters,
    /// <summary>The residual phase (past the barrier).</summary>
    Residuals,
    Done,
}

/// <summary>
/// One batch buffer. Two of them alternate (batch n in buffer n mod 2), so batch n+1 can be
/// analysed while batch n runs its residuals. Every claim of work is a CAS on a word that
/// carries the batch number beside the next index, so a worker that read an old batch number
/// and stalled can never claim work of the batch the buffer holds next (the buffer's ABA).
/// </summary>
internal sealed class StrifeBatch
{
    public const int ChunkSize = 64;
    public const int Residual = -1, Unplaced = 0;

    public readonly int Capacity;
    public readonly int ArgStride = TxnContext.MaxOps * 2;
    public readonly int MaxAccess = TxnContext.MaxOps;

    /// <summary>(batch number &lt;&lt; 8) | phase: read together, changed by CAS.</summary>
    long _state;

    /// <summary>How many transactions the batch holds; fixed when it starts.</summary>
    public int Count;

    // Per transaction (slot), written by the worker that drew it (or that allocates it) and
    // read by others only after the stage that wrote it has been counted done.
    public readonly TxnProgram[] Program;
    public readonly long[] Args;
    public readonly long[] Timestamp;
    public readonly long[] StartTicks;
    /// <summary>The source's <see cref="TxnContext.Tag"/> of the slot's transaction, until it ends.</summary>
    public readonly object?[] Tag;
    /// <summary>False when a key of the program depends on an earlier op's result: its rows
    /// are not known before it runs, so it goes to the residual (see StrifeAnalysis.cs).</summary>
    public readonly bool[] Analysable;
    /// <summary>OpRow[slot * MaxAccess + op]: the op's row as pre-processing found it, or -1.</summary>
    public readonly int[] OpRow;
    /// <summary>AccessCount[slot]: how many distinct rows the slot's ops touch.</summary>
    public readonly int[] AccessCount;
    /// <summary>AccessKey[slot * MaxAccess + i]: the slot's i-th distinct row as (table id &lt;&lt; 32) | row,
    /// one word so that looking for a row among those already listed is one vector search.</summary>
    public readonly long[] AccessKey;
    public readonly bool[] AccessWrite;
    /// <summary>Unplaced, Residual, or a cluster id (allocate's; its root after merge).</summary>
    public readonly int[] Place;

    // Clusters: ids 1..Clusters made by spot (or 1 for the second round when spot made none),
    // linked by merge into a union-find (Section 4.1: "each cluster has a root").
    public int Clusters;
    public readonly int[] Parent;
    /// <summary>Merge's n(i, j), as a Clusters x Clusters matrix (reused).</summary>
    public readonly int[] PairCount;

    // The schedule, built when the analysis ends.
    public int WorkClusters;
    public readonly int[] WorkStart, WorkLength;
    /// <summary>Clustered slots grouped by cluster, largest cluster first.</summary>
    public readonly int[] WorkOrder;
    public int Residuals;
    public readonly int[] ResidualOrder;

    // Claims: (batch number << 32) | next index.
    public long FillClaim, Allocate1Claim, Allocate2Claim, ReallocateClaim, ClusterClaim, ResidualClaim;
    // Completions, counted after the claimed work is done.
    public int FillDone, Allocate1Done, Allocate2Done, ReallocateDone, ClustersDone, ResidualsDone;
    /// <summary>1 once a worker has taken the batch's end (its report, then Done).</summary>
    public int FinishClaim;

    public StrifeBatch(int capacity, int maxClusters, uint number, BatchPhase phase)
    {
        Capacity = capacity;
        Program = new TxnProgram[capacity];
        Args = new long[capacity * ArgStride];
        Timestamp = new long[capacity];
        StartTicks = new long[capacity];
        Tag = new object?[capacity];
        Analysable = new bool[capacity];
        OpRow = new int[capacity * MaxAccess];
        AccessCount = new int[capacity];
        AccessKey = new long[capacity * MaxAccess];
        AccessWrite = new bool[capacity * MaxAccess];
        Place = new int[capacity];
        Parent = new int[maxClusters + 1];
        PairCount = new int[(maxClusters + 1) * (maxClusters + 1)];
        WorkStart = new int[maxClusters + 1];
        WorkLength = new int[maxClusters + 1];
        WorkOrder = new int[capacity];
        ResidualOrder = new int[capacity];
        _state = State(number, phase);
    }

    static long State(uint number, BatchPhase phase) => ((long)number << 8) | (byte)phase;

    public int Chunks => (Count + ChunkSize - 1) / ChunkSize;

    /// <summary>The buffer's phase if it holds batch <paramref name="number"/>, else null.</summary>
    public BatchPhase? PhaseOf(uint number)
    {
        long s = Volatile.Read(ref _state);
        return (uint)(s >> 8) == number ? (BatchPhase)(byte)s : null;
    }

    public bool TryAdvance(uint number, BatchPhase from, BatchPhase to) =>
        Interlocked.CompareExchange(ref _state, State(number, to), State(number, from)) == State(number, from);

    /// <summary>Holds batch <paramref name="number"/> from now on, idle. Only the worker that
    /// retired the buffer's previous batch calls it, once no one can claim that batch's work.</summary>
    public void Recycle(uint number) => Volatile.Write(ref _state, State(number, BatchPhase.Idle));

    /// <summary>Sets the buffer up for its batch of <paramref name="count"/> transactions, then
    /// opens the fill stage. Called by the worker whose CAS moved it to Starting.</summary>
    public void Open(uint number, int count)
    {
        Debug.Assert(PhaseOf(number) == BatchPhase.Starting, $"batch {number}: opened by a worker that did not start it");
        Count = count;
        Clusters = WorkClusters = Residuals = 0;
        long claim = (long)number << 32;
        Volatile.Write(ref FillClaim, claim);
        Volatile.Write(ref Allocate1Claim, claim);
        Volatile.Write(ref Allocate2Claim, claim);
        Volatile.Write(ref ReallocateClaim, claim);
        Volatile.Write(ref ClusterClaim, claim);
        Volatile.Write(ref ResidualClaim, claim);
        Volatile.Write(ref FillDone, 0);
        Volatile.Write(ref Allocate1Done, 0);
        Volatile.Write(ref Allocate2Done, 0);
        Volatile.Write(ref ReallocateDone, 0);
        Volatile.Write(ref ClustersDone, 0);
        Volatile.Write(ref ResidualsDone, 0);
        Volatile.Write(ref FinishClaim, 0);
        Volatile.Write(ref _state, State(number, BatchPhase.Filling));
    }

    /// <summary>Claims the next index below <paramref name="limit"/> on a claim word of batch
    /// <paramref name="number"/>. False when there is none, or the buffer holds another batch,
    /// or the CAS was lost (the caller's loop looks again).</summary>
    public static bool TryClaim(ref long claim, uint number, int limit, out int index)
    {
        long seen = Volatile.Read(ref claim);
        index = (int)seen;
        if ((uint)((ulong)seen >> 32) != number || index >= limit) return false;
        return Interlocked.CompareExchange(ref claim, seen + 1, seen) == seen;
    }

    public static long AccessOf(int table, int row) => ((long)table << 32) | (uint)row;
    public int AccessTable(int at) => (int)(AccessKey[at] >> 32);
    public int AccessRow(int at) => (int)AccessKey[at];

    public Span<long> ArgsOf(int slot) => Args.AsSpan(slot * ArgStride, ArgStride);

    /// <summary>Union-find root (no path compression: merge is serial and the forest is shallow,
    /// and afterwards the forest is read by many workers at once, so it must not change).</summary>
    public int Root(int cluster)
    {
        while (Parent[cluster] != cluster) cluster = Parent[cluster];
        return cluster;
    }
}
