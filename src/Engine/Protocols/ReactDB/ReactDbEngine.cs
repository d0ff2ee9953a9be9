using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using Contend.Engine.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.Silo;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>What a root transaction came to, and its logic's result when it committed.</summary>
/// <param name="Outcome">committed, ended by its logic (<see cref="ReactorCall.AbortRoot"/>, a
/// missing key), or given up after <see cref="ReactDbOptions.MaxAttempts"/> conflict aborts</param>
/// <param name="Value">what the root's function returned, when it committed; 0 otherwise</param>
public readonly record struct ReactorResult(TxnOutcome Outcome, long Value);

/// <summary>
/// ReactDB (seed 004; specs/ReactDB/ReactDB.tla as argued in proofs/ReactDB.md): reactors in
/// containers, each container with executor threads of its own; a root transaction is a reactor
/// function whose logic calls other reactors' functions as nested sub-transactions, synchronous
/// in its own container and asynchronous in any other; it commits by Silo's OCC in each container
/// it touched, coordinated as the spec's corrected linear two-phase commit.
/// </summary>
/// <remarks>
/// A submitted root runs on its reactor's container. Its attempt ends when its logic has ended
/// and every sub-transaction has completed; then its thread commits (or aborts) every context,
/// and a conflict abort (a failed validation, a lock held at commit, the conservative abort) is
/// retried after a randomized back-off.
/// <para>It is the front door for reactor functions as <see cref="ContendEngine"/> is for op
/// DAGs, and keeps its conventions: options checked at construction, errors of the same types
/// (<see cref="EngineClosedException"/>, <see cref="TransactionFailedException"/>), outcomes as
/// <see cref="TxnOutcome"/>, and telemetry on the same meter and activity source
/// (<see cref="ContendEngine.TelemetryName"/>), its series tagged protocol <c>ReactDB</c> and
/// workload <see cref="ReactDbOptions.Name"/>. Decision: a second class rather than a protocol
/// behind <see cref="ContendEngine"/>, because a ReactDB transaction is a tree of asynchronous
/// calls run on the containers' executors, not a program a worker runs to its end; what the two
/// share (Silo's phases, contexts, outcomes, telemetry) is the same code.</para>
/// <para>One engine per database: the engine claims the deployment's database (a second engine
/// is refused, a table created after the claim is refused) and disposes it when it is disposed.</para>
/// </remarks>
public sealed class ReactDbEngine : IAsyncDisposable
{
    /// <summary>The protocol's name in the engine's telemetry.</summary>
    const string ProtocolName = "ReactDB";

    readonly ReactorDeployment _deployment;
    readonly ReactDbOptions _options;
    readonly Database _db;
    readonly ContainerExecutor[] _executors;
    readonly ConcurrentQueue<RootTransaction> _slots = new();
    readonly RootTransaction[] _roots;
    readonly SemaphoreSlim _free;
    /// <summary>Answers whose callers have read them.</summary>
    readonly ConcurrentQueue<PooledAnswer<ReactorResult>> _answers = new();
    readonly Action<PooledAnswer<ReactorResult>> _giveBack;
    readonly bool _taskAnswers;
    readonly HistoryRecorder? _recorder;
    readonly ConcurrentDictionary<ReactorFunction, TxnProgram> _programs = new();
    readonly ILogger _log;
    readonly IDisposable _metrics;
    long _timestamps;
    int _closed;
    /// <summary>What escaped an executor's work first: from then on no root is taken.</summary>
    Exception? _failure;

    /// <summary>Claims the deployment's database (every table made and loaded) and starts the executors.</summary>
    /// <param name="deployment">the reactors and their containers; the engine owns its database from here on and disposes it</param>
    /// <param name="options">checked here, against the deployment's containers</param>
    /// <param name="logger">the engine's start and stop, and a function that threw</param>
    /// <param name="meters">makes the engine's meter (a host's); without one, the process's meter
    /// named <see cref="ContendEngine.TelemetryName"/></param>
    /// <exception cref="ArgumentException">an option out of range, named</exception>
    /// <exception cref="InvalidOperationException">another engine serves the database</exception>
    public ReactDbEngine(ReactorDeployment deployment, ReactDbOptions options, ILogger? logger = null, IMeterFactory? meters = null)
        : this(deployment, options, ReactDbMutants.None, taskAnswers: false, logger, meters)
    {
    }

