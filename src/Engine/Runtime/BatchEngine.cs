using System.Collections.Concurrent;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Storage;

namespace Contend.Engine.Runtime;

/// <summary>What a submitted transaction came to: its outcome, and for a commit its ops' results by op index.</summary>
public sealed record TxnResult(TxnOutcome Outcome, long[] Results)
{
    public bool Committed => Outcome.Committed;
}

/// <summary>
/// The engine for a service over a batch protocol (Strife): the service's threads submit
/// transactions and await them, and the engine's own workers gather what is waiting into
/// batches and run them. A batch holds whatever was submitted and not yet taken when it
/// starts, up to the batch size, so under load batches fill up and a lone request waits for
/// no one (nor for a timer). <see cref="TransactionEngine"/> is its per-transaction twin.
/// </summary>
/// <remarks>
/// A transaction's place in the serial order is its batch's analysis's, not the order of
/// submission: two requests in flight at once may be serialized either way, as on any
/// engine. An accepted transaction always runs; there is no cancelling it. With a bound on the
/// backlog (maxPending), a submission beyond it waits for room without blocking its caller, and
/// may be cancelled while it waits; Dispose refuses those still waiting. Idle workers sleep
/// until a submission arrives. A body or key function that throws is a bug in the program:
/// the engine fails, every transaction not yet ended (queued, or in a batch) fails with it,
/// and the engine takes no more. Rows a throwing transaction wrote in place without images
/// (a clustered program built with <see cref="ProgramBuilder.BodiesNeverAbort"/>) keep what
/// it wrote; a residual's writes are undone.
/// </remarks>
public sealed class BatchEngine : IDisposable
{
    readonly IBatchProtocol _protocol;
    readonly ConcurrentQueue<Request> _queue = new();
    /// <summary>Its Quota is the count of submitted transactions no batch has taken yet.</summary>
    readonly RunControl _control = new(WorkerPool.Measure, 0);
    readonly EmbeddedWorkers _workers;
    /// <summary>An event count: a waker bumps <see cref="_wakeups"/>, and a sleeper sleeps only while
    /// it still holds the count it read before it last looked for work. (A shared reset event
    /// would not do: one worker's Reset can swallow the Set another worker was woken by.)</summary>
    readonly object _gate = new();
    long _wakeups;
    int _sleepers;
    /// <summary>Submit calls under way; <see cref="Close"/> waits for them to end.</summary>
    int _submitting;
    /// <summary>1: no submission is taken. 1 in <see cref="_stopping"/> too: every one taken is in the quota.</summary>
    int _closing, _stopping;
    int _live, _disposed;
    Exception? _failure;
    /// <summary>Room in the backlog: a slot per transaction submitted that no batch has drawn yet;
    /// null when the backlog is unbounded.</summary>
    readonly SemaphoreSlim? _room;
    /// <summary>Cancelled when the engine closes, to refuse the submissions waiting for room.</summary>
    readonly CancellationTokenSource _closed = new();
    long _waited;
    /// <summary>Twins (<see cref="BatchEngineMutants"/>).</summary>
    readonly MutantFlag _lostWakeup, _closeWithoutWait;

    /// <param name="protocol">a batch protocol's name (<see cref="ProtocolKind.Batch"/>)</param>
    /// <param name="workers">the engine's worker threads, 1..255</param>
    /// <param name="options">the protocol's knobs (<see cref="ProtocolDescriptor.OptionsType"/>); null: its defaults</param>
    /// <param name="recordHistory">record every commit's reads and writes, for <see cref="History"/></param>
    /// <param name="name">what the meter's series are tagged with as their workload</param>
    /// <param name="pin">pin worker w to core w mod the cores (a machine given over to the engine)</param>
    /// <param name="maxPending">the most transactions submitted and not yet drawn into a batch; a
    /// submission beyond it waits for room. Null: no bound.</param>
    public BatchEngine(Database db, string protocol, int workers, ProtocolOptions? options = null,
                       bool recordHistory = false, string name = "embedded", bool pin = false, int? maxPending = null)
        : this(db, protocol, workers, options, recordHistory, name, pin, maxPending, mutants: null)
    {
    }

