using System.Collections.Concurrent;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.Silo;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>What a root transaction came to, and its logic's result when it committed.</summary>
internal readonly record struct ReactorResult(TxnOutcome Outcome, long Value);

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
/// retried after a randomized back-off. The engine owns the database from its construction to
/// its disposal, as <see cref="ContendEngine"/> does.
/// </remarks>
internal sealed class ReactDbEngine : IAsyncDisposable
{
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
    readonly Action<object?> _runRoot;
    readonly bool _taskAnswers;
    readonly HistoryRecorder? _recorder;
    readonly ConcurrentDictionary<ReactorFunction, TxnProgram> _programs = new();
    long _timestamps;
    int _closed;
    long _committed, _userAborted, _conflictAborts;
    readonly long[] _abortsByReason = new long[Enum.GetValues<AbortReason>().Length];

    /// <summary>Claims the deployment's database (every table made and loaded) and starts the executors.</summary>
    /// <exception cref="ArgumentException">an option out of range, named</exception>
    /// <exception cref="InvalidOperationException">another engine serves the database</exception>
    public ReactDbEngine(ReactorDeployment deployment, ReactDbOptions options) : this(deployment, options, ReactDbMutants.None, taskAnswers: false)
    {
    }

    /// <param name="mutants">broken steps, for the tests that must catch them</param>
    /// <param name="taskAnswers">answer through tasks, which Coyote's scheduler controls</param>
    internal ReactDbEngine(ReactorDeployment deployment, ReactDbOptions options, ReactDbMutants mutants, bool taskAnswers)
    {
        ArgumentNullException.ThrowIfNull(deployment);
        ArgumentNullException.ThrowIfNull(options);
        options.Validate(deployment.Containers);
        _deployment = deployment;
        _options = options;
        _db = deployment.Database;
        _db.Claim(options.Name);
        Silo = new SiloOcc(new ProtocolSetup(_db, 1) { Mutants = mutants == ReactDbMutants.None ? null : mutants });
        Mutants = new ReactDbTwins(mutants);
        int containers = deployment.Containers, executors = options.ExecutorsPerContainer;
        bool pin = options.PinExecutors && containers * executors <= Environment.ProcessorCount;
        _executors = new ContainerExecutor[containers];
        for (int c = 0; c < containers; c++)
            _executors[c] = new ContainerExecutor(options.Name, c, executors,
                                                  pin ? Enumerable.Range(c * executors, executors).ToArray() : null);
        _recorder = options.RecordHistory ? new HistoryRecorder(options.MaxRootsInFlight * containers) : null;
        _roots = new RootTransaction[options.MaxRootsInFlight];
        for (int s = 0; s < options.MaxRootsInFlight; s++) _slots.Enqueue(_roots[s] = new RootTransaction(s, containers, options, _recorder));
        _free = new SemaphoreSlim(options.MaxRootsInFlight, options.MaxRootsInFlight);
        _giveBack = _answers.Enqueue;
        _runRoot = root => _ = RunRoot((RootTransaction)root!);
        _taskAnswers = taskAnswers;
    }

    /// <summary>The participant every container's context commits through: Silo's phases.</summary>
    internal SiloOcc Silo { get; }

    internal readonly ReactDbTwins Mutants;

    /// <summary>Where the engine records every step it takes as the action of ReactDB.tla it
    /// implements, for trace validation (specs/ReactDB/ReactDBTrace.tla); set before the first
    /// root runs. Null in production.</summary>
    internal ReactDbTrace? Trace { get; set; }

    public ReactorDeployment Deployment => _deployment;

    /// <summary>Roots committed, ended by their logic, and attempts aborted by a conflict and retried.</summary>
    public EngineCounts Counts => new(Volatile.Read(ref _committed), Volatile.Read(ref _userAborted), Volatile.Read(ref _conflictAborts));

    /// <summary>
    /// Runs <paramref name="function"/> on <paramref name="reactor"/> as a root transaction, from any
    /// thread; completes when it has committed or aborted, and the caller's continuation runs on the
    /// thread pool, never on an executor. Waits (without blocking a thread) while
    /// <see cref="ReactDbOptions.MaxRootsInFlight"/> roots run. Await the task once.
    /// </summary>
    /// <exception cref="TransactionFailedException">a function of its tree threw; the attempt was undone</exception>
    /// <exception cref="OperationCanceledException">the token was cancelled before the root started, or before a retry</exception>
    public ValueTask<ReactorResult> ExecuteAsync(Reactor reactor, ReactorFunction function, ReadOnlyMemory<long> args, CancellationToken cancel = default)
    {
        ArgumentNullException.ThrowIfNull(reactor);
        ArgumentNullException.ThrowIfNull(function);
        if (reactor.Deployment != _deployment)
            throw new ArgumentException($"engine {_options.Name}: reactor {reactor.Name} is of another deployment", nameof(reactor));
        if (Volatile.Read(ref _closed) != 0) return ValueTask.FromException<ReactorResult>(new ObjectDisposedException(nameof(ReactDbEngine), $"engine {_options.Name} is closed"));
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
        if (Volatile.Read(ref _closed) != 0)
        {
            _free.Release(); // a call that waited while the engine closed gets its slot back from the disposal, and leaves
            return ValueTask.FromException<ReactorResult>(
                new ObjectDisposedException(nameof(ReactDbEngine), $"engine {_options.Name} closed while the call waited for a slot: the transaction did not run"));
        }
        _slots.TryDequeue(out var root);
        Answer<ReactorResult> answer = _taskAnswers ? new TaskAnswer<ReactorResult>()
                                     : _answers.TryDequeue(out var pooled) ? pooled : new PooledAnswer<ReactorResult>(_giveBack, "ReactDbEngine.ExecuteAsync");
        var program = _programs.GetOrAdd(function, static (f, db) => TxnProgram.OfCode(f.Name, db), _db);
        root!.Call = new RootCall(reactor, function, program, args, cancel, answer);
        var task = answer.Task; // before the root is queued: it may end at once
        Task.Factory.StartNew(_runRoot, root, CancellationToken.None, TaskCreationOptions.DenyChildAttach, _executors[reactor.Container]);
        return task;
    }

