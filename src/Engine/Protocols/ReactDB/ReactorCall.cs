using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>A reactor function's logic: a (sub-)transaction on <paramref name="call"/>'s reactor.
/// Its result goes back to its caller (for a root, to whoever submitted it).</summary>
public delegate ValueTask<long> ReactorLogic(ReactorCall call, ReadOnlyMemory<long> args);

/// <summary>Reads a row's payload and returns a result.</summary>
public delegate long RowReader(ReadOnlySpan<byte> row);

/// <summary>Changes a row's payload in place and returns a result.</summary>
public delegate long RowWriter(Span<byte> row);

/// <summary>A function reactors of some type offer: a name (a root running it is named by it in
/// histories and errors) and its logic.</summary>
public sealed class ReactorFunction
{
    /// <exception cref="ArgumentException">the name is empty</exception>
    public ReactorFunction(string name, ReactorLogic logic)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(logic);
        Name = name;
        Logic = logic;
    }

    /// <summary>The function's name; a root running it is named by it in histories, errors, logs and spans.</summary>
    public string Name { get; }
    /// <summary>What it does.</summary>
    public ReactorLogic Logic { get; }

    /// <summary>Its name.</summary>
    public override string ToString() => Name;
}

/// <summary>Unwinds a function's logic once its root has failed; the engine catches it.
/// Logic that catches it anyway changes nothing: the root still aborts.</summary>
public sealed class RootAbortedException : Exception
{
    internal RootAbortedException() : base("the root transaction has aborted; the rest of this function's logic is skipped")
    {
    }
}

/// <summary>
/// A (sub-)transaction as its logic sees it: reads and writes of its own reactor's relations, in
/// its root's database context for its container; calls to other reactors; and an abort of the
/// whole root. A call into its own container runs synchronously, on this thread and context; any
/// other is queued on the callee's container and returns a future (Algorithm 2). It completes
/// only when its logic has ended and every sub-transaction it called has completed (Algorithm 1
/// line 16), whether or not the logic awaited them.
/// </summary>
/// <remarks>The paper's context is used by one flow of control. Logic that runs two flows
/// at once (two calls awaited together, each followed by more reads and writes) may: each read,
/// write and call holds the root's context in this container while it runs, so the flows take
/// turns at whole steps. A flow that goes on after the function has returned is the logic's bug:
/// the root may have committed without it.</remarks>
public sealed class ReactorCall
{
    readonly ReactDbEngine _engine;
    /// <summary>The sub-transactions called that complete after this one's logic: a synchronous
    /// callee's own children, and every asynchronous callee.</summary>
    List<Task>? _children;
    /// <summary>The synchronous callees, with a trace only: each completes, in the trace, just
    /// before this node does (see <see cref="CompleteSyncCallees"/>).</summary>
    List<ReactorCall>? _syncCallees;

    internal ReactorCall(ReactDbEngine engine, RootTransaction root, Reactor reactor, Memory<long> results = default, ReactorCall? caller = null)
    {
        _engine = engine;
        Root = root;
        Reactor = reactor;
        Results = results;
        Caller = caller;
    }

    /// <summary>The (sub-)transaction that called this one; null for the root.</summary>
    internal ReactorCall? Caller { get; }

    internal RootTransaction Root { get; }

    /// <summary>The node's index in its root attempt's tree, with a trace: 0 for the root, then in
    /// the order the calls were made.</summary>
    internal int Node { get; private set; }

    /// <summary>The reactor this (sub-)transaction runs on.</summary>
    public Reactor Reactor { get; }

    /// <summary>Where the logic may leave results beyond the one it returns: the memory its caller
    /// passed to <see cref="CallAsync"/>, which the caller reads once the call's result is in
    /// (empty for a root).</summary>
    public Memory<long> Results { get; }

    /// <summary>Reads the row's payload as this root's context sees it (its own write if it wrote
    /// the row in this container, else the committed version it records).
    /// A missing key aborts the root (<see cref="AbortReason.KeyNotFound"/>).</summary>
    // ReactDB.tla ReadOp.
    public long Read(Relation relation, long key, RowReader reader)
    {
        if (Strand() is not { } strand) return reader(Access(relation, key, RowAccess.Read));
        lock (strand) return reader(Access(relation, key, RowAccess.Read));
    }