    /// <param name="mutants">broken steps, for the tests that must catch them</param>
    /// <param name="taskAnswers">answer through tasks, which Coyote's scheduler controls</param>
    internal ReactDbEngine(ReactorDeployment deployment, ReactDbOptions options, ReactDbMutants mutants, bool taskAnswers,
                           ILogger? logger = null, IMeterFactory? meters = null)
    {
        ArgumentNullException.ThrowIfNull(deployment);
        ArgumentNullException.ThrowIfNull(options);
        options = options with { }; // the caller's instance stays the caller's to change
        options.Validate(deployment.Containers);
        _deployment = deployment;
        _options = options;
        _db = deployment.Database;
        _db.Claim(options.Name);
        Silo = new SiloOcc(new ProtocolSetup(_db, 1) { Mutants = mutants == ReactDbMutants.None ? null : mutants });
        Mutants = new ReactDbTwins(mutants);
        _log = logger ?? NullLogger.Instance;
        int containers = deployment.Containers, executors = options.ExecutorsPerContainer;
        bool pin = options.PinExecutors && containers * executors <= Environment.ProcessorCount;
        Action<RootTransaction> runRoot = RunRoot;
        Action<int, Exception> failed = ExecutorFailed;
        Action<int, string> unpinned = (container, why) => EngineLog.NotPinned(_log, options.Name, container, why);
        _executors = new ContainerExecutor[containers];
        for (int c = 0; c < containers; c++)
            _executors[c] = new ContainerExecutor(options.Name, c, executors,
                                                  pin ? Enumerable.Range(0, executors).Select(_ => Affinity.NextCore()).ToArray() : null,
                                                  runRoot, failed, unpinned);
        _recorder = options.RecordHistory ? new HistoryRecorder(options.MaxRootsInFlight * containers) : null;
        _roots = new RootTransaction[options.MaxRootsInFlight];
        for (int s = 0; s < options.MaxRootsInFlight; s++) _slots.Enqueue(_roots[s] = new RootTransaction(s, containers, options, _recorder));
        _free = new SemaphoreSlim(options.MaxRootsInFlight, options.MaxRootsInFlight);
        _giveBack = _answers.Enqueue;
        _taskAnswers = taskAnswers;
        _metrics = (meters is null ? EngineMetrics.Default : EngineMetrics.For(meters))
            .Track(ProtocolName, options.Name, Array.ConvertAll(_roots, r => r.Stats));
        EngineLog.ReactDbStarted(_log, options.Name, containers, executors, deployment.Reactors.Count, options.MaxRootsInFlight);
    }

    /// <summary>The participant every container's context commits through: Silo's phases.</summary>
    internal SiloOcc Silo { get; }

    internal readonly ReactDbTwins Mutants;

    /// <summary>Where the engine records every step it takes as the action of ReactDB.tla it
    /// implements, for trace validation (specs/ReactDB/ReactDBTrace.tla); set before the first
    /// root runs. Null, and folded to null by the JIT, where test hooks are off (<see cref="TestHooks"/>).</summary>
    internal ReactDbTrace? Trace
    {
        get => TestHooks.Enabled ? _trace : null;
        init => _trace = TestHooks.Attach(value, nameof(Trace));
    }

    readonly ReactDbTrace? _trace;

    /// <summary>The reactors and containers the engine serves.</summary>
    public ReactorDeployment Deployment => _deployment;

    /// <summary>The options the engine was made with (a copy: later changes to the caller's do nothing).</summary>
    public ReactDbOptions Options => _options;

    /// <summary>Roots committed, ended by their logic, and attempts aborted by a conflict: a
    /// snapshot, approximate while roots run, exact once none does.</summary>
    public EngineCounts Counts()
    {
        var sum = Totals();
        return new EngineCounts(sum.Commits, sum.UserAborts, sum.TotalAborts);
    }

    WorkerStats Totals()
    {
        var sum = new WorkerStats();
        foreach (var root in _roots) sum.AddLive(root.Stats);
        return sum;
    }

