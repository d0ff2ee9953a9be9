using System.Diagnostics;
using Contend.Engine.Diagnostics;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Protocols;
using Contend.Engine.Storage;

namespace Contend.Engine.Runtime;

/// <summary>What one <see cref="Session.Execute"/> came to.</summary>
/// <param name="Reason">for an abort, why its last attempt aborted; None for a commit</param>
/// <param name="Attempts">attempts made, the conflict aborts retried included</param>
/// <param name="Duplicate">for <see cref="AbortReason.DuplicateKey"/>, the insert refused: its program, op, table and key</param>
public readonly record struct TxnOutcome(Outcome Outcome, AbortReason Reason, int Attempts, DuplicateKey? Duplicate = null)
{
    /// <summary>What a transaction on <paramref name="ctx"/> came to, its last attempt having ended so.</summary>
    internal static TxnOutcome Of(TxnContext ctx, Outcome outcome, AbortReason reason, int attempts) =>
        outcome == Outcome.Committed ? new(outcome, AbortReason.None, attempts) : new(outcome, reason, attempts, ctx.Duplicate);

    public bool Committed => Outcome == Outcome.Committed;
}

/// <summary>
/// The engine for a program that brings its own threads and its own requests (a service),
/// where <see cref="WorkerPool"/> runs a workload for a time. One per-transaction protocol,
/// chosen by name, over a loaded <see cref="Database"/>; a fixed number of sessions, each the
/// protocol's worker slot for the thread that holds it. A session runs one transaction at a
/// time to its commit or its logic's abort, retrying conflict aborts after a randomized
/// back-off, as the pool's workers do.
/// </summary>
/// <remarks>
/// A batch protocol (Strife) is refused: its unit of work is a batch that workers of its own
/// analyse and run together, not one request on the caller's thread (<see cref="BatchEngine"/>). Threads are not
/// pinned: a service's threads are its own. The queue-lock protocols (Mcs, StealDB) hand each
/// lock to the next waiter in line, so a descheduled waiter stalls the queue behind it: more
/// sessions running at once than cores slows them by orders of magnitude (README.md). The meter <see cref="EngineMetrics"/> counts the
/// sessions' transactions under the workload name the engine is given. A body that throws
/// reaches <see cref="Session.Execute"/>'s caller after its attempt is undone (locks released,
/// images restored), under every protocol; under StealDB even when another session's thread
/// ran the op, which goes on with its own transaction.
/// </remarks>
public sealed class TransactionEngine : IDisposable
{
    readonly ITransactionProtocol _protocol;
    /// <summary>Per worker slot, 1 while a session holds it.</summary>
    readonly int[] _open;
    readonly EmbeddedWorkers _workers;
    long _timestamps;
    int _disposed;

    /// <param name="protocol">a per-transaction protocol's name (<see cref="ProtocolRegistry.Names"/>)</param>
    /// <param name="sessions">sessions open at once, at most: the protocol's worker slots, 1..255</param>
    /// <param name="recordHistory">record every commit's reads and writes, for <see cref="History"/></param>
    /// <param name="name">what the meter's series are tagged with as their workload</param>
    public TransactionEngine(Database db, string protocol, int sessions, bool recordHistory = false, string name = "embedded")
    {
        if (sessions is < 1 or > 255) throw new ArgumentOutOfRangeException(nameof(sessions), $"sessions {sessions}: must be 1..255");
        EmbeddedWorkers.CheckProtocol(protocol, batch: false);
        _protocol = (ITransactionProtocol)ProtocolRegistry.Create(protocol, ProtocolSetup.For(db, sessions));
        _open = new int[sessions];
        _workers = new EmbeddedWorkers(_protocol, sessions, recordHistory, name);
    }

    public IProtocol Protocol => _protocol;

    /// <summary>Commits and aborts so far, over every session, open or closed.</summary>
    public WorkerStats Totals() => _workers.Totals();

    /// <summary>Every committed transaction's reads and writes so far, for
    /// <see cref="SerializabilityChecker"/>; call it while no session runs a transaction.</summary>
    public List<CommittedTxn> History() => _workers.History();

