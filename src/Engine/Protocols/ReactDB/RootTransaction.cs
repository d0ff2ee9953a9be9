using System.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.Silo;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>A caller's root: what runs, with what, and where its outcome goes.</summary>
/// <param name="Traced">whether the call is traced (<see cref="Diagnostics.EngineTracing"/>): then its
/// span starts at <paramref name="TraceStart"/> (the call's <see cref="Stopwatch"/> timestamp), under <paramref name="TraceParent"/></param>
internal readonly record struct RootCall(Reactor Reactor, ReactorFunction Function, TxnProgram Program, ReadOnlyMemory<long> Args,
                                         CancellationToken Cancel, Answer<ReactorResult> Answer,
                                         bool Traced, long TraceStart, ActivityContext TraceParent);

/// <summary>
/// One root transaction's state across its containers, kept in a slot reused by the roots that
/// run in it one after another: a database context per container (Silo's read and write sets,
/// ReactDB.tla's <c>rs</c> and <c>ws</c>), which (sub-)transaction holds each (<c>holder</c>),
/// where it has been (<c>spans</c>) and whether it has failed (<c>failed</c>). Its commit is the
/// spec's coordinator (Algorithm 3 with the lockFirst order, D5).
/// </summary>
internal sealed class RootTransaction
{
    /// <summary>The call the slot serves next: set by the caller that takes the slot, taken by the root's thread.</summary>
    public RootCall Call;

    readonly TxnContext[] _contexts;
    /// <summary>holder[c]: the (sub-)transaction whose thread uses the context in container c (D2).</summary>
    readonly ReactorCall?[] _holders;
    /// <summary>spans[c]: the context in c is in use this attempt. Written by the node that first
    /// takes it, read by the root after every node has completed.</summary>
    readonly bool[] _spans;
    int _failed;
    AbortReason _reason;
    Exception? _error;
    /// <summary>Nodes of this attempt's tree numbered so far, with a trace.</summary>
    int _traceNodes;
    long _decisions, _decisionTicks, _decisionsSeen;

    /// <param name="slot">the slot's index: its context for container c is worker slot * containers + c</param>
    public RootTransaction(int slot, int containers, ReactDbOptions options, HistoryRecorder? recorder)
    {
        _contexts = new TxnContext[containers];
        for (int c = 0; c < containers; c++)
            _contexts[c] = new TxnContext(slot * containers + c, recorder, options.ContextRows, options.ContextBytes);
        _holders = new ReactorCall?[containers];
        _spans = new bool[containers];
        Stats.Reset(); // measured from the start: an engine has no warm-up
    }

    /// <summary>The outcomes of the roots this slot has run (written by each root's thread in turn).</summary>
    public WorkerStats Stats { get; } = new();

    public TxnProgram Program { get; private set; } = null!;
    /// <summary>The root's container: its context there is held from the start to the end of the commit (D8).</summary>
    public int Home { get; private set; }
    /// <summary>The attempt's id, shared by its contexts: the version its writes install.</summary>
    public long TxnId { get; private set; }
    public bool Failed => Volatile.Read(ref _failed) != 0;
    /// <summary>Why the attempt failed (after <see cref="Failed"/>).</summary>
    public AbortReason Reason => _reason;
    /// <summary>The exception a function threw, when that is why it failed.</summary>
    public Exception? Error => _error;

    /// <summary>Starts an attempt of a root running <paramref name="program"/> from container <paramref name="home"/>.</summary>
    public void BeginAttempt(TxnProgram program, int home, long timestamp)
    {
        Debug.Assert(Array.TrueForAll(_holders, h => h is null), $"program {program.Name}: an attempt began with a context still held");
        Program = program;
        Home = home;
        Array.Clear(_spans);
        _failed = 0;
        _reason = AbortReason.None;
        _error = null;
        _traceNodes = 0;
        var ctx = _contexts[home];
        ctx.Start(program, timestamp);
        ctx.BeginAttempt();
        TxnId = ctx.TxnId;
        _spans[home] = true;
    }

    /// <summary>Attempts of this slot's roots whose commit protocol (to a commit or an abort) was
    /// timed, and the stopwatch ticks it took them; written by the root's thread, read once no
    /// root runs.</summary>
    public (long Decisions, long Ticks) CommitCost => (_decisions, _decisionTicks);

