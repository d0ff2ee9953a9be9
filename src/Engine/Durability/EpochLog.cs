using System.Buffers.Binary;
using Contend.Engine.Protocols;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Durability;

/// <summary>What a protocol's commit point shows the log: the rows its transaction holds, which it
/// read or wrote, and each written row's new value. A struct per protocol, so the loop over it
/// is specialized and nothing is allocated.</summary>
internal interface ICommitSet
{
    int Count { get; }
    Table Table(int i);
    int Row(int i);
    /// <summary>Whether entry i is a row the transaction holds (read or written): its commit id orders this one.</summary>
    bool Holds(int i);
    /// <summary>Whether the transaction wrote entry i's row (a held one).</summary>
    bool Written(int i);
    /// <summary>The written row's new value (its private copy, or the row itself where it was written in place).</summary>
    ReadOnlySpan<byte> After(int i);
}

/// <summary>Something that waits for its commit to become durable: a caller's request.</summary>
internal interface IDurableAnswer
{
    void Acknowledge();
    void Fail(Exception error);
}

/// <summary>
/// Group commit by epochs (specs/Durability/Durability.tla). Workers commit into their own
/// buffers; each logger thread, once an epoch, takes its workers' buffers, writes them to its file
/// after an epoch mark, syncs, and publishes what it covers; the durable epoch is the least
/// of the loggers'; a caller hears of its commit once its epoch is durable.
/// </summary>
internal sealed class EpochLog
{
    readonly WorkerLog[] _workers;
    readonly Logger[] _loggers;
    readonly string _name;
    readonly int _epochMilliseconds;
    /// <summary>The global epoch, read by every commit (spec: epoch).</summary>
    long _epoch;
    /// <summary>The durable epoch (spec: durable).</summary>
    long _durable;
    Exception? _failure;
    readonly object _gate = new();
    long _round;
    /// <summary>The round logger 0 ran once stopping: every logger's last.</summary>
    long _finalRound = long.MaxValue;
    bool _stopping;
    int _running;
    readonly Action<Exception> _onFailed;
    readonly MutantFlag _durableIsMax;

    /// <param name="firstEpoch">one after the recovered durable epoch</param>
    /// <param name="files">one open log file per logger, its header written and synced, and the
    /// header's crc, which its first record chains from</param>
    /// <param name="mutants">the tests' broken steps (<see cref="DurabilityMutants"/>), or null</param>
    public EpochLog(string name, int workers, (ILogFile File, uint Crc)[] files, long firstEpoch, TimeSpan epochLength, Action<Exception> onFailed, Enum? mutants = null)
    {
        _durableIsMax = new(mutants, DurabilityMutants.DurableIsMax);
        var atCommit = new MutantFlag(mutants, DurabilityMutants.AcknowledgeAtCommit);
        var withoutEpoch = new MutantFlag(mutants, DurabilityMutants.CommitIdWithoutEpoch);
        _name = name;
        _epoch = firstEpoch;
        _durable = firstEpoch - 1;
        _epochMilliseconds = Math.Max(1, (int)epochLength.TotalMilliseconds);
        _onFailed = onFailed;
        _workers = new WorkerLog[workers];
        for (int w = 0; w < workers; w++) _workers[w] = new WorkerLog(this, atCommit, withoutEpoch);
        _loggers = new Logger[files.Length];
        for (int l = 0; l < files.Length; l++)
        {
            var mine = Enumerable.Range(0, workers).Where(w => w % files.Length == l).Select(w => _workers[w]).ToArray();
            _loggers[l] = new Logger(this, files[l].File, files[l].Crc, mine, firstEpoch - 1);
        }
    }

    public WorkerLog For(int worker) => _workers[worker];

    public long Epoch => Volatile.Read(ref _epoch);

    public long DurableEpoch => Volatile.Read(ref _durable);

    public Exception? Failure => Volatile.Read(ref _failure);