    /// <param name="mutants">a broken step, for the tests that must catch it: the engine's own
    /// (<see cref="BatchEngineMutants"/>) or the protocol's</param>
    internal BatchEngine(Database db, string protocol, int workers, ProtocolOptions? options,
                         bool recordHistory, string name, bool pin, int? maxPending, Enum? mutants)
    {
        if (workers is < 1 or > 255) throw new ArgumentOutOfRangeException(nameof(workers), $"workers {workers}: must be 1..255");
        if (maxPending is < 1) throw new ArgumentOutOfRangeException(nameof(maxPending), $"maxPending {maxPending}: must be at least 1, or null for no bound");
        EmbeddedWorkers.CheckProtocol(protocol, batch: true);
        _protocol = (IBatchProtocol)ProtocolRegistry.Create(protocol, new ProtocolSetup(db, workers, options) { Mutants = mutants is BatchEngineMutants ? null : mutants });
        _workers = new EmbeddedWorkers(_protocol, workers, recordHistory, name);
        _lostWakeup = new(mutants, BatchEngineMutants.LostWakeup);
        _closeWithoutWait = new(mutants, BatchEngineMutants.CloseWithoutWait);
        if (maxPending is int bound) _room = new SemaphoreSlim(bound, bound);
        var source = new Submissions(_queue, _room);
        _live = workers;
        for (int w = 0; w < workers; w++)
        {
            var worker = new BatchWorker(new TxnContext(w, _workers.Recorder), source, _workers.Stats[w], Rng.Seed(0xBA7C, w), _control) { OnEnded = Answer };
            int core = w;
            new Thread(() => Serve(worker, pin ? core : -1)) { IsBackground = true, Name = $"contend-batch-{w}" }.Start();
        }
    }

    public IProtocol Protocol => _protocol;

    /// <summary>Transactions submitted that no batch has taken yet: a service that wants to bound
    /// its backlog reads it before submitting more.</summary>
    public long Pending => Math.Max(0, Volatile.Read(ref _control.Quota));

    /// <summary>Commits and aborts so far, over every worker.</summary>
    public WorkerStats Totals() => _workers.Totals();

    /// <summary>Every committed transaction's reads and writes so far, for <see cref="SerializabilityChecker"/>;
    /// call it once every submitted transaction has ended and none is being submitted.</summary>
    public List<CommittedTxn> History() => _workers.History();

    /// <summary>
    /// Queues <paramref name="program"/> with <paramref name="args"/> (copied) for the next batch;
    /// the task ends with its commit or its logic's abort, conflict aborts having been retried
    /// inside the engine. Throws at once on bad arguments, after <see cref="Dispose"/>, or once the
    /// engine has failed. With the backlog full it returns at once too, and the task waits for
    /// room: <paramref name="cancel"/> cancels that wait (the task ends cancelled), and an engine
    /// that closes meanwhile fails the task as it would have thrown. Once queued, the transaction
    /// runs whatever the token does. The task's continuations run on the thread pool, never on a worker.
    /// </summary>
    public Task<TxnResult> SubmitAsync(TxnProgram program, ReadOnlySpan<long> args, CancellationToken cancel = default)
    {
        ArgumentNullException.ThrowIfNull(program);
        if (args.Length != program.ArgCount)
            throw new ArgumentException($"program {program.Name}: takes {program.ArgCount} arguments, given {args.Length}", nameof(args));
        var request = new Request(program, args.ToArray());
        if (_room is not null && !_room.Wait(0))
        {
            if (Volatile.Read(ref _closing) != 0) throw Refusal();
            return cancel.IsCancellationRequested ? Task.FromCanceled<TxnResult>(cancel) : SubmitWhenRoomAsync(request, cancel);
        }
        Enqueue(request);
        return request.Task;
    }

    /// <summary>Submissions that found the backlog full and waited for room (for the tests).</summary>
    internal long Waited => Volatile.Read(ref _waited);