    /// <summary>
    /// Runs <paramref name="function"/> on <paramref name="reactor"/> as a root transaction, from any
    /// thread; completes when it has committed or aborted, and the caller's continuation runs on the
    /// thread pool, never on an executor. Waits (without blocking a thread) while
    /// <see cref="ReactDbOptions.MaxRootsInFlight"/> roots run. Await the task once.
    /// </summary>
    /// <param name="args">the root function's arguments; not copied, so not to be changed until the task ends</param>
    /// <exception cref="ArgumentException">the reactor is of another deployment (thrown at the call)</exception>
    /// <exception cref="TransactionFailedException">a function of its tree threw; the attempt was undone</exception>
    /// <exception cref="OperationCanceledException">the token was cancelled before the root started, or before a retry</exception>
    /// <exception cref="EngineClosedException">the engine was closing: the root did not run</exception>
    /// <exception cref="EngineFailedException">an executor's work threw (a logger, say): the engine takes no more roots</exception>
    /// <exception cref="ReactorCallCycleException">the root's call chain came back into a container its own caller holds</exception>
    public ValueTask<ReactorResult> ExecuteAsync(Reactor reactor, ReactorFunction function, ReadOnlyMemory<long> args, CancellationToken cancel = default)
    {
        ArgumentNullException.ThrowIfNull(reactor);
        ArgumentNullException.ThrowIfNull(function);
        if (reactor.Deployment != _deployment)
            throw new ArgumentException($"engine '{_options.Name}': reactor {reactor.Name} is of another deployment", nameof(reactor));
        if (Volatile.Read(ref _closed) != 0) return ValueTask.FromException<ReactorResult>(new EngineClosedException(_options.Name));
        if (Volatile.Read(ref _failure) is { } failure) return ValueTask.FromException<ReactorResult>(new EngineFailedException(_options.Name, failure));
        if (cancel.IsCancellationRequested) return ValueTask.FromCanceled<ReactorResult>(cancel);
        return _free.Wait(0) ? Start(reactor, function, args, cancel) : WhenFreeAsync(reactor, function, args, cancel);
    }

    async ValueTask<ReactorResult> WhenFreeAsync(Reactor reactor, ReactorFunction function, ReadOnlyMemory<long> args, CancellationToken cancel)
    {
        await _free.WaitAsync(cancel).ConfigureAwait(false);
        return await Start(reactor, function, args, cancel).ConfigureAwait(false);
    }

    /// <summary>Submit: the caller holds a slot of <see cref="_free"/>; queues the root on its
    /// reactor's container, which gives the slot back when the root has ended.</summary>
    ValueTask<ReactorResult> Start(Reactor reactor, ReactorFunction function, ReadOnlyMemory<long> args, CancellationToken cancel)
    {
        if (Volatile.Read(ref _closed) != 0 && !Mutants.StartsAfterClose)
        {
            _free.Release(); // a call that waited while the engine closed gets its slot back from the disposal, and leaves
            return ValueTask.FromException<ReactorResult>(new EngineClosedException(_options.Name));
        }
        _slots.TryDequeue(out var root);
        Answer<ReactorResult> answer = _taskAnswers ? new TaskAnswer<ReactorResult>()
                                     : _answers.TryDequeue(out var pooled) ? pooled : new PooledAnswer<ReactorResult>(_giveBack, "ReactDbEngine.ExecuteAsync");
        var program = _programs.GetOrAdd(function, static (f, db) => TxnProgram.OfCode(f.Name, db), _db);
        bool traced = EngineTracing.Begin(out var parent, out long traceStart); // reads the clock only when traced
        root!.Call = new RootCall(reactor, function, program, args, cancel, answer, traced, traceStart, parent);
        var task = answer.Task; // before the root is queued: it may end at once
        _executors[reactor.Container].Queue(root);
        return task;
    }