    /// <summary>Whether the attempt about to commit is one whose commit protocol is timed: the
    /// slot's second, then one in every <see cref="DecisionSample"/>.</summary>
    /// <remarks>Decision: a sample, not every attempt. Timing every commit took two of the four
    /// clock reads a root made, where Silo's worker makes two: with one executor saturated by
    /// one-row roots the clock held 13.8 % of its samples, 7.5 % with the sample
    /// (docs/measured/ReactDB.md). Not the slot's first attempt: the engine's first commit
    /// compiles the commit path, and a sample weighs it 16 times what timing every attempt did
    /// (YCSB's mean rose from 0.6-0.8 us to 0.7-1.1 us).</remarks>
    public bool TimesNextDecision() => (_decisionsSeen++ & (DecisionSample - 1)) == 1;

    const int DecisionSample = 16;

    /// <summary>Counts one timed attempt's commit protocol, which took <paramref name="ticks"/>.</summary>
    public void CountDecision(long ticks)
    {
        _decisions++;
        _decisionTicks += ticks;
    }

    /// <summary>The next node's index in the attempt's tree; called inside the trace's gate.</summary>
    public int NextTraceNode() => ++_traceNodes;

    /// <summary>The context in container <paramref name="container"/>, for its holder.</summary>
    public TxnContext Context(int container)
    {
        Debug.Assert(_spans[container], $"program {Program.Name}: container {container}'s context used before it was taken");
        return _contexts[container];
    }

    /// <summary>ReactDB.tla Dequeue: <paramref name="node"/> takes the root's context in its
    /// container, making it on first use (Alg. 1 lines 5-14); false when another thread holds it,
    /// which is the conservative abort's cause (D2).</summary>
    /// <param name="evenIfHeld">the twin of ReactDBMutantSharedContextThreads: a held context is taken too</param>
    public bool TryTake(int container, ReactorCall node, bool evenIfHeld = false)
    {
        if (Interlocked.CompareExchange(ref _holders[container], node, null) is not null)
        {
            if (!evenIfHeld) return false;
            Volatile.Write(ref _holders[container], node);
        }
        if (!_spans[container])
        {
            _contexts[container].BeginParticipantAttempt(Program, TxnId, _contexts[Home].Timestamp);
            _spans[container] = true;
        }
        return true;
    }

    /// <summary>How many of the slot's contexts a node holds now.</summary>
    public int Held => _holders.Count(h => Volatile.Read(ref h) is not null);

    /// <summary>The node that holds the context in <paramref name="container"/> now, if any.</summary>
    public ReactorCall? Holder(int container) => Volatile.Read(ref _holders[container]);

    /// <summary>ReactDB.tla Complete (and the end of the root's commit): the node gives the context back.</summary>
    public void Release(int container, ReactorCall node)
    {
        Debug.Assert(_holders[container] == node, $"program {Program.Name}: container {container}'s context released by a node that does not hold it");
        Volatile.Write(ref _holders[container], null);
    }

    /// <summary>Marks the attempt failed; the first reason stays. Every node still to run skips its
    /// logic, every running one stops at its next step (D9), and the root aborts.</summary>
    public void Fail(AbortReason reason, Exception? error = null)
    {
        if (Interlocked.CompareExchange(ref _failed, 1, 0) != 0) return;
        _reason = reason;
        _error = error;
    }

    /// <summary>
    /// The coordinator's commit, once every node has completed (ReactDB.tla BeginCommit): lock
    /// each context's write set, in the validation order; then validate each one's reads; then
    /// install in each (LockStep, ValidateStep, WriteStep). Returns None on a commit; otherwise
    /// why not, having aborted every context (AbortAll).
    /// </summary>
    /// <remarks>Decision (D5): Algorithm 3 as written validates container by container, each
    /// locking its write set and then checking its reads; TLC shows it is not serializable
    /// (<c>ReactDBPaperLinear</c>: a blind write in a later container). Silo's order of phases
    /// across containers is: every write lock first, then every read check. The validation order
    /// is the root's container, then the others by index (D6): nothing waits (D4: a held lock is
    /// a no), so the order decides only which of two conflicting roots fails.</remarks>
    public AbortReason Commit(SiloOcc silo, in ReactDbTwins twins, ReactDbTrace? trace)
    {
        Debug.Assert(!Failed, $"program {Program.Name}: a failed root must abort, not commit");
        var reason = twins.PaperLinear ? LockAndValidateEach(silo, twins, trace) : LockAllThenValidate(silo, twins, trace);
        if (reason != AbortReason.None)
        {
            Abort(silo, trace);
            return reason;
        }
        if (twins.InstallAtValidation) return AbortReason.None; // the twin installed as it validated
        for (int i = 0; i < _contexts.Length; i++)
            if (InOrder(i) is int c and >= 0) WriteStep(silo, c, twins, trace);
        return AbortReason.None;
    }

