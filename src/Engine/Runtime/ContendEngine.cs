using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using Contend.Engine.Diagnostics;
using Contend.Engine.Durability;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Storage;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Contend.Engine.Runtime;

/// <summary>
/// The engine a service embeds: it owns a loaded <see cref="Database"/> and a fixed set of
/// pinned worker threads running one protocol, per-transaction or batch, chosen by name; any
/// thread submits a transaction with <see cref="ExecuteAsync(TxnProgram, ReadOnlySpan{long}, Memory{long}, CancellationToken)"/>
/// and awaits its outcome. Requests wait in a bounded queue: a per-transaction protocol's
/// workers each take the next one and run it to its end (conflict aborts retried after a
/// randomized back-off); a batch protocol's workers gather what is waiting into a batch, up to
/// the batch size, so under load batches fill up and a lone request waits for nobody.
/// </summary>
/// <remarks>
/// Errors: a bad argument throws at the call; everything else ends the returned task: the
/// queue full under <see cref="WhenQueueFull.Refuse"/> (<see cref="EngineQueueFullException"/>),
/// the engine closed (<see cref="EngineClosedException"/>) or failed (<see cref="EngineFailedException"/>),
/// the caller's token (<see cref="OperationCanceledException"/>), or a body or key function
/// that threw (<see cref="TransactionFailedException"/>, the attempt undone and its locks
/// released; the engine and a batch go on). Only a throw that cannot be undone fails the
/// engine: under Strife, a clustered attempt of a program built with
/// <see cref="ProgramBuilder.BodiesNeverAbort"/> writes in place without images.
/// <para>Cancellation and <see cref="EngineOptions.Deadline"/>: the token cancels a wait for
/// room in the queue; a worker that takes a cancelled request, or one past its deadline, ends it
/// without running it; under a per-transaction protocol both also end a lock wait (the attempt
/// undone; under the queue locks the answer waits for the lock ahead to be released) and are
/// read before each retry of a conflict abort. A transaction in a batch runs to its end.</para>
/// <para>The caller's execution context does not flow to the bodies: they run on the engine's
/// workers (under StealDB, on whichever worker steals the op), so an <see cref="AsyncLocal{T}"/>,
/// <see cref="Activity.Current"/> or a logging scope of the caller is not theirs.</para>
/// <para>One engine per database: the engine claims it (a second engine is refused, a table
/// created after the claim is refused, the database's own Dispose is refused) and disposes it
/// when the engine is disposed.</para>
/// </remarks>
public sealed class ContendEngine : IAsyncDisposable, IDisposable
{
    readonly EngineOptions _options;
    readonly Database _db;
    readonly IProtocol _protocol;
    readonly ConcurrentQueue<EngineRequest> _queue = new();
    /// <summary>Requests of the async path whose callers have read their results.</summary>
    readonly ConcurrentQueue<EngineRequest> _pool = new();
    readonly Action<EngineRequest> _giveBack;
    /// <summary>Its Quota is the count of accepted requests no worker has taken yet; its
    /// Timestamps serve WaitDie's ages.</summary>
    readonly RunControl _control = new(WorkerPool.Measure, 0);
    readonly EmbeddedWorkers _workers;
    /// <summary>An event count: a waker bumps <see cref="_wakeups"/>, and a sleeper sleeps only while
    /// it still holds the count it read before it last looked for work. (A shared reset event
    /// would not do: one worker's Reset can swallow the Set another worker was woken by.)</summary>
    readonly object _gate = new();
    long _wakeups;
    int _sleepers;
    /// <summary>Enqueues under way; <see cref="Close"/> waits for them to end.</summary>
    int _submitting;
    /// <summary>1: no submission is taken. 1 in <see cref="_stopping"/> too: every one taken is queued.</summary>
    int _closing, _stopping;
    int _live, _drained, _disposed;
    Exception? _failure;
    /// <summary>Room in the queue: a slot per request accepted that no worker has taken yet.</summary>
    readonly SemaphoreSlim _room;
    /// <summary>Cancelled when the engine closes, to refuse the submissions waiting for room.</summary>
    readonly CancellationTokenSource _closed = new();
    /// <summary>Set by the last worker out.</summary>
    readonly TaskCompletionSource _exited = new(TaskCreationOptions.RunContinuationsAsynchronously);
    long _waited;
    /// <summary>Answer through tasks instead of pooled sources (the Coyote tests).</summary>
    readonly bool _taskRequests;
    /// <summary>Twins (<see cref="EngineMutants"/>).</summary>
    readonly MutantFlag _lostWakeup, _closeWithoutWait;
    readonly ILogger _log;
    /// <summary><see cref="EngineOptions.Deadline"/> in Stopwatch ticks; 0: none.</summary>
    readonly long _deadlineTicks;
    readonly int _maxAttempts;
    /// <summary>A durable engine's directory, its log and what it recovered; null: in memory.</summary>
    readonly DirectoryRecovery.Opened? _durable;
    int _logStopped;