    public void Start()
    {
        _running = _loggers.Length;
        for (int l = 0; l < _loggers.Length; l++)
        {
            var logger = _loggers[l];
            bool ticks = l == 0; // logger 0 advances the epoch and starts each round
            new Thread(() => logger.Run(ticks)) { IsBackground = true, Name = $"contend-{_name}-logger-{l}" }.Start();
        }
    }

    /// <summary>Once the workers have stopped: makes everything they committed durable and
    /// answers it, then stops the loggers.</summary>
    public void Stop()
    {
        lock (_gate)
        {
            _stopping = true;
            Monitor.PulseAll(_gate);
            while (_running > 0) Monitor.Wait(_gate);
        }
        foreach (var logger in _loggers) logger.Close();
    }

    /// <summary>The round's epoch, for every logger: the epoch before it is the one it marks.</summary>
    long BeginRound(bool final)
    {
        long next = Interlocked.Increment(ref _epoch);
        lock (_gate)
        {
            _round = next;
            if (final) _finalRound = next;
            Monitor.PulseAll(_gate);
        }
        return next;
    }

    bool Last(long round)
    {
        lock (_gate) return round >= _finalRound;
    }

    /// <summary>Logger 0's wait for the next round; false once stopping (a last round then runs).
    /// A sleep, not a timed wait on the gate: under Coyote 1.7 the timed wait was reported as a
    /// potential deadlock on the first schedule, the sleep is not; a stop waits at most an epoch.</summary>
    bool WaitForTick()
    {
        Thread.Sleep(_epochMilliseconds);
        lock (_gate) return !_stopping;
    }

    /// <summary>The other loggers' wait for a round after <paramref name="seen"/> (or the log's failure).</summary>
    long WaitForRound(long seen)
    {
        lock (_gate)
        {
            while (_round == seen && Failure is null) Monitor.Wait(_gate);
            return _round;
        }
    }

    /// <summary>Whether a round has anything to do: records to write, or callers to answer.</summary>
    bool Pending()
    {
        foreach (var w in _workers)
            if (w.HasWork) return true;
        foreach (var logger in _loggers)
            if (logger.Waiting) return true;
        return false;
    }

    /// <summary>The durable epoch: the least any logger has synced (spec: DurableEpoch); then the
    /// callers it covers hear of their commits.</summary>
    void Publish()
    {
        long least = _durableIsMax ? long.MinValue : long.MaxValue;
        foreach (var logger in _loggers) least = _durableIsMax ? Math.Max(least, logger.Synced) : Math.Min(least, logger.Synced);
        long durable = Volatile.Read(ref _durable);
        while (least > durable)
        {
            long seen = Interlocked.CompareExchange(ref _durable, least, durable);
            if (seen == durable) break;
            durable = seen;
        }
        foreach (var logger in _loggers) logger.AnswerUpTo(Volatile.Read(ref _durable));
    }

    /// <summary>A write or sync failed: the engine fails, and no caller waiting is told its commit
    /// happened (a sync is never retried: after a failed fdatasync the kernel may have dropped the
    /// pages it could not write, and a second sync that returns says nothing of them).</summary>
    void Fail(Exception cause)
    {
        var error = new DurabilityFailedException(_name, cause);
        if (Interlocked.CompareExchange(ref _failure, error, null) is not null) return;
        foreach (var logger in _loggers) logger.FailWaiting(error);
        foreach (var w in _workers) w.FailHeld(error);
        lock (_gate) Monitor.PulseAll(_gate);
        _onFailed(error);
    }

    void LoggerExited()
    {
        lock (_gate)
        {
            _running--;
            Monitor.PulseAll(_gate);
        }
    }

    /// <summary>One logger thread and its file (spec: Collect, Sync).</summary>
    sealed class Logger(EpochLog log, ILogFile file, uint headerCrc, WorkerLog[] workers, long synced)
    {
        readonly List<(long Epoch, IDurableAnswer Answer)> _waiting = [];
        readonly byte[][] _spares = workers.Select(_ => new byte[WorkerLog.InitialBytes]).ToArray();
        readonly byte[] _mark = new byte[LogFormat.FrameSize + LogFormat.MarkBodySize];
        uint _crc = headerCrc;
        long _synced = synced;

