using System.Diagnostics;
using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.TwoPhaseCommit;

/// <summary>
/// One partition's participant on its primary: runs the ops sent to it with the partition's
/// own protocol (NoWait, WaitDie or Silo, as a <see cref="OpByOpProtocol"/> that never waits),
/// votes at prepare, and applies the decision. It answers every request idempotently, since
/// the transport may double, delay or reorder them, and keeps each attempt's outcome so that a
/// request arriving after it ended is answered from the log, not run.
/// </summary>
/// <remarks>
/// An attempt's state here: unknown, running (ops, possibly one waiting for a lock), prepared
/// (voted yes: it holds its locks until the decision, whatever else happens), ended (committed
/// or aborted, in <see cref="Outcomes"/>). A participant aborts on its own only before it
/// votes yes: an op refused, a no vote, an abort decision; a prepared one waits for the
/// coordinator, who resends the decision until it is acknowledged (two-phase commit blocks on
/// its coordinator, which this transport does not kill; Chiller's recovery is where nodes fail).
/// The outcome log grows with the run: a long-lived participant would forget an attempt once its
/// coordinator has heard every acknowledgement; the simulation keeps it to check atomicity.
/// </remarks>
internal sealed class Participant
{
    readonly int _node;
    readonly int _partition;
    readonly OpByOpProtocol _protocol;
    readonly Func<string, TxnProgram> _programs;
    readonly ITransport _transport;
    readonly TimeProvider _time;
    readonly TimeSpan _lockRetry;
    readonly MutantFlag _commitBeforeAllVotes;
    readonly Dictionary<long, Attempt> _running = new();
    readonly Stack<Attempt> _free = new();
    readonly Dictionary<long, bool> _outcomes = new();

    public Participant(int node, int partition, OpByOpProtocol protocol, HistoryRecorder history, Func<string, TxnProgram> programs,
                       ITransport transport, TimeProvider time, TimeSpan lockRetry, TwoPhaseCommitMutants mutants)
    {
        Debug.Assert(protocol.RunsAcrossPartitions, $"partition {partition}: protocol {protocol.Name} does not run across partitions");
        _node = node;
        _partition = partition;
        _protocol = protocol;
        History = history;
        _programs = programs;
        _transport = transport;
        _time = time;
        _lockRetry = lockRetry;
        _commitBeforeAllVotes = new MutantFlag(mutants, TwoPhaseCommitMutants.ParticipantCommitsOnYes);
    }

    public HistoryRecorder History { get; }

    /// <summary>Every attempt that ended here: true if it committed.</summary>
    public IReadOnlyDictionary<long, bool> Outcomes => _outcomes;

    /// <summary>Attempts running or prepared: none once every transaction has ended.</summary>
    public int Unfinished => _running.Count;

    public void Receive(int from, object message)
    {
        switch (message)
        {
            case OpRequest r: OnOp(from, r); break;
            case PrepareRequest r: OnPrepare(from, r); break;
            case DecisionRequest r: OnDecision(from, r); break;
            default: throw new InvalidOperationException($"partition {_partition}: a participant got {message.GetType().Name}");
        }
    }

    void OnOp(int from, OpRequest r)
    {
        if (_outcomes.TryGetValue(r.Txn, out bool committed))
        {
            // Late or doubled: the attempt ended here. A committed one has no op left to answer.
            if (!committed) Reply(from, new OpReply(r.Txn, _partition, r.Op, 0, AbortReason.NoReply, null));
            return;
        }
        if (!_running.TryGetValue(r.Txn, out var attempt))
        {
            attempt = _free.Count > 0 ? _free.Pop() : new Attempt(new TxnContext(0, History));
            attempt.Context.BeginParticipantAttempt(_programs(r.Program), r.Txn, r.Timestamp);
            attempt.Coordinator = from;
            attempt.Prepared = false;
            attempt.OpsDone = 0;
            attempt.Waiting = -1;
            _running.Add(r.Txn, attempt);
        }
        if (attempt.Prepared || attempt.Waiting == r.Op) return; // a copy of one already handled or waiting
        if ((attempt.OpsDone & (1UL << r.Op)) != 0)
        {
            Reply(from, new OpReply(r.Txn, _partition, r.Op, attempt.Context.Results[r.Op], AbortReason.None, null));
            return;
        }
        var ctx = attempt.Context;
        r.Args.CopyTo(ctx.Args, 0);
        r.Results.CopyTo(ctx.Results, 0);
        RunOp(attempt, r.Op, r.Key);
    }