    /// <summary>LockStep in every container of the validation order, then ValidateStep in every one.</summary>
    AbortReason LockAllThenValidate(SiloOcc silo, in ReactDbTwins twins, ReactDbTrace? trace)
    {
        var reason = AbortReason.None;
        for (int i = 0; i < _contexts.Length && reason == AbortReason.None; i++)
            if (InOrder(i) is int c and >= 0) reason = LockStep(silo, c, trace);
        for (int i = 0; i < _contexts.Length && reason == AbortReason.None; i++)
            if (InOrder(i) is int c and >= 0) reason = ValidateStep(silo, c, twins, trace);
        return reason;
    }

    /// <summary>The twin of Algorithm 3 as written (<see cref="ReactDbMutants.PaperLinear"/>): each
    /// container locks its write set and validates its reads before the next one locks.</summary>
    AbortReason LockAndValidateEach(SiloOcc silo, in ReactDbTwins twins, ReactDbTrace? trace)
    {
        for (int i = 0; i < _contexts.Length; i++)
        {
            if (InOrder(i) is not (int c and >= 0)) continue;
            var reason = LockStep(silo, c, trace);
            if (reason == AbortReason.None) reason = ValidateStep(silo, c, twins, trace);
            if (reason != AbortReason.None) return reason;
        }
        return AbortReason.None;
    }

    /// <summary>ReactDB.tla LockStep in container <paramref name="c"/>: its write set's locks, a held one a no (D4).</summary>
    AbortReason LockStep(SiloOcc silo, int c, ReactDbTrace? trace)
    {
        using var step = new TracedStep(trace?.Gate);
        var reason = silo.LockWriteSet(_contexts[c], waitForLocks: false).Reason;
        trace?.Add(CommitEvent(ReactDbStep.LockStep, c, reason == AbortReason.None));
        return reason;
    }

    /// <summary>ReactDB.tla ValidateStep in container <paramref name="c"/>: its context's reads.</summary>
    AbortReason ValidateStep(SiloOcc silo, int c, in ReactDbTwins twins, ReactDbTrace? trace)
    {
        using var step = new TracedStep(trace?.Gate);
        var reason = twins.SkipRemoteValidation && c != Home ? AbortReason.None : silo.ValidateReads(_contexts[c]).Reason;
        if (reason == AbortReason.None && twins.InstallAtValidation) silo.CommitParticipant(_contexts[c]);
        trace?.Add(CommitEvent(ReactDbStep.ValidateStep, c, reason == AbortReason.None));
        return reason;
    }

    /// <summary>ReactDB.tla WriteStep in container <paramref name="c"/>: install and unlock.</summary>
    void WriteStep(SiloOcc silo, int c, in ReactDbTwins twins, ReactDbTrace? trace)
    {
        using var step = new TracedStep(trace?.Gate);
        if (twins.PartialWrite && c != Home) silo.AbortParticipant(_contexts[c]);
        else silo.CommitParticipant(_contexts[c]);
        trace?.Add(CommitEvent(ReactDbStep.WriteStep, c, ok: true));
    }

    /// <summary>ReactDB.tla AbortAll: every context the attempt used gives back what it locked;
    /// the writes were buffered, so nothing else is undone.</summary>
    public void Abort(SiloOcc silo, ReactDbTrace? trace)
    {
        using var step = new TracedStep(trace?.Gate);
        for (int c = 0; c < _contexts.Length; c++)
            if (_spans[c]) silo.AbortParticipant(_contexts[c]);
        trace?.Add(CommitEvent(ReactDbStep.AbortAll, Home, ok: true));
    }

    /// <summary>A step of the root's commit, taken by its node 0 on its thread.</summary>
    ReactDbEvent CommitEvent(ReactDbStep kind, int container, bool ok) => new(kind, TxnId, 0, Reactor: -1, container, Ok: ok);

    /// <summary>The i-th container of the validation order (ReactDB.tla ValOrder): the root's
    /// own, then the others it used by index; -1 where the order has none.</summary>
    int InOrder(int i)
    {
        if (i == 0) return Home;
        int c = i <= Home ? i - 1 : i;
        return _spans[c] ? c : -1;
    }
}