    /// <summary>The root's thread: Algorithm 1 lines 5-18 for the root, commit included, and the
    /// retries of its conflict aborts; then its slot is freed and its caller answered.</summary>
    async Task RunRoot(RootTransaction root)
    {
        var call = root.Call;
        root.Call = default;
        ReactorResult result;
        try
        {
            result = await Attempts(root, call.Reactor, call.Function, call.Program, call.Args, call.Cancel);
        }
        catch (Exception error)
        {
            FreeSlot(root);
            call.Answer.SetException(error);
            return;
        }
        FreeSlot(root);
        call.Answer.SetResult(result);
    }

    void FreeSlot(RootTransaction root)
    {
        _slots.Enqueue(root);
        _free.Release();
    }

    /// <summary>The root's attempts, to a commit, a final abort, or the last attempt allowed.</summary>
    async ValueTask<ReactorResult> Attempts(RootTransaction root, Reactor reactor, ReactorFunction function, TxnProgram program,
                                       ReadOnlyMemory<long> args, CancellationToken cancel)
    {
        long timestamp = Interlocked.Increment(ref _timestamps);
        ulong rng = Rng.Seed((ulong)timestamp, reactor.Id);
        int maxAttempts = _options.MaxAttempts ?? int.MaxValue;
        for (int attempt = 1; ; attempt++)
        {
            root.BeginAttempt(program, reactor.Container, timestamp);
            var node = new ReactorCall(this, root, reactor);
            node.TakeHomeContext(); // Submit, Dequeue: held through the commit (D8)
            long value = await node.RunLogic(function, args);
            if (!Mutants.CommitBeforeWaiting) await node.ChildrenDone(); // BeginCommit waits for SubTxnsDone
            AbortReason reason;
            long decided = System.Diagnostics.Stopwatch.GetTimestamp();
            if (node.BeginCommit())
            {
                reason = root.Reason;
                root.Abort(Silo, Trace); // AbortAll
            }
            else reason = root.Commit(Silo, Mutants, Trace);
            root.CountDecision(System.Diagnostics.Stopwatch.GetTimestamp() - decided);
            root.Release(reactor.Container, node);
            if (reason == AbortReason.None)
            {
                Interlocked.Increment(ref _committed);
                return new ReactorResult(new TxnOutcome(Outcome.Committed, AbortReason.None, attempt), value);
            }
            if (root.Error is { } error) throw new TransactionFailedException(program, error);
            if (reason.IsFinal())
            {
                Interlocked.Increment(ref _userAborted);
                return new ReactorResult(new TxnOutcome(Outcome.UserAborted, reason, attempt), 0);
            }
            Interlocked.Increment(ref _conflictAborts);
            Interlocked.Increment(ref _abortsByReason[(int)reason]);
            if (attempt >= maxAttempts) return new ReactorResult(new TxnOutcome(Outcome.Aborted, reason, attempt), 0);
            cancel.ThrowIfCancellationRequested();
            Spin.Backoff(attempt, ref rng);
            await Task.Yield(); // lets the container's queue run before the retry
        }
    }

    /// <summary>Algorithm 2 line 15: queues <paramref name="callee"/> on its container. Its task is
    /// the future: it completes, with the logic's result, once the callee and every
    /// sub-transaction it called have completed (Alg. 1 line 20).</summary>
    internal Task<long> Enqueue(ReactorCall callee, ReactorFunction function, ReadOnlyMemory<long> args) =>
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

    /// <summary>Conflict aborts so far, indexed by <see cref="AbortReason"/>.</summary>
    public long[] ConflictAbortsByReason()
    {
        var counts = new long[_abortsByReason.Length];
        for (int i = 0; i < counts.Length; i++) counts[i] = Volatile.Read(ref _abortsByReason[i]);
        return counts;
    }

    /// <summary>The mean time, in microseconds, of a root attempt's commit protocol: from
    /// BeginCommit, once every sub-transaction has completed, to the end of its last WriteStep or
    /// its AbortAll, over the engine's life (the paper's commit cost, seed 004 Section 4.3); NaN
    /// before any. Call once no root runs.</summary>
    public double MeanCommitMicros()
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
    /// one entry per container it committed in; call once no root runs.</summary>
    public IReadOnlyList<CommittedTxn> History() =>
        _recorder?.Collect() ?? throw new InvalidOperationException($"engine {_options.Name}: history is recorded only with {nameof(ReactDbOptions.RecordHistory)}");

    /// <summary>Waits for every running root to end, then for the executors' threads to stop, and disposes the database.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _closed, 1) != 0) return;
        for (int i = 0; i < _options.MaxRootsInFlight; i++) await _free.WaitAsync().ConfigureAwait(false);
        foreach (var executor in _executors) await executor.StopAsync().ConfigureAwait(false);
        _db.Release();
        _db.Dispose();
        _free.Release(_options.MaxRootsInFlight); // calls still waiting for a slot wake up, find the engine closed, and throw
    }
}