    /// <summary>The root's thread: Algorithm 1 lines 5-18 for the root, commit included, and the
    /// retries of its conflict aborts; then its slot is freed and its caller answered.</summary>
    /// <remarks>Decision: synchronous until something must be awaited. A root whose logic calls
    /// only into its own container (every root of the sync deployment) completes without
    /// suspending, and then runs no async method's machinery (<see cref="Attempts"/>, the
    /// awaits of <see cref="AttemptsAsync"/>, <see cref="ReactorCall.RunLogic"/>'s): a root's
    /// fixed cost is what keeps the sync deployment behind Silo's worker (docs/measured/ReactDB.md).</remarks>
    void RunRoot(RootTransaction root)
    {
        var call = root.Call;
        root.Call = default;
        ValueTask<ReactorResult> attempts;
        try
        {
            attempts = Attempts(root, call);
        }
        catch (Exception error)
        {
            Answer(root, call, default, error);
            return;
        }
        if (attempts.IsCompletedSuccessfully) Answer(root, call, attempts.Result, null);
        else _ = AnswerWhenDone(root, call, attempts);
    }

    async Task AnswerWhenDone(RootTransaction root, RootCall call, ValueTask<ReactorResult> attempts)
    {
        ReactorResult result;
        try
        {
            result = await attempts;
        }
        catch (Exception error)
        {
            Answer(root, call, default, error);
            return;
        }
        Answer(root, call, result, null);
    }

    /// <summary>Something escaped a piece of an executor's work (a root's answer, a logger):
    /// the engine fails, once, and says so; every later call gets <see cref="EngineFailedException"/>.</summary>
    void ExecutorFailed(int container, Exception error)
    {
        if (Interlocked.CompareExchange(ref _failure, error, null) is not null) return;
        try
        {
            EngineLog.ExecutorFailed(_log, error, _options.Name, container);
        }
        catch (Exception)
        {
            // The logger is what failed: the failure stays visible in every call's exception.
        }
    }

    /// <summary>Frees the root's slot and answers its caller with its result or <paramref name="error"/>.</summary>
    void Answer(RootTransaction root, in RootCall call, ReactorResult result, Exception? error)
    {
        try
        {
            if (error is TransactionFailedException) EngineLog.TransactionFailed(_log, error.InnerException!, _options.Name, call.Program.Name);
            if (call.Traced) EngineTracing.End(call.TraceParent, call.TraceStart, _options.Name, ProtocolName, call.Program.Name, result.Outcome, error);
        }
        catch (Exception e)
        {
            ExecutorFailed(call.Reactor.Container, e); // a throwing logger or listener: the caller is answered all the same
        }
        _slots.Enqueue(root);
        _free.Release();
        if (error is null) call.Answer.SetResult(result);
        else call.Answer.SetException(error);
    }

    /// <summary>The root's attempts, to a commit, a final abort, or the last attempt allowed:
    /// on this thread while each attempt completes without suspending, then in <see cref="AttemptsAsync"/>.</summary>
    ValueTask<ReactorResult> Attempts(RootTransaction root, in RootCall call)
    {
        var retries = new Retries(Interlocked.Increment(ref _timestamps), call.Reactor.Id);
        for (int attempt = 1; ; attempt++)
        {
            var node = BeginAttempt(root, call, retries.Timestamp);
            var logic = node.RunLogic(call.Function, call.Args);
            if (!logic.IsCompletedSuccessfully || !(Mutants.CommitBeforeWaiting || node.ChildrenSucceeded))
                return AttemptsAsync(root, call, retries, attempt, node, logic);
            switch (EndAttempt(root, call, node, logic.Result, attempt, ref retries, out var result))
            {
                case AttemptEnd.Answered: return new(result);
                case AttemptEnd.RetryQueued: return AttemptsAsync(root, call, retries, attempt + 1, null, default);
                case AttemptEnd.Hangs: return new(new TaskCompletionSource<ReactorResult>().Task);
            }
        }
    }

    /// <summary><see cref="Attempts"/> from an attempt that has to wait: its logic or a
    /// sub-transaction had not ended (<paramref name="node"/> is the attempt's root node and
    /// <paramref name="logic"/> its logic's result), or its retry is queued behind the container's
    /// work (<paramref name="node"/> is null).</summary>
    async ValueTask<ReactorResult> AttemptsAsync(RootTransaction root, RootCall call, Retries retries, int attempt,
                                                 ReactorCall? node, ValueTask<long> logic)
    {
        if (node is null) await Task.Yield();
        for (; ; attempt++)
        {
            if (node is null)
            {
                node = BeginAttempt(root, call, retries.Timestamp);
                logic = node.RunLogic(call.Function, call.Args);
            }
            long value = await logic;
            if (!Mutants.CommitBeforeWaiting) await node.ChildrenDone(); // BeginCommit waits for SubTxnsDone
            switch (EndAttempt(root, call, node, value, attempt, ref retries, out var result))
            {
                case AttemptEnd.Answered: return result;
                case AttemptEnd.RetryQueued: await Task.Yield(); break;
                case AttemptEnd.Hangs: return await new TaskCompletionSource<ReactorResult>().Task;
            }
            node = null;
        }
    }

