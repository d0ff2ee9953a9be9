using System.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;

namespace Contend.Engine.Runtime;

/// <summary>
/// One worker's transaction state, reused for every transaction it runs (no allocation
/// per transaction in steady state). Only the owning worker reads or writes it, except
/// where a protocol publishes a field for others and says so.
/// </summary>
internal sealed class TxnContext
{
    public const int MaxOps = 64;
    /// <summary>The most arguments a program takes.</summary>
    public const int MaxArgs = MaxOps * 2;

    public int Worker { get; }
    public TxnProgram Program { get; private set; } = null!;
    public readonly long[] Args = new long[MaxArgs];
    public readonly long[] Results = new long[MaxOps];

    /// <summary>Id of the current attempt: unique among all attempts of the process, never 0
    /// (low 8 bits: worker, high bits: that worker index's attempt count in this process). A
    /// committed attempt's id is the version its writes install. The count is per worker
    /// index, not per context, so a protocol instance that outlives a run (a benchmark's
    /// invocations, a test's iterations) never sees an id again: StealDB relies on it (a
    /// context naming an ended attempt must not match a live one).</summary>
    public long TxnId { get; private set; }
    /// <summary>Attempt counts, one cache line per worker index.</summary>
    static readonly long[] s_attempts = new long[256 * 8];
    /// <summary>WaitDie's age: taken from a global counter when a transaction first starts
    /// and kept across its retries, so a retried transaction grows older and does not starve.</summary>
    public long Timestamp { get; private set; }
    /// <summary>Conflict aborts of the current transaction so far, for a protocol whose policy
    /// changes with them (Strife's residuals: NO_WAIT first, WaitDie after); kept by the
    /// caller that retries.</summary>
    public int ConflictRetries;
    /// <summary>When set, <see cref="OpRow"/>[i] is op i's row as a batch protocol's analysis
    /// resolved it (rows are never deleted, so a found row stays right), or -1 to look it up:
    /// the op loop then skips the index lookup. Cleared by <see cref="Start"/>.</summary>
    public bool RowsKnown;
    public readonly int[] OpRow = new int[MaxOps];
    /// <summary>What the transaction's source attached to it (a batch protocol carries it through
    /// the batch with the transaction): <see cref="ContendEngine"/>'s request. Null otherwise.</summary>
    public object? Tag;

    // The access set: one entry per distinct row the attempt touched, at most AccessCapacity. What
    // a protocol keeps per access besides (a lock mode, where a copy is) is in its own state
    // (ProtocolState), sized by the same capacity.
    public int AccessCount;
    /// <summary>The most distinct rows an attempt may touch: <see cref="MaxOps"/> (a row per op) unless
    /// the context was made for logic that is not a DAG of ops (a ReactDB context).</summary>
    public readonly int AccessCapacity;
    public readonly int[] AccessTable;
    public readonly int[] AccessRow;
    /// <summary>Version observed when the row was first read (the history's reads-from; Silo's validation).</summary>
    public readonly long[] AccessVersion;
    /// <summary>The attempt's bytes: before-images (2PL) or private copies (Silo), taken by <see cref="Reserve"/>.</summary>
    public readonly byte[] Buffer;
    public int BufferUsed;
    /// <summary>The per-worker state of the protocol that runs on this context, of that protocol's
    /// own type (2PL's LockingState, Silo's SiloState), made by it on first use; null until then.</summary>
    internal object? ProtocolState;

    // Inserts, applied at commit.
    public int InsertCount;
    /// <summary>Set when InsertRow already holds a reserved row for each insert the attempt will
    /// make (in the program's <see cref="TxnProgram.InsertsInOrder"/>); cleared by <see cref="BeginAttempt"/>.</summary>
    public bool InsertRowsReserved;
    public readonly int[] InsertOp = new int[MaxOps];
    public readonly long[] InsertKey = new long[MaxOps];
    public readonly int[] InsertRow = new int[MaxOps];
    /// <summary>The index slot each insert claimed (valid for the first <see cref="InsertsClaimed"/>
    /// of <see cref="InsertOrder"/>).</summary>
    internal readonly int[] InsertSlot = new int[MaxOps];
    /// <summary>The inserts by (table, key): the order their keys are claimed in.</summary>
    internal readonly int[] InsertOrder = new int[MaxOps];
    /// <summary>How many of <see cref="InsertOrder"/> hold a claimed key, which an abort gives back.</summary>
    internal int InsertsClaimed;
    /// <summary>How many of <see cref="InsertRow"/> this attempt allocated (not reserved for it), which an abort gives back.</summary>
    internal int InsertRowsMade;
    /// <summary>Set when the last attempt ended <see cref="Protocols.AbortReason.DuplicateKey"/>: the
    /// insert refused. Cleared by <see cref="BeginAttempt"/>.</summary>
    internal Protocols.DuplicateKey? Duplicate;