    /// <summary>Changes the row in this root's context; the change is installed only if the root
    /// commits. A missing key aborts the root.</summary>
    // ReactDB.tla WriteLoad/WriteStore.
    public long Write(Relation relation, long key, RowWriter writer)
    {
        if (Strand() is not { } strand) return writer(Access(relation, key, RowAccess.Write));
        lock (strand) return writer(Access(relation, key, RowAccess.Write));
    }

    /// <summary>A blind write: the row's payload is replaced by what <paramref name="writer"/> puts
    /// in a zeroed buffer, without reading the row (so, as in Silo, its version is not validated
    /// at commit).</summary>
    // ReactDB.tla WriteLoad/WriteStore of a blind write.
    public long Overwrite(Relation relation, long key, RowWriter writer)
    {
        if (Strand() is not { } strand) return writer(Access(relation, key, RowAccess.Blind));
        lock (strand) return writer(Access(relation, key, RowAccess.Blind));
    }

    /// <summary>
    /// What a use of the root's context in this container holds while it runs: the context itself.
    /// Decision: the paper's context is used by one flow of control (D3), but C# logic easily has
    /// two (<c>var a = H(); var b = H(); await a; await b;</c>, or a call into this container
    /// whose callee suspends before the caller awaits it), and their continuations resume on two
    /// of the container's threads at once. Each row access and each call's bookkeeping is one
    /// step of the spec's node (ReadOp, WriteLoad and WriteStore, Call), so holding the context
    /// through it makes two flows interleave whole steps, as one flow issuing the same steps in
    /// some order would: nothing the spec does not already explore (proofs/ReactDB.md). The
    /// lock is re-entrant, so a reader that reads another row holds it again; uncontended it is
    /// a compare-and-swap and a store. Null in the twin that drops it.
    /// </summary>
    object? Strand() => _engine.Mutants.UnguardedFlows ? null : Root.Context(Reactor.Container);

    enum RowAccess { Read, Write, Blind }

    Span<byte> Access(Relation relation, long key, RowAccess kind)
    {
        var ctx = Enter(relation, key, out int row);
        var silo = _engine.Silo;
        if (_engine.Trace is { } trace) return TracedAccess(trace, ctx, relation.Table, row, kind);
        return kind == RowAccess.Blind ? silo.GrantBlind(ctx, relation.Table, row) : silo.Grant(ctx, relation.Table, row, kind == RowAccess.Write);
    }

    /// <summary>The access as steps of the trace: ReadOp when the context reads the row for the
    /// first time (a row it has already is the context's copy, which the spec's ReadOp of a key
    /// in the write set does not record either), then WriteLoad and WriteStore for a write. A row
    /// another root has locked is waited for outside the step, since its release is a step too.</summary>
    Span<byte> TracedAccess(ReactDbTrace trace, TxnContext ctx, Table table, int row, RowAccess kind)
    {
        var wait = new SpinWait();
        Span<byte> data;
        while (!TryTracedAccess(trace, ctx, table, row, kind, out data)) Spin.Once(ref wait);
        return data;
    }

    bool TryTracedAccess(ReactDbTrace trace, TxnContext ctx, Table table, int row, RowAccess kind, out Span<byte> data)
    {
        using var step = new TracedStep(trace.Gate);
        ThrowIfFailed(); // Busy: a failed root's node takes no more steps (D9)
        long key = ((long)table.Id << 32) | (uint)row;
        bool first = ctx.FindAccess(table.Id, row) < 0;
        int access = -1;
        if (kind == RowAccess.Blind) data = _engine.Silo.GrantBlind(ctx, table, row);
        else if (!_engine.Silo.TryGrant(ctx, table, row, kind == RowAccess.Write, out data, out access)) return false;
        if (first && kind != RowAccess.Blind) Record(trace, ReactDbStep.ReadOp, key: key, read: ctx.AccessVersion[access]);
        if (kind != RowAccess.Read)
        {
            Record(trace, ReactDbStep.WriteLoad, key: key);
            Record(trace, ReactDbStep.WriteStore, key: key);
        }
        return true;
    }

