using System.Diagnostics;
using Contend.Engine.Cluster;
using Contend.Engine.History;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.Chiller;

/// <summary>
/// A partition's primary copy: an outer participant for the transactions that lock records here
/// in step 3 (NO_WAIT), and the inner host for those whose inner region is here (step 4). Both
/// roles share one attempt per transaction, so a transaction's outer locks on the inner host's
/// partition commit with its inner region. Every change it commits goes first to the partition's
/// replicas as an entry of its one log, in sequence order (Section 5.1; the spec's D3 for the
/// outer writes), and commits here once every replica has acknowledged receiving it.
/// </summary>
/// <remarks>
/// Decision (the issue's, recorded in the spec's header as D10): the paper's inner host commits on
/// the NIC's acknowledgement of its RDMA write; over this transport the equivalent is the
/// replica's acknowledgement of receipt (<see cref="ReplicaAck"/>), sent before it applies
/// anything. Committing when the messages are only sent is the weaker choice the spec refutes
/// (ChillerMutantCommitBeforeAcks: a host that dies before any replica has the message loses a
/// transaction that an outer partition may already have committed).
/// </remarks>
internal sealed partial class ChillerPrimary
{
    // One file per role: this one the state, the dispatch and what the roles share;
    // ChillerPrimary.Outer.cs the outer participant (steps 3 and 5), ChillerPrimary.Inner.cs the
    // inner host (step 4), ChillerPrimary.Log.cs the log shipped to the replicas,
    // ChillerPrimary.Recovery.cs what it does in a recovery.

    readonly int _node;
    readonly int _partition;
    /// <summary>Which copy of the partition this is (0 until a recovery elects another).</summary>
    readonly int _copy;
    readonly Database _db;
    readonly LockingProtocol _protocol;
    readonly ChillerCluster _cluster;
    readonly Dictionary<long, Share> _live = new();
    readonly Stack<Share> _free = new();
    readonly Dictionary<long, bool> _outcomes = new();
    readonly MutantFlag _abortsUnilaterally, _releasesEarly, _waitsForRemoved, _commitsOnSend, _participantTakesOver;
    /// <summary>Every inner region committed here, with its results: what a host left with no
    /// replica notifies again, and what it answers as a crashed coordinator's successor. Kept for
    /// the run, as the outcome log is.</summary>
    readonly Dictionary<long, long[]> _innerCommitted = new();
    /// <summary>As a crashed coordinator's successor: the partitions asking for the outcome of a
    /// transaction this primary cannot answer yet (its inner region replicating, or the
    /// coordinator not yet cut off in the view this node has).</summary>
    readonly Dictionary<long, HashSet<int>> _asked = new();
    /// <summary>The transactions whose coordinator this primary has taken over.</summary>
    readonly HashSet<long> _tookOver = new();
    /// <summary>The view this node last learned.</summary>
    ClusterView _view;
    /// <summary>Bit r: copy r is a replica in the configuration this primary knows.</summary>
    ulong _replicas;
    long _lastSeq;