    /// <summary>The name of the engine's meter (<see cref="System.Diagnostics.Metrics"/>) and of its
    /// activity source (<see cref="System.Diagnostics.ActivitySource"/>), for OpenTelemetry's
    /// <c>AddMeter</c> and <c>AddSource</c>.</summary>
    public const string TelemetryName = "Contend.Engine";

    /// <summary>Claims <paramref name="db"/> (loaded, its tables all created) and starts the workers.</summary>
    /// <param name="db">the database, every table made and loaded; the engine owns it from here on and disposes it</param>
    /// <param name="options">checked here</param>
    /// <param name="logger">the engine's start and stop, a program that threw, the engine's failure</param>
    /// <param name="meters">makes the engine's meter (a host's, for its lifetime and its
    /// listeners); without one, a meter of the process's named <see cref="TelemetryName"/></param>
    /// <exception cref="ArgumentException">an option out of range, named; the protocol's options of another type</exception>
    /// <exception cref="InvalidOperationException">another engine serves <paramref name="db"/></exception>
    public ContendEngine(Database db, EngineOptions options, ILogger? logger = null, IMeterFactory? meters = null)
        : this(db, Checked(options), mutants: null, taskRequests: false, logger, meters)
    {
    }

    static EngineOptions Checked(EngineOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return options;
    }

