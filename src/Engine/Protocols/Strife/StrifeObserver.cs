using Contend.Engine.Programs;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.Strife;

/// <summary>
/// What a test sees of Strife as it runs (null in production: one branch per event). Each
/// call is made by the worker that took the step, before the step is visible to others:
/// <see cref="Analysed"/> before the batch's clusters can start, <see cref="Ended"/> before the
/// barrier or the batch's end can count the transaction, <see cref="BatchDone"/> before the
/// next batch's clusters can start.
/// </summary>
internal interface IStrifeObserver
{
    /// <summary>The analysis of a batch ended: its placement is final.</summary>
    void Analysed(StrifeBatchView batch);
    /// <summary>A worker starts running a transaction of a batch (once per transaction).</summary>
    void Starting(uint batch, int slot, bool clustered);
    /// <summary>A residual attempt aborted on a conflict; <paramref name="ctx"/> still names its rows.</summary>
    void AttemptAborted(uint batch, int slot, TxnContext ctx);
    /// <summary>A transaction committed or its logic aborted it.</summary>
    void Ended(uint batch, int slot, Outcome outcome);
    /// <summary>Every transaction of the batch has ended.</summary>
    void BatchDone(uint batch);
}

/// <summary>A read-only view of an analysed batch.</summary>
internal readonly struct StrifeBatchView
{
    readonly StrifeBatch _batch;

    internal StrifeBatchView(StrifeBatch batch, uint number)
    {
        _batch = batch;
        Number = number;
    }

    public uint Number { get; }
    public int Count => _batch.Count;
    public TxnProgram Program(int slot) => _batch.Program[slot];
    /// <summary>The slot's cluster (merge's root), or -1 for the residual.</summary>
    public int Cluster(int slot) => _batch.Place[slot];
    /// <summary>The distinct rows pre-processing listed for the slot (a row read and written counts once).</summary>
    public int Rows(int slot) => _batch.AccessCount[slot];
    /// <summary>Clusters after merge; fewer than <see cref="AllocatedClusters"/> when merge joined some.</summary>
    public int Clusters => _batch.WorkClusters;
    /// <summary>Clusters spot made, which allocate filled (each holds its seed).</summary>
    public int AllocatedClusters => _batch.Clusters;
    public int Residuals => _batch.Residuals;
}