    /// <summary>
    /// Runs <paramref name="function"/> on <paramref name="reactor"/> as a
    /// sub-transaction. In this container, its logic runs now, on this thread and in this context,
    /// and the result is ready when the logic ends (SyncReturn); in another, it is queued there
    /// and the result arrives when it has completed, its own sub-transactions included.
    /// </summary>
    /// <param name="results">memory the callee may fill (its <see cref="Results"/>); read it only
    /// once the returned result is in</param>
    /// <exception cref="RootAbortedException">the root has failed: the logic stops here</exception>
    // ReactDB.tla Call.
    public ValueTask<long> CallAsync(Reactor reactor, ReactorFunction function, ReadOnlyMemory<long> args, Memory<long> results = default)
    {
        ArgumentNullException.ThrowIfNull(reactor);
        ArgumentNullException.ThrowIfNull(function);
        if (reactor.Deployment != Reactor.Deployment)
            throw new ArgumentException($"reactor {Reactor.Name}, function call {function.Name}: reactor {reactor.Name} is of another deployment", nameof(reactor));
        ThrowIfFailed();
        var callee = new ReactorCall(_engine, Root, reactor, results, this);
        bool here = reactor.Container == Reactor.Container && !_engine.Mutants.EnqueueSameContainer;
        if (_engine.Trace is { } trace) RecordCall(trace, callee, here);
        if (here) return CallHere(callee, function, args);
        var future = _engine.Enqueue(callee, function, args);
        AddChild(future);
        return Await(future);
    }

    /// <summary>Aborts the whole root transaction as its logic demands: nothing of it is written,
    /// and the submitter gets <see cref="Outcome.UserAborted"/> (not retried). Never returns.</summary>
    // Decision: the spec (D7) gives logic no abort; a user abort takes the same path as the
    // conservative abort (failed, then AbortAll), whose safety the spec checks, with a reason
    // that is final.
    public void AbortRoot()
    {
        if (!_engine.Mutants.ChildAbortNotPropagated) Root.Fail(AbortReason.User);
        throw new RootAbortedException();
    }

    void RecordCall(ReactDbTrace trace, ReactorCall callee, bool here)
    {
        using var step = new TracedStep(trace.Gate);
        ThrowIfFailed();
        callee.Node = Root.NextTraceNode();
        Record(trace, ReactDbStep.Call, callee: callee.Node);
        if (here) (_syncCallees ??= new()).Add(callee);
    }

    /// <summary>The call into this container: the callee's logic on this thread, and its result
    /// without an async method's machinery when the logic ended without suspending.</summary>
    ValueTask<long> CallHere(ReactorCall callee, ReactorFunction function, ReadOnlyMemory<long> args)
    {
        var logic = callee.RunLogic(function, args);
        return logic.IsCompletedSuccessfully ? new(SyncReturn(callee, logic.Result)) : AwaitHere(callee, logic);
    }

    async ValueTask<long> AwaitHere(ReactorCall callee, ValueTask<long> logic) => SyncReturn(callee, await logic);

    /// <summary>The synchronous callee's logic has ended: its own sub-transactions become this
    /// node's to wait for, and the result is the caller's.</summary>
    long SyncReturn(ReactorCall callee, long result)
    {
        if (callee.ChildrenDone() is { IsCompletedSuccessfully: false } pending) AddChild(pending);
        if (_engine.Trace is { } trace) RecordSyncReturn(trace);
        ThrowIfFailed();
        return result;
    }

    /// <summary>SyncReturn, unless the root has failed: then the caller's logic ends (FinishLogic) instead.</summary>
    void RecordSyncReturn(ReactDbTrace trace)
    {
        using var step = new TracedStep(trace.Gate);
        ThrowIfFailed();
        Record(trace, ReactDbStep.SyncReturn);
    }

    async ValueTask<long> Await(Task<long> future)
    {
        long result = await future;
        ThrowIfFailed();
        return result;
    }