    /// <summary>What a root's attempts keep from one to the next.</summary>
    struct Retries(long timestamp, int reactor)
    {
        /// <summary>A commit's latency runs from its first attempt, as ContendEngine's.</summary>
        public readonly long Started = Stopwatch.GetTimestamp();
        public readonly long Timestamp = timestamp;
        public ulong Backoff = Rng.Seed((ulong)timestamp, reactor);
    }

    enum AttemptEnd { Answered, RetryNow, RetryQueued, Hangs }

    /// <summary>Submit and Dequeue of an attempt: its root node, holding its home context (D8).</summary>
    ReactorCall BeginAttempt(RootTransaction root, in RootCall call, long timestamp)
    {
        root.BeginAttempt(call.Program, call.Reactor.Container, timestamp);
        var node = new ReactorCall(this, root, call.Reactor);
        node.TakeHomeContext(); // held through the commit (D8)
        return node;
    }

    /// <summary>An attempt whose logic and sub-transactions have ended: BeginCommit, then the
    /// commit or AbortAll. Answered: <paramref name="result"/> is the root's; otherwise the
    /// attempt aborted on a conflict and the next is due, after the back-off.</summary>
    /// <exception cref="TransactionFailedException">a function of the tree threw</exception>
    /// <exception cref="OperationCanceledException">the caller cancelled before a retry</exception>
    AttemptEnd EndAttempt(RootTransaction root, in RootCall call, ReactorCall node, long value, int attempt, ref Retries retries,
                          out ReactorResult result)
    {
        result = default;
        var home = call.Reactor.Container;
        AbortReason reason;
        bool timed = root.TimesNextDecision();
        long decided = timed ? Stopwatch.GetTimestamp() : 0;
        if (node.BeginCommit())
        {
            // Twin (ReactDBMutantFailedRootHangs): commitOrAbort only on success, so nothing
            // ever ends a failed attempt.
            if (Mutants.FailedRootHangs) return AttemptEnd.Hangs;
            reason = root.Reason;
            root.Abort(Silo, Trace); // AbortAll
        }
        else reason = root.Commit(Silo, Mutants, Trace);
        if (timed) root.CountDecision(Stopwatch.GetTimestamp() - decided);
        root.Release(home, node);
        if (root.Error is ReactorCallCycleException cycle) throw cycle;
        if (root.Error is { } error) throw new TransactionFailedException(call.Program, error);
        var outcome = reason == AbortReason.None ? Outcome.Committed : AbortReasons.OutcomeOf(reason);
        root.Stats.Count(outcome, reason, retries.Started);
        if (outcome != Outcome.Aborted)
        {
            result = new ReactorResult(new TxnOutcome(outcome, reason, attempt), outcome == Outcome.Committed ? value : 0);
            return AttemptEnd.Answered;
        }
        if (attempt >= (_options.MaxAttempts ?? int.MaxValue))
        {
            result = new ReactorResult(new TxnOutcome(Outcome.Aborted, reason, attempt), 0);
            return AttemptEnd.Answered;
        }
        call.Cancel.ThrowIfCancellationRequested();
        Spin.Backoff(attempt, ref retries.Backoff);
        // Decision: a retry starts at once on this thread (D10), as ContendEngine's does,
        // except after the conservative abort, whose retry is queued behind what the container
        // holds. A conflict with another root is not made likelier by retrying at once, and
        // the queued retry cost YCSB at theta 0.9 about 3 % (docs/measured/ReactDB.md). The
        // conservative abort is the root's own two sub-transactions meeting in one container:
        // retried at once, they met again while that container's threads were still awake
        // (one Coyote schedule of ReactDBTraceSharedContext aborted 56 times before it
        // committed, against 2 with the retry queued).
        return reason == AbortReason.SharedContext ? AttemptEnd.RetryQueued : AttemptEnd.RetryNow;
    }