    async Task<TxnResult> SubmitWhenRoomAsync(Request request, CancellationToken cancel)
    {
        Interlocked.Increment(ref _waited);
        using (var either = CancellationTokenSource.CreateLinkedTokenSource(cancel, _closed.Token))
        {
            try
            {
                await _room!.WaitAsync(either.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (!cancel.IsCancellationRequested)
            {
                throw Refusal(); // the engine closed
            }
        }
        Enqueue(request);
        return await request.Task.ConfigureAwait(false);
    }

    /// <summary>Queues a request that holds a slot of the backlog (when it is bounded), or refuses it.</summary>
    void Enqueue(Request request)
    {
        Interlocked.Increment(ref _submitting);
        try
        {
            // Read after the increment, as Close writes before it reads the count: either Close
            // waits for this call, or this call sees the engine closed.
            if (Volatile.Read(ref _closing) != 0)
            {
                _room?.Release();
                throw Refusal();
            }
            _queue.Enqueue(request);
            Interlocked.Increment(ref _control.Quota); // after the enqueue: a batch that takes it finds it queued
        }
        finally
        {
            Interlocked.Decrement(ref _submitting);
        }
        Wake();
    }

    Exception Refusal() => Volatile.Read(ref _failure) is { } failure
        ? new InvalidOperationException($"the engine failed and takes no more transactions: {failure.Message}", failure)
        : new ObjectDisposedException(nameof(BatchEngine), "the engine is disposed and takes no more transactions");

    /// <summary>Takes no more submissions, waits until every one submitted has ended, and stops the
    /// workers. Nothing submitted is dropped: a transaction either ran or, if the engine failed,
    /// its task failed.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        Close();
        Volatile.Write(ref _stopping, 1);
        Wake();
        // Waits on the gate rather than joining the threads: a Join is a wait Coyote does not
        // control, a Monitor wait is one it schedules.
        lock (_gate)
            while (Volatile.Read(ref _live) > 0) Monitor.Wait(_gate);
        _workers.Dispose();
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
    /// accepted is in the quota.</summary>
    void Close()
    {
        Interlocked.Exchange(ref _closing, 1);
        _closed.Cancel();
        if (_closeWithoutWait) return;
        var wait = new SpinWait();
        while (Volatile.Read(ref _submitting) != 0) wait.SpinOnce();
    }

    /// <summary>A worker's thread: batches while there is work, asleep while there is none, until
    /// the engine stops with nothing left or a worker fails.</summary>
    void Serve(BatchWorker worker, int core)
    {
        try
        {
            if (core >= 0) Affinity.PinCurrentThread(core % Environment.ProcessorCount); // a refusal leaves it unpinned
            while (true)
            {
                // The count first: whatever a later Wake announces, either it is seen below or
                // the count has moved and Sleep returns at once.
                long seen = Volatile.Read(ref _wakeups);
                if (worker.Failed) break;
                // Joins a batch another worker started, too; returns at once when none runs.
                _protocol.Work(worker);
                // Stopping before the quota: once stopping is seen, every accepted submission
                // is in the quota or in a batch some worker is running to its end.
                bool stopping = Volatile.Read(ref _stopping) != 0;
                if (Volatile.Read(ref _control.Quota) > 0) continue;
                if (stopping) break;
                if (_lostWakeup) seen = Volatile.Read(ref _wakeups);
                Sleep(seen);
            }
        }
        catch (Exception e)
        {
            Interlocked.CompareExchange(ref _failure, e, null);
            _control.Fail();
            Wake(); // the sleepers wake, see the failure, and leave
        }
        finally
        {
            if (Interlocked.Decrement(ref _live) == 0)
            {
                if (Volatile.Read(ref _failure) is { } failure) FailTheRest(failure);
                lock (_gate) Monitor.PulseAll(_gate); // Dispose waits for the last worker out
            }
        }
    }

    /// <summary>The last worker out of a failed engine: every transaction not ended fails, queued or drawn.</summary>
    void FailTheRest(Exception failure)
    {
        Close();
        var error = new InvalidOperationException($"the engine failed before this transaction ended: {failure.Message}", failure);
        while (_queue.TryDequeue(out var queued)) queued.TrySetException(error);
        foreach (var tag in _protocol.Unfinished()) ((Request)tag).TrySetException(error);
    }

    /// <summary>Answers a request when its transaction ends, on the worker that ran it.</summary>
    static void Answer(TxnContext ctx, TxnOutcome outcome)
    {
        if (ctx.Tag is not Request request) return; // a twin's second run of a committed transaction
        var results = outcome.Committed ? ctx.Results.AsSpan(0, ctx.Program.Ops.Length).ToArray() : [];
        request.TrySetResult(new TxnResult(outcome, results));
    }

    /// <summary>A submitted transaction, carried through its batch as its <see cref="TxnContext.Tag"/>.</summary>
    sealed class Request(TxnProgram program, long[] args) : TaskCompletionSource<TxnResult>(TaskCreationOptions.RunContinuationsAsynchronously)
    {
        public readonly TxnProgram Program = program;
        public readonly long[] Args = args;
    }

    /// <summary>Every worker's source: the queue of submissions, which a batch draws from only
    /// after taking as many from the quota, so a draw always finds one.</summary>
    sealed class Submissions(ConcurrentQueue<Request> queue, SemaphoreSlim? room) : ITransactionSource
    {
        public TxnProgram Next(TxnContext ctx)
        {
            if (!queue.TryDequeue(out var request))
                throw new InvalidOperationException("a batch drew more transactions than were submitted (the quota and the queue disagree)");
            room?.Release(); // drawn: no longer in the backlog
            request.Args.CopyTo(ctx.Args, 0);
            ctx.Tag = request;
            return request.Program;
        }
    }
}