        public long Synced => Volatile.Read(ref _synced);

        public bool Waiting
        {
            get
            {
                lock (_waiting) return _waiting.Count > 0;
            }
        }

        public void Run(bool ticks)
        {
            try
            {
                long seen = 0;
                while (log.Failure is null)
                {
                    long round;
                    if (ticks)
                    {
                        bool stopping = !log.WaitForTick();
                        if (!stopping && !log.Pending()) continue;
                        round = log.BeginRound(final: stopping);
                    }
                    else
                    {
                        round = log.WaitForRound(seen);
                        if (log.Failure is not null) break;
                    }
                    seen = round;
                    Round(round);
                    if (log.Last(round)) break;
                }
            }
            catch (Exception e)
            {
                log.Fail(e);
            }
            finally
            {
                // What it took from its workers after another logger's failure failed the rest
                // (a race Coyote found with two loggers) fails too: nothing is left unanswered.
                if (log.Failure is { } failure)
                {
                    foreach (var w in workers) w.FailHeld(failure);
                    FailWaiting(failure);
                }
                log.LoggerExited();
            }
        }

        /// <summary>Takes its workers' buffers, writes them and the mark of epoch round - 1, syncs,
        /// and publishes.</summary>
        void Round(long round)
        {
            for (int i = 0; i < workers.Length; i++)
            {
                var (bytes, used) = workers[i].Take(_spares[i], _waiting);
                _spares[i] = bytes;
                if (used == 0) continue;
                _crc = LogFormat.Seal(bytes.AsSpan(0, used), _crc);
                file.Append(bytes.AsSpan(0, used));
            }
            int markLength = LogFormat.Mark(_mark, round - 1);
            _crc = LogFormat.Seal(_mark.AsSpan(0, markLength), _crc);
            file.Append(_mark.AsSpan(0, markLength));
            file.Sync();
            Volatile.Write(ref _synced, round - 1);
            log.Publish();
        }

        public void AnswerUpTo(long durable)
        {
            lock (_waiting)
            {
                int kept = 0;
                for (int i = 0; i < _waiting.Count; i++)
                {
                    if (_waiting[i].Epoch <= durable) _waiting[i].Answer.Acknowledge();
                    else _waiting[kept++] = _waiting[i];
                }
                _waiting.RemoveRange(kept, _waiting.Count - kept);
            }
        }

        public void FailWaiting(Exception error)
        {
            lock (_waiting)
            {
                foreach (var (_, answer) in _waiting) answer.Fail(error);
                _waiting.Clear();
            }
        }

        public void Close() => file.Dispose();
    }
}

/// <summary>
/// One worker's side of the log: its buffer of committed records and the answers waiting on
/// them, behind a lock only the worker and its logger take. The lock is held from the epoch's
/// read to the record's end, which is what makes a logger's mark true (proofs/Durability.md).
/// </summary>
internal sealed class WorkerLog(EpochLog log, MutantFlag acknowledgeAtCommit, MutantFlag commitIdWithoutEpoch)
{
    public const int InitialBytes = 64 * 1024;

    readonly object _lock = new();
    byte[] _buffer = new byte[InitialBytes];
    int _used;
    List<(long Epoch, IDurableAnswer Answer)> _held = [];
    long _lastCommitId;

    public bool HasWork
    {
        get
        {
            lock (_lock) return _used > 0 || _held.Count > 0;
        }
    }