    /// <summary>Runs the logic to its end: a failed root's (sub-)transaction runs none of it (D9),
    /// and an exception it throws fails the root with that exception (a bug in the function).
    /// Logic that ends without suspending ends here without an async method's machinery.</summary>
    internal ValueTask<long> RunLogic(ReactorFunction function, ReadOnlyMemory<long> args)
    {
        if (Root.Failed) return new(LogicEnded(0));
        ValueTask<long> logic;
        try
        {
            logic = function.Logic(this, args);
        }
        catch (Exception e)
        {
            Threw(e);
            return new(LogicEnded(0));
        }
        return logic.IsCompletedSuccessfully ? new(LogicEnded(logic.Result)) : AwaitLogic(logic);
    }

    async ValueTask<long> AwaitLogic(ValueTask<long> logic)
    {
        long result = 0;
        try
        {
            result = await logic;
        }
        catch (Exception e)
        {
            Threw(e);
        }
        return LogicEnded(result);
    }

    /// <summary>A <see cref="RootAbortedException"/> is the root's failure unwinding; anything
    /// else fails the root.</summary>
    void Threw(Exception e)
    {
        if (e is not RootAbortedException) Root.Fail(AbortReason.User, e);
    }

    /// <summary>FinishLogic.</summary>
    long LogicEnded(long result)
    {
        if (_engine.Trace is { } trace) RecordStep(trace, ReactDbStep.FinishLogic);
        return result;
    }

    /// <summary>ReactDB.tla Dequeue of a sub-transaction (Alg. 1 lines 5-14): takes the root's
    /// context in this container. False when the node is to run nothing: the root has failed,
    /// or another thread holds the context, which is the conservative abort (D2); the node has
    /// then completed.</summary>
    internal bool TakeContext()
    {
        var trace = _engine.Trace;
        using var step = new TracedStep(trace?.Gate);
        bool took = false;
        if (!Root.Failed)
        {
            took = Root.TryTake(Reactor.Container, this, evenIfHeld: _engine.Mutants.SharedContext);
            if (!took) Root.Fail(AbortReason.SharedContext, CycleThrough(Root.Holder(Reactor.Container)));
        }
        if (trace is not null)
        {
            Record(trace, ReactDbStep.Dequeue, ok: took);
            if (!took) Record(trace, ReactDbStep.Complete);
        }
        return took;
    }

    /// <summary>
    /// When the context this node could not take is held by one of its own callers, the call
    /// chain has come back into that caller's container: the caller holds the context until this
    /// node completes, so every retry meets the same conservative abort (D2). That is the
    /// deployment's or the function's bug, not a conflict: the root ends with
    /// <see cref="ReactorCallCycleException"/>, which names the chain, instead of being retried
    /// for ever. A context held by a node off this chain (the root's two concurrent calls meeting
    /// in one container) may be free on the retry, which stays the spec's D8.
    /// </summary>
    ReactorCallCycleException? CycleThrough(ReactorCall? holder)
    {
        if (holder is null) return null;
        var chain = new List<ReactorCall> { this };
        for (var node = Caller; node is not null; node = node.Caller)
        {
            chain.Add(node);
            if (node == holder)
            {
                chain.Reverse();
                return new ReactorCallCycleException(Root.Program.Name, string.Join(" -> ", chain.Select(n => $"{n.Reactor.Name} (container {n.Reactor.Container})")));
            }
        }
        return null;
    }

    /// <summary>ReactDB.tla Submit and Dequeue of a root attempt: its thread takes its context in
    /// its container at once, and holds it to the end of the commit (D8).</summary>
    internal void TakeHomeContext()
    {
        var trace = _engine.Trace;
        using var step = new TracedStep(trace?.Gate);
        bool took = Root.TryTake(Reactor.Container, this);
        System.Diagnostics.Debug.Assert(took, $"program {Root.Program.Name}: a new attempt found its home context held");
        if (trace is null) return;
        Record(trace, ReactDbStep.Submit);
        Record(trace, ReactDbStep.Dequeue);
    }

    /// <summary>ReactDB.tla Complete of a sub-transaction that ran: it gives its context back.</summary>
    internal void Complete()
    {
        var trace = _engine.Trace;
        using var step = new TracedStep(trace?.Gate);
        if (trace is not null) CompleteSyncCallees(trace);
        Root.Release(Reactor.Container, this);
        if (trace is not null) Record(trace, ReactDbStep.Complete);
    }