    /// <param name="db">the copy it serves</param>
    /// <param name="takeover">the replica this primary takes over from, after recovery (ElectPrimary):
    /// its outcomes, its log's numbers and its prepared outer shares, whose locks it takes again (D3)</param>
    public ChillerPrimary(int node, int partition, Database db, HistoryRecorder history, ChillerCluster cluster, ChillerReplica? takeover = null)
    {
        var protocol = (LockingProtocol)ProtocolRegistry.Create("NoWait", ProtocolSetup.For(db, 1));
        Debug.Assert(protocol.RunsAcrossPartitions, $"partition {partition}: protocol {protocol.Name} does not run across partitions");
        _node = node;
        _partition = partition;
        _copy = takeover?.Copy ?? 0;
        _db = db;
        _protocol = protocol;
        History = history;
        _cluster = cluster;
        _abortsUnilaterally = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterAbortsUnilaterally);
        _releasesEarly = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterReleasesEarly);
        _waitsForRemoved = new MutantFlag(cluster.Options.Mutants, ChillerMutants.HostWaitsForRemovedReplica);
        _commitsOnSend = new MutantFlag(cluster.Options.Mutants, ChillerMutants.HostCommitsOnSend);
        _participantTakesOver = new MutantFlag(cluster.Options.Mutants, ChillerMutants.OuterParticipantTakesOver);
        _view = cluster.Membership.Current;
        foreach (int copy in cluster.Membership.Current.ReplicasOf(partition)) _replicas |= 1UL << copy;
        if (takeover is not null) TakeOver(takeover);
    }

    public int Node => _node;
    public Database Database => _db;

    /// <summary>The transactions this primary committed itself (and recorded in its history).</summary>
    public IReadOnlySet<long> Recorded => _recorded;
    readonly HashSet<long> _recorded = new();

    public HistoryRecorder History { get; }

    /// <summary>Every attempt that ended here: true if it committed.</summary>
    public IReadOnlyDictionary<long, bool> Outcomes => _outcomes;

    /// <summary>Attempts holding anything here: none once every transaction has ended.</summary>
    public int Unfinished => _live.Count;

    /// <summary>The sequence number of the partition's last log entry.</summary>
    public long LastSeq => _lastSeq;

    public void Receive(object message)
    {
        switch (message)
        {
            case LockOuter m: OnLockOuter(m); break;
            case PrepareOuter m: OnPrepareOuter(m); break;
            case Delegate m: OnDelegate(m); break;
            case ReplicaAck m: OnReplicaAck(m); break;
            case OuterDecision m: OnOuterDecision(m); break;
            case AskOutcome m: OnAskOutcome(m); break;
            default: throw new InvalidOperationException($"partition {_partition}: its primary got {message.GetType().Name}");
        }
    }

    (AbortReason, string?) ExecuteInner(Share share, ulong inner, ulong hostDeferred)
    {
        var ctx = share.Context;
        var program = ctx.Program;
        foreach (int i in program.Order)
        {
            bool isInner = (inner & RegionProgram.Bit(i)) != 0;
            if (!isInner && (hostDeferred & RegionProgram.Bit(i)) == 0) continue;
            var op = program.Ops[i];
            try
            {
                long key = isInner ? op.ResolveKey(ctx.Args, ctx.Results) : share.Keys[i];
                if (isInner && !_cluster.Lookup.Map.Replicates(op.TableId) && _cluster.Lookup.Map.PartitionOf(op.TableId, key) is var p && p != _partition)
                    return (AbortReason.User, $"program {program.Name}, op {op.Name}: its key {key} is on partition {p}, but the op runs in the inner region, whose host is partition {_partition} (an op keyed by an inner op's result must be placed with the inner host)");
                if (_protocol.TryOp(ctx, i, key, out var reason) != OpStep.Done) return (reason, null);
            }
            catch (Exception e)
            {
                return (AbortReason.User, Describe(ctx, i, e));
            }
        }
        return (AbortReason.None, null);
    }

    /// <summary>For a trace: the rows the attempt accessed from access <paramref name="from"/> on, with
    /// the versions they had when it locked them.</summary>
    ChillerRead[] Reads(TxnContext ctx, int from)
    {
        var reads = new ChillerRead[Math.Max(0, ctx.AccessCount - from)];
        for (int i = from; i < ctx.AccessCount; i++)
            reads[i - from] = new ChillerRead(ctx.AccessTable[i], _db[ctx.AccessTable[i]].Key(ctx.AccessRow[i]), ctx.AccessVersion[i]);
        return reads;
    }

    /// <summary>The history's accesses of an inner region, for a copy that commits it in recovery.</summary>
    Access[] Accesses(TxnContext ctx)
    {
        var accesses = new Access[ctx.AccessCount + ctx.InsertCount];
        for (int i = 0; i < ctx.AccessCount; i++)
            accesses[i] = new Access(HistoryRecorder.RowKey(ctx.AccessTable[i], ctx.AccessRow[i]), ctx.AccessVersion[i], _protocol.Wrote(ctx, i));
        for (int i = 0; i < ctx.InsertCount; i++)
            accesses[ctx.AccessCount + i] = new Access(HistoryRecorder.RowKey(ctx.Program.Ops[ctx.InsertOp[i]].TableId, ctx.InsertRow[i]), HistoryRecorder.NewRow, true);
        return accesses;
    }

    /// <param name="host">the partition of the transaction's inner region</param>
    Share ShareOf(long txn, string program, int host, long timestamp)
    {
        if (_live.TryGetValue(txn, out var share)) return share;
        share = _free.Count > 0 ? _free.Pop() : new Share(new TxnContext(0, History));
        share.Context.BeginParticipantAttempt(_cluster.Program(program).Program, txn, timestamp);
        share.Phase = Phase.Locking;
        share.Locked = share.Deferred = 0;
        share.Prepared = share.Shipped = false;
        share.InnerResults = null;
        share.Seq = 0;
        share.Host = host;
        share.AskedCopy = -1;
        _live.Add(txn, share);
        return share;
    }

    /// <summary>The after-images of every row the attempt wrote, and its new rows.</summary>
    RowImage[] Rows(TxnContext ctx)
    {
        var rows = new List<RowImage>();
        var db = _db;
        for (int i = 0; i < ctx.AccessCount; i++)
        {
            if (!_protocol.Wrote(ctx, i)) continue;
            var table = db[ctx.AccessTable[i]];
            rows.Add(new RowImage(table.Id, table.Key(ctx.AccessRow[i]), false, table.Payload(ctx.AccessRow[i]).ToArray()));
        }
        for (int i = 0; i < ctx.InsertCount; i++)
        {
            var table = db[ctx.Program.Ops[ctx.InsertOp[i]].TableId];
            rows.Add(new RowImage(table.Id, ctx.InsertKey[i], true, table.Payload(ctx.InsertRow[i]).ToArray()));
        }
        return rows.ToArray();
    }

    void End(Share share, bool commit)
    {
        var ctx = share.Context;
        if (commit)
        {
            _protocol.CommitParticipant(ctx);
            _recorded.Add(ctx.TxnId);
        }
        else _protocol.AbortParticipant(ctx);
        _outcomes[ctx.TxnId] = commit;
        _live.Remove(ctx.TxnId);
        share.Phase = Phase.Ended;
        _free.Push(share);
    }

    string Describe(TxnContext ctx, int op, Exception e) =>
        $"program {ctx.Program.Name}, op {ctx.Program.Ops[op].Name} on partition {_partition}: {e.GetType().Name}: {e.Message}";

    void Send(int to, object message) => _cluster.Send(_node, to, message);

    /// <summary>A share's phase: locking (step 3, and prepared), waiting for the acks of its
    /// prepared entry, of its inner region's entry, of its outer commit's or of its release's, or ended.</summary>
    enum Phase : byte { Locking, Preparing, Replicating, Committing, Releasing, Ended }

    /// <summary>A transaction attempt's share on this partition, its context reused by later ones.</summary>
    sealed class Share(TxnContext context)
    {
        public readonly TxnContext Context = context;
        public readonly long[] Keys = new long[TxnContext.MaxOps];
        public Phase Phase;
        /// <summary>Bit i: op i's row is locked here.</summary>
        public ulong Locked;
        /// <summary>Bit i: op i's body waits for the inner region's results.</summary>
        public ulong Deferred;
        /// <summary>An outer partition's inserts have claimed their keys (and, with replicas, its
        /// prepared entry is on its way: <see cref="Shipped"/> once every replica has it).</summary>
        public bool Prepared;
        public bool Shipped;
        public long[]? InnerResults;
        /// <summary>The partition of the transaction's inner region.</summary>
        public int Host;
        /// <summary>The copy of <see cref="Host"/> last asked for the outcome, or -1 (<see cref="AskOutcome"/>).</summary>
        public int AskedCopy;
        public long Seq;
        /// <summary>Bit r: copy r acknowledged <see cref="Seq"/>.</summary>
        public ulong Acked;
    }
}