    /// <summary>The commit step (spec: Commit): under the rows' locks, takes a commit id larger
    /// than the epoch's first, the worker's last and every held row's, stamps the written rows and
    /// the inserted ones with it, and appends the record. Returns the commit's epoch.</summary>
    public long Commit<TSet>(TxnContext ctx, Database db, in TSet set) where TSet : struct, ICommitSet
    {
        lock (_lock)
        {
            long epoch = log.Epoch;
            long commitId = commitIdWithoutEpoch ? _lastCommitId + 1 : Math.Max(epoch << LogFormat.EpochShift, _lastCommitId + 1);
            int writes = 0;
            for (int i = 0; i < set.Count; i++)
            {
                if (!set.Holds(i)) continue;
                long seen = Volatile.Read(ref set.Table(i).CommitId(set.Row(i)));
                if (seen >= commitId) commitId = seen + 1;
                if (set.Written(i)) writes++;
            }
            writes += ctx.InsertCount;
            if (writes > 0)
            {
                int start = _used;
                Reserve(LogFormat.FrameSize + LogFormat.CommitHeaderSize);
                _used += LogFormat.FrameSize + LogFormat.CommitHeaderSize;
                for (int i = 0; i < set.Count; i++)
                {
                    if (!set.Written(i)) continue;
                    var table = set.Table(i);
                    int row = set.Row(i);
                    Volatile.Write(ref table.CommitId(row), commitId);
                    AppendWrite(table, table.Key(row), set.After(i));
                }
                for (int k = 0; k < ctx.InsertCount; k++)
                {
                    var table = db[ctx.Program.Ops[ctx.InsertOp[k]].TableId];
                    int row = ctx.InsertRow[k];
                    Volatile.Write(ref table.CommitId(row), commitId);
                    AppendWrite(table, ctx.InsertKey[k], table.Payload(row));
                }
                var frame = _buffer.AsSpan(start);
                BinaryPrimitives.WriteInt32LittleEndian(frame, _used - start - LogFormat.FrameSize);
                frame[8] = LogFormat.CommitKind;
                BinaryPrimitives.WriteInt64LittleEndian(frame[LogFormat.FrameSize..], commitId);
                BinaryPrimitives.WriteUInt16LittleEndian(frame[(LogFormat.FrameSize + 8)..], checked((ushort)writes));
            }
            _lastCommitId = commitId;
            return epoch;
        }
    }

    void AppendWrite(Table table, long key, ReadOnlySpan<byte> payload)
    {
        Reserve(LogFormat.WriteHeaderSize + payload.Length);
        var into = _buffer.AsSpan(_used);
        BinaryPrimitives.WriteUInt16LittleEndian(into, checked((ushort)table.Id));
        BinaryPrimitives.WriteInt64LittleEndian(into[2..], key);
        payload.CopyTo(into[LogFormat.WriteHeaderSize..]);
        _used += LogFormat.WriteHeaderSize + payload.Length;
    }

    void Reserve(int bytes)
    {
        if (_used + bytes > _buffer.Length) Array.Resize(ref _buffer, Math.Max(_buffer.Length * 2, _used + bytes));
    }

    /// <summary>Waits for the epoch of a commit to be durable before answering; at once fails if
    /// the log has failed.</summary>
    public void Hold(long epoch, IDurableAnswer answer)
    {
        if (log.Failure is { } failure)
        {
            answer.Fail(failure);
            return;
        }
        if (epoch <= log.DurableEpoch || acknowledgeAtCommit)
        {
            answer.Acknowledge();
            return;
        }
        lock (_lock) _held.Add((epoch, answer));
        // A failure between the look and the add has already failed what was held: this one too.
        if (log.Failure is { } late) FailHeld(late);
    }

    /// <summary>The logger's take (under this worker's lock): the buffer, swapped for the logger's
    /// spare, and the answers held, moved to the logger's list.</summary>
    public (byte[] Bytes, int Used) Take(byte[] spare, List<(long, IDurableAnswer)> waiting)
    {
        lock (_lock)
        {
            var full = (_buffer, _used);
            _buffer = spare;
            _used = 0;
            lock (waiting) waiting.AddRange(_held);
            _held.Clear();
            return full;
        }
    }

    public void FailHeld(Exception error)
    {
        List<(long, IDurableAnswer)> held;
        lock (_lock)
        {
            held = _held;
            _held = [];
        }
        foreach (var (_, answer) in held) answer.Fail(error);
    }
}