    void RunOp(Attempt attempt, int op, long key)
    {
        var ctx = attempt.Context;
        OpStep step;
        AbortReason reason;
        try
        {
            step = _protocol.TryOp(ctx, op, key, out reason);
        }
        catch (Exception e)
        {
            End(attempt, commit: false);
            Reply(attempt.Coordinator, new OpReply(ctx.TxnId, _partition, op, 0, AbortReason.User,
                                                   $"program {ctx.Program.Name}, op {ctx.Program.Ops[op].Name} on partition {_partition}: {e.GetType().Name}: {e.Message}"));
            return;
        }
        switch (step)
        {
            case OpStep.Done:
                attempt.Waiting = -1;
                attempt.OpsDone |= 1UL << op;
                Reply(attempt.Coordinator, new OpReply(ctx.TxnId, _partition, op, ctx.Results[op], AbortReason.None, null));
                break;
            case OpStep.Refused:
                End(attempt, commit: false);
                Reply(attempt.Coordinator, new OpReply(ctx.TxnId, _partition, op, 0, reason, null));
                break;
            default:
                attempt.Waiting = op;
                attempt.WaitKey = key;
                attempt.Retry ??= _time.CreateTimer(static s => ((Attempt)s!).Owner!.RetryWait((Attempt)s!), attempt, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
                attempt.Owner = this;
                attempt.Retry.Change(_lockRetry, Timeout.InfiniteTimeSpan);
                break;
        }
    }

    /// <summary>A lock wait's next try, unless the attempt has ended or moved on meanwhile.</summary>
    void RetryWait(Attempt attempt)
    {
        if (attempt.Waiting < 0 || !_running.TryGetValue(attempt.Context.TxnId, out var live) || live != attempt) return;
        RunOp(attempt, attempt.Waiting, attempt.WaitKey);
    }

    void OnPrepare(int from, PrepareRequest r)
    {
        if (_outcomes.TryGetValue(r.Txn, out bool committed))
        {
            Reply(from, new VoteReply(r.Txn, _partition, committed ? AbortReason.None : AbortReason.NoReply));
            return;
        }
        if (!_running.TryGetValue(r.Txn, out var attempt))
        {
            // Never saw an op of it (its requests were lost): refuse, and remember, so that a
            // request arriving later is not run.
            _outcomes[r.Txn] = false;
            Reply(from, new VoteReply(r.Txn, _partition, AbortReason.NoReply));
            return;
        }
        if (attempt.Prepared)
        {
            Reply(from, new VoteReply(r.Txn, _partition, AbortReason.None));
            return;
        }
        Debug.Assert(attempt.Waiting < 0, $"partition {_partition}: prepare of {ClusterTxnId.Describe(r.Txn)} while an op waits");
        Vote vote;
        string? failure = null;
        try
        {
            vote = _protocol.PrepareParticipant(attempt.Context);
        }
        catch (Exception e)
        {
            // An insert body threw: a bug of the program, which ends the transaction (not retried)
            // and reaches the run's failures.
            vote = new Vote(AbortReason.User);
            failure = $"program {attempt.Context.Program.Name}, prepare on partition {_partition}: {e.GetType().Name}: {e.Message}";
        }
        if (!vote.IsYes)
        {
            End(attempt, commit: false);
            Reply(from, new VoteReply(r.Txn, _partition, vote.Reason, failure));
            return;
        }
        attempt.Prepared = true;
        // The twin: commits as soon as it votes yes, before it knows every other vote.
        if (_commitBeforeAllVotes) End(attempt, commit: true);
        Reply(from, new VoteReply(r.Txn, _partition, AbortReason.None));
    }

    void OnDecision(int from, DecisionRequest r)
    {
        if (!_outcomes.ContainsKey(r.Txn))
        {
            if (_running.TryGetValue(r.Txn, out var attempt))
            {
                if (r.Commit && !attempt.Prepared)
                    throw new InvalidOperationException($"partition {_partition}: commit of {ClusterTxnId.Describe(r.Txn)}, which it never voted for");
                End(attempt, r.Commit);
            }
            else if (r.Commit)
                throw new InvalidOperationException($"partition {_partition}: commit of {ClusterTxnId.Describe(r.Txn)}, which it never saw");
            else _outcomes[r.Txn] = false; // aborted before any op got here: a late op is refused
        }
        Reply(from, new DecisionAck(r.Txn, _partition));
    }

    void End(Attempt attempt, bool commit)
    {
        var ctx = attempt.Context;
        if (commit) _protocol.CommitParticipant(ctx);
        else _protocol.AbortParticipant(ctx);
        _outcomes[ctx.TxnId] = commit;
        _running.Remove(ctx.TxnId);
        attempt.Waiting = -1;
        attempt.Retry?.Change(Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _free.Push(attempt);
    }

    void Reply(int to, object message) => _transport.Send(new Envelope(_node, to, message));

    /// <summary>An attempt's share on this partition, its context reused by later attempts.</summary>
    sealed class Attempt(TxnContext context)
    {
        public readonly TxnContext Context = context;
        public Participant? Owner;
        public int Coordinator;
        public bool Prepared;
        /// <summary>Bit i: op i ran here; its result is in the context.</summary>
        public ulong OpsDone;
        /// <summary>The op waiting for a lock, or -1.</summary>
        public int Waiting = -1;
        public long WaitKey;
        public ITimer? Retry;
    }
}