    /// <summary>ReactDB.tla BeginCommit, once the root's logic and every sub-transaction are done:
    /// whether the root has failed, read in the step.</summary>
    internal bool BeginCommit()
    {
        var trace = _engine.Trace;
        using var step = new TracedStep(trace?.Gate);
        if (trace is not null)
        {
            CompleteSyncCallees(trace);
            Record(trace, ReactDbStep.BeginCommit);
        }
        return Root.Failed;
    }

    /// <summary>ReactDB.tla Complete of the synchronous callees, deepest first. A synchronous
    /// callee's own children are its caller's to wait for (<see cref="CallHere"/>), so it is
    /// complete, in the spec's sense, by the time its caller is: it is recorded then.</summary>
    void CompleteSyncCallees(ReactDbTrace trace)
    {
        if (_syncCallees is null) return;
        foreach (var callee in _syncCallees)
        {
            callee.CompleteSyncCallees(trace);
            callee.Record(trace, ReactDbStep.Complete);
        }
    }

    void RecordStep(ReactDbTrace trace, ReactDbStep kind)
    {
        using var step = new TracedStep(trace.Gate);
        Record(trace, kind);
    }

    /// <summary>Called inside the trace's gate.</summary>
    void Record(ReactDbTrace trace, ReactDbStep kind, int callee = -1, long key = -1, long read = 0, bool ok = true) =>
        trace.Add(new ReactDbEvent(kind, Root.TxnId, Node, Reactor.Id, Reactor.Container, callee, key, read, ok));

    /// <summary>Adds a sub-transaction to wait for, under the strand: two flows of the logic may call at once.</summary>
    void AddChild(Task child)
    {
        if (Strand() is not { } strand)
        {
            (_children ??= new()).Add(child);
            return;
        }
        lock (strand) (_children ??= new()).Add(child);
    }

    /// <summary>Every sub-transaction called has completed, none with an exception: nothing of
    /// <see cref="ChildrenDone"/> is left to await.</summary>
    internal bool ChildrenSucceeded
    {
        get
        {
            if (_children is null) return true;
            foreach (var child in _children)
                if (!child.IsCompletedSuccessfully) return false;
            return true;
        }
    }

    /// <summary>Algorithm 1 line 16: completes when every sub-transaction called has.</summary>
    internal Task ChildrenDone() => _children switch
    {
        null => Task.CompletedTask,
        [var only] => only,
        var all => Task.WhenAll(all),
    };

    TxnContext Enter(Relation relation, long key, out int row)
    {
        ArgumentNullException.ThrowIfNull(relation);
        if (relation.Owner != Reactor) ThrowNotOwner(relation);
        ThrowIfFailed();
        row = relation.Table.Find(key);
        if (row < 0) FailOnMissingKey();
        var ctx = Root.Context(Reactor.Container);
        if (ctx.AccessCount == ctx.AccessCapacity && ctx.FindAccess(relation.Table.Id, row) < 0) ThrowContextFull(ctx);
        return ctx;
    }

    // The throws of Enter, out of line: their messages' builders would otherwise be locals of
    // every row access's frame, zeroed on each call.

    [DoesNotReturn, MethodImpl(MethodImplOptions.NoInlining)]
    void ThrowNotOwner(Relation relation) =>
        throw new ArgumentException($"reactor {Reactor.Name}: relation {relation} is reactor {relation.Owner.Name}'s; a function reads and writes only its own reactor's relations, and calls the other reactor for the rest", nameof(relation));

    [DoesNotReturn, MethodImpl(MethodImplOptions.NoInlining)]
    void FailOnMissingKey()
    {
        Root.Fail(AbortReason.KeyNotFound);
        throw new RootAbortedException();
    }

    [DoesNotReturn, MethodImpl(MethodImplOptions.NoInlining)]
    void ThrowContextFull(TxnContext ctx) =>
        throw new InvalidOperationException($"reactor {Reactor.Name}: root {Root.Program.Name} touches more than {ctx.AccessCapacity} rows in container {Reactor.Container}, the most {nameof(ReactDbOptions)}.{nameof(ReactDbOptions.ContextRows)} allows");

    void ThrowIfFailed()
    {
        if (Root.Failed) throw new RootAbortedException();
    }
}