    /// <param name="mutants">a broken step, for the tests that must catch it: the engine's own
    /// (<see cref="EngineMutants"/>) or the protocol's</param>
    /// <param name="taskRequests">answer through tasks, which Coyote's scheduler controls</param>
    internal ContendEngine(Database db, EngineOptions options, Enum? mutants, bool taskRequests, ILogger? logger = null, IMeterFactory? meters = null)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(options);
        options.CheckRanges();
        // A copy: the caller's instance stays the caller's to change. The protocol's name as the registry spells it.
        options = options with { Protocol = ProtocolRegistry.Find(options.Protocol).Name };
        _options = options;
        _protocol = ProtocolRegistry.Create(options.Protocol,
            new ProtocolSetup(db, options.Workers, options.ProtocolOptions) { Mutants = mutants is EngineMutants or DurabilityMutants ? null : mutants });
        db.Claim(options.Name);
        _db = db;
        var metrics = meters is null ? EngineMetrics.Default : EngineMetrics.For(meters);
        _log = logger ?? NullLogger.Instance;
        if (options.Durability == DurabilityMode.Durable)
        {
            var storage = options.Storage ?? new DiskStorage(Path.GetFullPath(options.DataDirectory!));
            try
            {
                _durable = DirectoryRecovery.Open(storage, db, options.Name, options.Workers, options.Loggers ?? Math.Max(1, (options.Workers + 7) / 8),
                                         options.EpochLength, FailFromLog, mutants is DurabilityMutants ? mutants : null);
            }
            catch
            {
                db.Release();
                throw;
            }
            var report = _durable.Report;
            EngineLog.Recovered(_log, options.Name, storage.Where, report.Transactions, report.Epoch, report.Rows, (long)report.Elapsed.TotalMilliseconds);
            if (report.StoppedAt is { } stopped) EngineLog.RecoveryStopped(_log, options.Name, storage.Where, stopped);
            metrics.Recovered(options.Name, report);
        }
        _taskRequests = taskRequests;
        _giveBack = _pool.Enqueue;
        _deadlineTicks = options.Deadline is { } deadline ? Math.Max(1, (long)(deadline.TotalSeconds * Stopwatch.Frequency)) : 0;
        _maxAttempts = options.MaxAttempts ?? int.MaxValue;
        _workers = new EmbeddedWorkers(_protocol, options.Workers, options.RecordHistory, options.Name, metrics);
        _lostWakeup = new(mutants, EngineMutants.LostWakeup);
        _closeWithoutWait = new(mutants, EngineMutants.CloseWithoutWait);
        _room = new SemaphoreSlim(options.QueueCapacity, options.QueueCapacity);
        _live = options.Workers;
        var source = new Submissions(this);
        for (int w = 0; w < options.Workers; w++)
        {
            var ctx = new TxnContext(w, _workers.Recorder) { Log = _durable?.Log.For(w) };
            var stats = _workers.Stats[w];
            ulong rng = Rng.Seed(0xE9_61E5, w);
            Action serve = _protocol is IBatchProtocol batch
                ? () => ServeBatches(batch, new BatchWorker(ctx, source, stats, rng, _control) { OnEnded = Answer, OnFailed = AnswerFailure })
                : () => ServeTransactions((ITransactionProtocol)_protocol, ctx, stats, rng);
            int core = options.Pin ? Affinity.NextCore() : -1, worker = w;
            new Thread(() => Serve(serve, worker, core)) { IsBackground = true, Name = $"contend-{options.Name}-{w}" }.Start();
        }
        _durable?.Log.Start();
        EngineLog.Started(_log, options.Name, options.Protocol, options.Workers, options.QueueCapacity);
        if (Affinity.Oversubscribed(options.Workers, "workers") is { } crowded) EngineLog.Oversubscribed(_log, options.Name, crowded);
    }

    /// <summary>
    /// Checks that the engine's protocol can run <paramref name="program"/> at all, as the first
    /// call of it does: a service calls it at start-up to hear of a program its protocol refuses
    /// before any request does (StealDB, say, refuses two ops keyed by the same argument on one
    /// table, which every call would fail). Arguments that make ops meet on one row only
    /// sometimes are not known here; those calls fail as they come.
    /// </summary>
    /// <exception cref="ArgumentException">the protocol cannot run the program, and why; or it was built against another database</exception>
    public void Check(TxnProgram program)
    {
        ArgumentNullException.ThrowIfNull(program);
        if (program.Schema != _db)
            throw new ArgumentException($"program {program.Name}: built against another database than engine '{_options.Name}' serves", nameof(program));
        if (ProtocolRegistry.Find(_options.Protocol).Refuses(program) is { } why)
            throw new ArgumentException($"protocol {_options.Protocol} cannot run it: {why}", nameof(program));
        Volatile.Write(ref program.CheckedFor, _protocol);
    }

    /// <summary>What a durable engine recovered from its directory when it opened; null for an
    /// engine in memory (<see cref="DurabilityMode.None"/>).</summary>
    public RecoveryReport? Recovery => _durable?.Report;

    /// <summary>The protocol the workers run.</summary>
    internal IProtocol Protocol => _protocol;

    /// <summary>The options the engine was made with.</summary>
    public EngineOptions Options => _options;

    /// <summary>Transactions accepted that no worker has taken yet.</summary>
    public long Pending => Math.Max(0, Volatile.Read(ref _control.Quota));

    /// <summary>Commits and aborts so far, over every worker (a snapshot).</summary>
    internal WorkerStats Totals() => _workers.Totals();

    /// <summary>What the engine has done so far, over every worker: a snapshot, each count read
    /// while the workers may be bumping it (approximate while they run, exact once drained).</summary>
    public EngineCounts Counts()
    {
        var t = _workers.Totals();
        return new EngineCounts(t.Commits, t.UserAborts, t.TotalAborts);
    }

    /// <summary>Every committed transaction's reads and writes so far, for <see cref="SerializabilityChecker"/>;
    /// call it once every submitted transaction has ended and none is being submitted.</summary>
    /// <exception cref="InvalidOperationException">the engine was made without <see cref="EngineOptions.RecordHistory"/></exception>
    public IReadOnlyList<CommittedTxn> History() => _workers.History();

    /// <inheritdoc cref="ExecuteAsync(TxnProgram, ReadOnlySpan{long}, Memory{long}, CancellationToken)"/>
    public ValueTask<TxnOutcome> ExecuteAsync(TxnProgram program, ReadOnlySpan<long> args, CancellationToken cancel = default) =>
        ExecuteAsync(program, args, Memory<long>.Empty, cancel);

    /// <summary>
    /// Submits <paramref name="program"/> with <paramref name="args"/> (copied) and returns its
    /// outcome: committed, or aborted by its logic (a missing key, a body's
    /// <see cref="TxnProgram.UserAbort"/>, a duplicate insert with its table and key). On a
    /// commit, <paramref name="results"/> (when not empty) holds each op's result by op index.
    /// Callable from any thread; a full queue waits without blocking one (or refuses, as
    /// configured). In steady state the call allocates nothing.
    /// </summary>
    /// <param name="results">at least <see cref="TxnProgram.ResultCount"/> long, or empty; written by a
    /// worker before the task ends, so not to be touched until then</param>
    /// <exception cref="ArgumentException">the program was built against another database, the
    /// engine's protocol cannot run it (<see cref="Check"/>, made by a program's first call), or the
    /// argument count or the results' length is wrong for it</exception>
    public ValueTask<TxnOutcome> ExecuteAsync(TxnProgram program, ReadOnlySpan<long> args, Memory<long> results, CancellationToken cancel = default)
    {
        ArgumentNullException.ThrowIfNull(program);
        if (program.Schema != _db)
            throw new ArgumentException($"program {program.Name}: built against another database than engine '{_options.Name}' serves", nameof(program));
        if (args.Length != program.ArgCount)
            throw new ArgumentException($"program {program.Name}: takes {program.ArgCount} arguments, given {args.Length}", nameof(args));
        if (!ReferenceEquals(Volatile.Read(ref program.CheckedFor), _protocol)) Check(program);
        if (results.Length != 0 && results.Length < program.Ops.Length)
            throw new ArgumentException($"program {program.Name}: has {program.Ops.Length} ops, so its results need as many slots, given {results.Length}", nameof(results));
        if (cancel.IsCancellationRequested) return ValueTask.FromCanceled<TxnOutcome>(cancel);
        var request = Rent();
        request.Fill(this, program, args, results, cancel, _deadlineTicks == 0 ? long.MaxValue : Stopwatch.GetTimestamp() + _deadlineTicks);
        var task = request.Task; // before the enqueue: a worker may answer at once
        if (!_room.Wait(0))
        {
            if (Volatile.Read(ref _closing) != 0 || _options.WhenQueueFull == WhenQueueFull.Refuse)
            {
                GiveBack(request);
                return ValueTask.FromException<TxnOutcome>(Volatile.Read(ref _closing) != 0 ? Refusal() : new EngineQueueFullException(_options.QueueCapacity));
            }
            return WhenRoomAsync(request, task, cancel);
        }
        if (Enqueue(request) is { } refused)
        {
            GiveBack(request);
            return ValueTask.FromException<TxnOutcome>(refused);
        }
        return task;
    }

    /// <summary>Submissions that found the queue full and waited for room (for the tests).</summary>
    internal long Waited => Volatile.Read(ref _waited);

    async ValueTask<TxnOutcome> WhenRoomAsync(EngineRequest request, ValueTask<TxnOutcome> task, CancellationToken cancel)
    {
        Interlocked.Increment(ref _waited);
        using (var either = CancellationTokenSource.CreateLinkedTokenSource(cancel, _closed.Token))
        {
            try
            {
                await _room.WaitAsync(either.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                GiveBack(request);
                if (cancel.IsCancellationRequested) throw new OperationCanceledException(cancel);
                throw Refusal(); // the engine closed
            }
        }
        if (Enqueue(request) is { } refused)
        {
            GiveBack(request);
            throw refused;
        }
        return await task.ConfigureAwait(false);
    }

    EngineRequest Rent()
    {
        if (_taskRequests) return new EngineRequest(giveBack: null);
        return _pool.TryDequeue(out var pooled) ? pooled : new EngineRequest(_giveBack);
    }

    /// <summary>A request that was never queued goes back to the pool unanswered.</summary>
    void GiveBack(EngineRequest request)
    {
        if (request.Pooled) _pool.Enqueue(request);
    }

    /// <summary>Queues a request that holds a slot of the queue; returns why not when the engine
    /// refuses it (and frees the slot).</summary>
    Exception? Enqueue(EngineRequest request)
    {
        Interlocked.Increment(ref _submitting);
        try
        {
            // Read after the increment, as Close writes before it reads the count: either Close
            // waits for this call, or this call sees the engine closed.
            if (Volatile.Read(ref _closing) != 0)
            {
                _room.Release();
                return Refusal();
            }
            _queue.Enqueue(request);
            Interlocked.Increment(ref _control.Quota); // after the enqueue: a worker that takes it finds it queued
        }
        finally
        {
            Interlocked.Decrement(ref _submitting);
        }
        Wake();
        return null;
    }

    Exception Refusal() => Volatile.Read(ref _failure) is { } failure
        ? new EngineFailedException(_options.Name, failure)
        : new EngineClosedException(_options.Name);

    /// <summary>Takes no more submissions and waits until every one accepted has ended and the
    /// workers have stopped, without blocking a thread; then disposes the database. Nothing
    /// accepted is dropped: a transaction either ran or, if the engine failed, its task failed.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        StopWorkers();
        await _exited.Task.ConfigureAwait(false);
        StopLog();
        Release();
    }

    /// <summary>As <see cref="DisposeAsync"/>, blocking the calling thread until the workers stop.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        Drain();
        Release();
    }

    /// <summary>Closes the engine and waits, blocking, for its workers to drain the queue and
    /// stop, keeping the database (the tests read it afterwards). Waits on the gate rather than
    /// the task: a Monitor wait is one Coyote schedules.</summary>
    internal void Drain()
    {
        StopWorkers();
        lock (_gate)
            while (Volatile.Read(ref _live) > 0) Monitor.Wait(_gate);
        StopLog();
    }

    /// <summary>Once the workers are out: their last commits made durable and answered, the log's
    /// threads stopped.</summary>
    void StopLog()
    {
        if (_durable is null || Interlocked.Exchange(ref _logStopped, 1) != 0) return;
        _durable.Log.Stop();
    }

    /// <summary>The log could not be made durable: the engine fails as when a worker dies.</summary>
    void FailFromLog(Exception error)
    {
        if (Interlocked.CompareExchange(ref _failure, error, null) is null) EngineLog.EngineFailed(_log, error, _options.Name);
        _control.Fail();
        Wake();
    }

    void StopWorkers()
    {
        if (Interlocked.Exchange(ref _drained, 1) != 0) return;
        Close();
        Volatile.Write(ref _stopping, 1);
        Wake();
    }

    void Release()
    {
        var counts = Counts();
        EngineLog.Stopped(_log, _options.Name, counts.Committed, counts.UserAborted, counts.ConflictAborts);
        _workers.Dispose();
        _durable?.Claim.Dispose();
        _db.Release();
        _db.Dispose();
    }

    /// <summary>Wakes every sleeping worker; what it should see is written before the call.</summary>
    void Wake()
    {
        Interlocked.Increment(ref _wakeups);
        if (Volatile.Read(ref _sleepers) == 0) return; // a worker about to sleep sees the new count
        lock (_gate) Monitor.PulseAll(_gate);
    }

    /// <summary>Sleeps until a <see cref="Wake"/> after the count <paramref name="seen"/> was read.</summary>
    void Sleep(long seen)
    {
        lock (_gate)
        {
            Interlocked.Increment(ref _sleepers); // before the count is read again: Wake reads it after bumping the count
            while (Volatile.Read(ref _wakeups) == seen) Monitor.Wait(_gate);
            Interlocked.Decrement(ref _sleepers);
        }
    }

    /// <summary>From here on every submission is refused, those waiting for room too, and every one
    /// accepted is queued.</summary>
    void Close()
    {
        Interlocked.Exchange(ref _closing, 1);
        _closed.Cancel();
        if (_closeWithoutWait) return;
        var wait = new SpinWait();
        while (Volatile.Read(ref _submitting) != 0) wait.SpinOnce();
    }

    /// <summary>A worker's thread: its protocol's loop until the engine stops with nothing left or
    /// a worker fails; the last one out fails whatever a failure left unanswered.</summary>
    void Serve(Action loop, int worker, int core)
    {
        try
        {
            if (core >= 0 && Affinity.PinCurrentThread(core) is { } unpinned)
                EngineLog.NotPinned(_log, _options.Name, worker, unpinned);
            loop();
        }
        catch (Exception e)
        {
            if (Interlocked.CompareExchange(ref _failure, e, null) is null) EngineLog.EngineFailed(_log, e, _options.Name);
            _control.Fail();
            Wake(); // the sleepers wake, see the failure, and leave
        }
        finally
        {
            if (Interlocked.Decrement(ref _live) == 0)
            {
                if (Volatile.Read(ref _failure) is { } failure) FailTheRest(failure);
                lock (_gate) Monitor.PulseAll(_gate); // Drain waits for the last worker out
                _exited.TrySetResult();
            }
        }
    }

    /// <summary>A batch protocol's worker: batches while there is work, asleep while there is none.</summary>
    void ServeBatches(IBatchProtocol protocol, BatchWorker worker)
    {
        while (true)
        {
            // The count first: whatever a later Wake announces, either it is seen below or
            // the count has moved and Sleep returns at once.
            long seen = Volatile.Read(ref _wakeups);
            if (worker.Failed) return;
            // Joins a batch another worker started, too; returns at once when none runs.
            protocol.Work(worker);
            // Stopping before the quota: once stopping is seen, every accepted submission
            // is in the quota or in a batch some worker is running to its end.
            bool stopping = Volatile.Read(ref _stopping) != 0;
            if (Volatile.Read(ref _control.Quota) > 0) continue;
            if (stopping) return;
            if (_lostWakeup) seen = Volatile.Read(ref _wakeups);
            Idle(seen);
        }
    }

    /// <summary>A per-transaction protocol's worker: the next request, run to its end, while
    /// there is one; asleep while there is none.</summary>
    void ServeTransactions(ITransactionProtocol protocol, TxnContext ctx, WorkerStats stats, ulong rng)
    {
        while (true)
        {
            long seen = Volatile.Read(ref _wakeups);
            if (Volatile.Read(ref _control.Failed) != 0) return;
            // Stopping before the look: once stopping is seen, every accepted request is queued.
            bool stopping = Volatile.Read(ref _stopping) != 0;
            if (Take() is { } request)
            {
                RunToEnd(protocol, request, ctx, stats, ref rng);
                continue;
            }
            if (stopping) return;
            if (_lostWakeup) seen = Volatile.Read(ref _wakeups);
            Idle(seen);
        }
    }

    /// <summary>Spins a little for a wake-up after the count <paramref name="seen"/>
    /// (<see cref="Spin.BeforeSleeping"/>), then sleeps until one.</summary>
    void Idle(long seen)
    {
        if (!Spin.BeforeSleeping((Engine: this, Seen: seen), static s => Volatile.Read(ref s.Engine._wakeups) != s.Seen)) Sleep(seen);
    }

    /// <summary>The next queued request, its slot in the queue freed; null when none is queued.</summary>
    EngineRequest? Take()
    {
        if (!_queue.TryDequeue(out var request)) return null;
        Interlocked.Decrement(ref _control.Quota);
        _room.Release();
        return request;
    }

    void RunToEnd(ITransactionProtocol protocol, EngineRequest request, TxnContext ctx, WorkerStats stats, ref ulong rng)
    {
        var program = request.Program;
        if (request.Cancel.IsCancellationRequested)
        {
            request.Fail(new OperationCanceledException(request.Cancel));
            return;
        }
        long now = Stopwatch.GetTimestamp();
        if (now >= request.Deadline)
        {
            request.Succeed(ctx, new TxnOutcome(Outcome.Aborted, AbortReason.Deadline, 0)); // passed while queued: not run
            return;
        }
        request.Args.AsSpan(0, program.ArgCount).CopyTo(ctx.Args);
        ctx.Start(program, Interlocked.Increment(ref _control.Timestamps));
        ctx.Cancel = request.Cancel; // the lock waits read both (TxnContext.GivingUp)
        ctx.Deadline = request.Deadline;
        var gate = new UntilGivenUp(stats, now, _maxAttempts);
        try
        {
            var outcome = Attempts.RunToEnd(protocol, ctx, ref rng, ref gate, out var reason, out int attempts);
            // Given up: its deadline, whatever the last conflict was, or its attempts ran out.
            if (outcome == Outcome.Aborted && Stopwatch.GetTimestamp() >= request.Deadline) reason = AbortReason.Deadline;
            request.Succeed(ctx, TxnOutcome.Of(ctx, outcome, reason, attempts));
        }
        catch (OperationCanceledException e) when (e.CancellationToken == request.Cancel)
        {
            request.Fail(e); // between attempts: the last one was undone
        }
        catch (Exception e)
        {
            EngineLog.TransactionFailed(_log, e, _options.Name, program.Name);
            request.Fail(new TransactionFailedException(program, e));
        }
    }

    /// <summary>A request's transaction: counted from its first attempt's start, retried until
    /// the caller cancels (which throws), its deadline passes, or its attempts run out.</summary>
    readonly struct UntilGivenUp(WorkerStats stats, long start, int maxAttempts) : IAttemptGate
    {
        public void Count(Outcome outcome, AbortReason reason) => stats.Count(outcome, reason, start);

        public bool Retry(TxnContext ctx)
        {
            ctx.Cancel.ThrowIfCancellationRequested();
            return ctx.ConflictRetries + 1 < maxAttempts && Stopwatch.GetTimestamp() < ctx.Deadline;
        }
    }

    /// <summary>The last worker out of a failed engine: every request not ended fails, queued or in a batch.</summary>
    void FailTheRest(Exception failure)
    {
        Close();
        var error = new EngineFailedException(_options.Name, failure);
        while (_queue.TryDequeue(out var queued)) queued.Fail(error);
        if (_protocol is IBatchProtocol batch)
            foreach (var tag in batch.Unfinished()) ((EngineRequest)tag).Fail(error);
    }

    /// <summary>Answers a request when its transaction ends in a batch, on the worker that ran it.</summary>
    static void Answer(TxnContext ctx, TxnOutcome outcome)
    {
        if (ctx.Tag is EngineRequest request) request.Succeed(ctx, outcome); // no tag: a twin's second run of a committed transaction
    }

    /// <summary>A batch transaction whose program threw, its attempt undone: it alone fails.</summary>
    void AnswerFailure(TxnContext ctx, Exception error)
    {
        EngineLog.TransactionFailed(_log, error, _options.Name, ctx.Program.Name);
        if (ctx.Tag is EngineRequest request) request.Fail(new TransactionFailedException(ctx.Program, error));
    }

    /// <summary>Every batch worker's source: the queue, which a batch draws from only after
    /// taking as many from the quota, so a draw always finds one.</summary>
    sealed class Submissions(ContendEngine engine) : ITransactionSource
    {
        public TxnProgram Next(TxnContext ctx)
        {
            if (!engine._queue.TryDequeue(out var request))
                throw new InvalidOperationException("a batch drew more transactions than were submitted (the quota and the queue disagree)");
            engine._room.Release(); // drawn: no longer in the queue
            request.Args.AsSpan(0, request.Program.ArgCount).CopyTo(ctx.Args);
            ctx.Tag = request;
            return request.Program;
        }
    }
}