    /// <summary>Takes a free session; throws when every one is open (close one with Dispose).</summary>
    public Session OpenSession()
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        for (int w = 0; w < _open.Length; w++)
        {
            // The slot first, then the session: a session's context is 64 KiB and more.
            if (Interlocked.CompareExchange(ref _open[w], 1, 0) == 0) return new Session(this, w);
        }
        throw new InvalidOperationException($"all {_open.Length} sessions are open: close one first, or make the engine with more");
    }

    void Close(int worker) => Volatile.Write(ref _open[worker], 0);

    /// <summary>Ends the meter's tracking; the engine opens no more sessions. Open sessions must
    /// not run transactions after it.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0) _workers.Dispose();
    }

    /// <summary>
    /// One worker slot of the protocol, for one thread at a time (any thread, one after
    /// another: an async request may resume elsewhere). Using it from two threads at once
    /// throws, since the protocols keep a slot's state for exactly one running transaction.
    /// </summary>
    public sealed class Session : IDisposable
    {
        readonly TransactionEngine _engine;
        readonly TxnContext _ctx;
        readonly WorkerStats _stats;
        ulong _rng;
        int _busy, _closed;

        internal Session(TransactionEngine engine, int worker)
        {
            _engine = engine;
            _ctx = new TxnContext(worker, engine._workers.Recorder);
            _stats = engine._workers.Stats[worker];
            _rng = Rng.Seed(0x5E55_1011, worker);
        }

        /// <summary>The results of the last transaction's ops, by op index (valid after a commit,
        /// until the next <see cref="Execute"/>).</summary>
        public ReadOnlySpan<long> Results => _ctx.Results.AsSpan(0, _ctx.Program?.Ops.Length ?? 0);

        /// <summary>Runs <paramref name="program"/> with <paramref name="args"/> to its commit or its
        /// logic's abort, retrying conflict aborts. Cancelled between attempts, it throws
        /// <see cref="OperationCanceledException"/>, the transaction not committed.</summary>
        public TxnOutcome Execute(TxnProgram program, ReadOnlySpan<long> args, CancellationToken cancel = default)
        {
            ArgumentNullException.ThrowIfNull(program);
            if (args.Length != program.ArgCount)
                throw new ArgumentException($"program {program.Name}: takes {program.ArgCount} arguments, given {args.Length}", nameof(args));
            if (Volatile.Read(ref _closed) != 0) throw new ObjectDisposedException(nameof(Session), "the session is closed");
            if (Interlocked.Exchange(ref _busy, 1) != 0)
                throw new InvalidOperationException($"session {_ctx.Worker}: used by two threads at once");
            try
            {
                args.CopyTo(_ctx.Args);
                _ctx.Start(program, Interlocked.Increment(ref _engine._timestamps));
                var gate = new UntilCancelled(_stats, Stopwatch.GetTimestamp(), cancel);
                var outcome = Attempts.RunToEnd(_engine._protocol, _ctx, ref _rng, ref gate, out var reason, out int attempts);
                return TxnOutcome.Of(_ctx, outcome, reason, attempts);
            }
            finally
            {
                Volatile.Write(ref _busy, 0);
            }
        }

        /// <summary>A session's transaction: counted from its first attempt's start, retried until the caller cancels.</summary>
        readonly struct UntilCancelled(WorkerStats stats, long start, CancellationToken cancel) : IAttemptGate
        {
            public void Count(Outcome outcome, AbortReason reason) => stats.Count(outcome, reason, start);

            public bool Retry(TxnContext ctx)
            {
                cancel.ThrowIfCancellationRequested();
                return true;
            }
        }

        /// <summary>Returns the slot to the engine for another session. Throws while a transaction
        /// runs on it: the slot would otherwise serve two transactions at once.</summary>
        public void Dispose()
        {
            if (Volatile.Read(ref _closed) != 0) return;
            // Taking the busy flag for good keeps Execute out from here on.
            if (Interlocked.CompareExchange(ref _busy, 1, 0) != 0)
                throw new InvalidOperationException($"session {_ctx.Worker}: closed while it runs a transaction");
            Volatile.Write(ref _closed, 1);
            _engine.Close(_ctx.Worker);
        }
    }
}