    /// <summary>Working space for one step (Silo's sorted write set, Ordered's lock order), an entry
    /// per access; nothing else may use it meanwhile.</summary>
    public readonly int[] Scratch;

    public HistoryRecorder? Recorder { get; }

    /// <summary>The worker's share of a durable engine's log; null: nothing is logged.</summary>
    internal Durability.WorkerLog? Log;

    /// <summary>The epoch the attempt committed in, set by its log's commit step; 0 until then.</summary>
    internal long CommitEpoch;

    /// <param name="accessCapacity">the most distinct rows an attempt may touch</param>
    /// <param name="bufferBytes">room for the attempt's copies or images</param>
    public TxnContext(int worker, HistoryRecorder? recorder, int accessCapacity = MaxOps, int bufferBytes = 64 * 1024)
    {
        Debug.Assert(worker is >= 0 and < 256, $"worker {worker}: a transaction id keeps the worker in 8 bits");
        Worker = worker;
        Recorder = recorder;
        AccessCapacity = accessCapacity;
        AccessTable = new int[accessCapacity];
        AccessRow = new int[accessCapacity];
        AccessVersion = new long[accessCapacity];
        Scratch = new int[accessCapacity];
        Buffer = new byte[bufferBytes];
    }

    /// <summary>The caller's token, read by the lock waits (<see cref="GivingUp"/>); none but
    /// the engine's requests have one.</summary>
    public CancellationToken Cancel;

    /// <summary>When the transaction gives up, a <see cref="Stopwatch"/> timestamp; long.MaxValue: never.</summary>
    public long Deadline = long.MaxValue;

    /// <summary>True once the transaction should give up what it waits for: its deadline has
    /// passed or its caller has cancelled. A lock wait that sees it aborts the attempt
    /// (<see cref="Protocols.AbortReason.Deadline"/>), which undoes it as any abort does.</summary>
    public bool GivingUp =>
        Deadline != long.MaxValue && Stopwatch.GetTimestamp() >= Deadline || Cancel.IsCancellationRequested;

    /// <summary>Starts a new transaction (not a retry): takes a fresh WaitDie timestamp, with
    /// no token and no deadline (the engine sets its request's after).</summary>
    public void Start(TxnProgram program, long timestamp)
    {
        Cancel = default;
        Deadline = long.MaxValue;
        Program = program;
        Timestamp = timestamp;
        ConflictRetries = 0;
        RowsKnown = false;
    }

    /// <summary>Starts an attempt of the current transaction with empty access and insert sets.</summary>
    public void BeginAttempt()
    {
        long attempt = Interlocked.Increment(ref s_attempts[Worker * 8]);
        Debug.Assert(attempt < 1L << 41, "attempt ids past 2^41: StealDB's steal context holds 49-bit tids");
        TxnId = (attempt << 8) | (uint)Worker;
        ClearSets();
    }

    /// <summary>Starts a participant's share of an attempt coordinated elsewhere, under the
    /// coordinator's id and age (<see cref="Cluster.ClusterTxnId"/>).</summary>
    internal void BeginParticipantAttempt(TxnProgram program, long txnId, long timestamp)
    {
        Start(program, timestamp);
        TxnId = txnId;
        ClearSets();
    }

    void ClearSets()
    {
        AccessCount = 0;
        InsertCount = 0;
        InsertRowsReserved = false;
        InsertsClaimed = 0;
        InsertRowsMade = 0;
        Duplicate = null;
        BufferUsed = 0;
        CommitEpoch = 0;
    }

    public int FindAccess(int table, int row)
    {
        for (int i = 0; i < AccessCount; i++)
            if (AccessRow[i] == row && AccessTable[i] == table) return i;
        return -1;
    }

    public int AddAccess(int table, int row)
    {
        Debug.Assert(AccessCount < AccessCapacity, $"program {Program.Name}: more than {AccessCapacity} distinct rows");
        int i = AccessCount++;
        AccessTable[i] = table;
        AccessRow[i] = row;
        AccessVersion[i] = 0;
        return i;
    }

    public Span<byte> Reserve(int size, out int offset)
    {
        offset = BufferUsed;
        if (offset + size > Buffer.Length)
            throw new InvalidOperationException($"program {Program.Name}: rows touched exceed the context's {Buffer.Length} B of copies");
        BufferUsed += size;
        return Buffer.AsSpan(offset, size);
    }
}