    /// <summary>Algorithm 2 line 15: queues <paramref name="callee"/> on its container. Its task is
    /// the future: it completes, with the logic's result, once the callee and every
    /// sub-transaction it called have completed (Alg. 1 line 20).</summary>
    internal Task<long> Enqueue(ReactorCall callee, ReactorFunction function, ReadOnlyMemory<long> args)
    {
        var future = Queue(callee, function, args);
        // Twin (ReactDBMutantDoubleDequeue): the dequeue leaves the sub-transaction queued, and a
        // thread runs it again after the first.
        if (Mutants.DoubleDequeue) _ = Queue(callee, function, args);
        return future;
    }

    Task<long> Queue(ReactorCall callee, ReactorFunction function, ReadOnlyMemory<long> args) =>
        Task.Factory.StartNew(() => RunCallee(callee, function, args), CancellationToken.None, TaskCreationOptions.DenyChildAttach,
                              _executors[callee.Reactor.Container]).Unwrap();

    static async Task<long> RunCallee(ReactorCall callee, ReactorFunction function, ReadOnlyMemory<long> args)
    {
        // Dequeue: a context another thread holds is the conservative abort (D2); a failed root's runs nothing.
        if (!callee.TakeContext()) return 0;
        try
        {
            long result = await callee.RunLogic(function, args);
            await callee.ChildrenDone();
            return result;
        }
        finally
        {
            callee.Complete();
        }
    }

    /// <summary>Contexts a (sub-)transaction holds now, over every root slot: 0 once no root runs.</summary>
    internal int ContextsHeld() => _roots.Sum(root => root.Held);

    /// <summary>Conflict aborts so far, indexed by <see cref="AbortReason"/> (the final reasons' slots 0).</summary>
    internal long[] ConflictAbortsByReason()
    {
        var counts = Totals().Aborts;
        for (int r = 0; r < counts.Length; r++)
            if (((AbortReason)r).IsFinal()) counts[r] = 0;
        return counts;
    }

    /// <summary>The mean time, in microseconds, of a root attempt's commit protocol: from
    /// BeginCommit, once every sub-transaction has completed, to the end of its last WriteStep or
    /// its AbortAll, over the engine's life (the paper's commit cost, seed 004 Section 4.3),
    /// estimated from the attempts each slot times (<see cref="RootTransaction.TimesNextDecision"/>);
    /// NaN before any. Call once no root runs.</summary>
    internal double MeanCommitMicros()
    {
        long decisions = 0, ticks = 0;
        foreach (var root in _roots)
        {
            var (d, t) = root.CommitCost;
            decisions += d;
            ticks += t;
        }
        return decisions == 0 ? double.NaN : ticks * 1e6 / System.Diagnostics.Stopwatch.Frequency / decisions;
    }

    /// <summary>Every committed root's reads and writes (with <see cref="ReactDbOptions.RecordHistory"/>),
    /// one entry per container it committed in, for <see cref="SerializabilityChecker"/>; call once no root runs.</summary>
    /// <exception cref="InvalidOperationException">the engine was made without <see cref="ReactDbOptions.RecordHistory"/></exception>
    public IReadOnlyList<CommittedTxn> History() =>
        _recorder?.Collect() ?? throw new InvalidOperationException($"engine {_options.Name}: history is recorded only with {nameof(ReactDbOptions.RecordHistory)}");

    /// <summary>Waits for every running root to end, then for the executors' threads to stop, and disposes the database.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _closed, 1) != 0) return;
        for (int i = 0; i < _options.MaxRootsInFlight; i++) await _free.WaitAsync().ConfigureAwait(false);
        foreach (var executor in _executors) await executor.StopAsync().ConfigureAwait(false);
        var counts = Counts();
        EngineLog.Stopped(_log, _options.Name, counts.Committed, counts.UserAborted, counts.ConflictAborts);
        _metrics.Dispose();
        _db.Release();
        _db.Dispose();
        _free.Release(_options.MaxRootsInFlight); // calls still waiting for a slot wake up, find the engine closed, and throw
    }
}
