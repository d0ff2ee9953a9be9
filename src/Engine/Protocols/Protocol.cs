using Contend.Engine.History;
using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols;

public enum Outcome : byte { Committed, UserAborted, Aborted }

/// <summary>Why an attempt aborted. The counters and the run summary use these names.</summary>
public enum AbortReason : byte
{
    None,
    /// <summary>NoWait: the lock was held (and Silo's prepare across partitions, which does not wait for one).</summary>
    LockBusy,
    /// <summary>WaitDie: younger than a holder.</summary>
    Die,
    /// <summary>WaitsFor: the waits-for graph had a cycle through this transaction.</summary>
    Deadlock,
    /// <summary>Mcs: a lock wait passed its threshold.</summary>
    WaitTimeout,
    /// <summary>Silo: a read changed before commit.</summary>
    Validation,
    /// <summary>The program's logic aborted (a body returned UserAbort, or a key was missing).</summary>
    User,
    /// <summary>An insert found its table full.</summary>
    TableFull,
    /// <summary>An insert's key was already in its table (<see cref="Runtime.TxnOutcome.Duplicate"/> names it).</summary>
    DuplicateKey,
    /// <summary>Across partitions: a participant's answer did not reach the coordinator in time
    /// (a message lost, a link cut, or a lock wait longer than the coordinator waits).</summary>
    NoReply,
}

public static class AbortReasons
{
    /// <summary>True for an abort the program's logic or its input caused, which a retry would
    /// meet again: the transaction ends <see cref="Outcome.UserAborted"/>, not retried.</summary>
    public static bool IsFinal(this AbortReason reason) =>
        reason is AbortReason.User or AbortReason.TableFull or AbortReason.DuplicateKey;

    /// <summary>What an attempt that aborted for <paramref name="reason"/> comes to.</summary>
    public static Outcome OutcomeOf(AbortReason reason) => reason.IsFinal() ? Outcome.UserAborted : Outcome.Aborted;
}

/// <summary>An insert refused because its key is in the table already: ordinary bad input, which
/// ends the transaction <see cref="Outcome.UserAborted"/> with nothing of it written.</summary>
public sealed record DuplicateKey(string Program, string Op, string Table, long Key)
{
    public override string ToString() => $"program {Program}, op {Op}: key {Key} is already in table {Table}";
}

/// <summary>A duplicate key that could not end as an abort: what the insert met, and why it was
/// raised instead.</summary>
public sealed class DuplicateKeyException(DuplicateKey duplicate, string why) : InvalidOperationException($"{duplicate}: {why}")
{
    public DuplicateKey Duplicate { get; } = duplicate;
}

/// <summary>A participant's answer to prepare: yes (it can commit whatever the others do, and
/// keeps what it holds until told), or no with the reason, and then it has undone nothing yet:
/// the coordinator's abort does that.</summary>
public readonly record struct Vote(AbortReason Reason)
{
    public static Vote Yes => default;
    public bool IsYes => Reason == AbortReason.None;
}

/// <summary>What every protocol is: a name the registry knows it by. A protocol is either
/// an <see cref="ITransactionProtocol"/> or an <see cref="IBatchProtocol"/>.</summary>
public interface IProtocol
{
    string Name { get; }
}

/// <summary>
/// A per-transaction protocol: runs one program instance to commit or abort on the calling
/// worker. One instance serves every worker of a run; per-worker state lives in the
/// <see cref="TxnContext"/>.
/// </summary>
public interface ITransactionProtocol : IProtocol
{
    Outcome Run(TxnContext ctx, out AbortReason reason);
}

/// <summary>
/// A batch protocol (Strife): the worker pool calls <see cref="Work"/> on each of its
/// workers, and the protocol draws transactions into batches, schedules them over the
/// workers, and returns when the run ends (<see cref="BatchWorker.CanDraw"/> says no more).
/// Every worker may return at a different time: the protocol must finish any batch it has
/// started with whichever workers are left.
/// </summary>
public interface IBatchProtocol : IProtocol
{
    void Work(BatchWorker worker);

    /// <summary>After a worker failed (<see cref="BatchWorker.Failed"/>) and every worker has
    /// returned from <see cref="Work"/>: the <see cref="TxnContext.Tag"/>s of the transactions it
    /// drew that never ended, so that whoever submitted them hears of it.</summary>
    IEnumerable<object> Unfinished();
}

/// <summary>What a protocol is built from.</summary>
/// <param name="Strife">Strife's knobs (batch size, alpha, ...); null: its defaults</param>
public sealed record ProtocolSetup(Database Database, int Workers, Strife.StrifeOptions? Strife = null)
{
    /// <summary>Broken protocol steps, for the tests that must catch them (test builds only: see <see cref="MutantFlag"/>).</summary>
    internal Mutants Mutants { get; init; }

    internal ProtocolSetup(Database database, int workers, Mutants mutants, Strife.StrifeOptions? strife = null) : this(database, workers, strife)
    {
        Mutants = mutants;
    }

    public static ProtocolSetup For(Database db, int workers) => new(db, workers);
}

/// <summary>
/// One mutant's switch as a protocol holds it: read where the broken step would run, it is
/// false unless the process enabled mutants (the runtime switch <see cref="SwitchName"/>, which
/// only the test projects set) and the protocol was built with the mutant. In every other
/// process <see cref="Enabled"/> is a static readonly false, which the JIT folds once the class
/// is initialized: the check and the branch it guards are compiled away, and the mutant's field
/// is never loaded on the hot path.
/// </summary>
internal readonly struct MutantFlag
{
    public const string SwitchName = "Contend.Engine.Mutants";

    static readonly bool Enabled = AppContext.TryGetSwitch(SwitchName, out bool on) && on;

    readonly bool _on;

    public MutantFlag(Mutants built, Mutants mutant)
    {
        if (built.HasFlag(mutant) && !Enabled)
            throw new InvalidOperationException($"mutant {mutant}: this process has not enabled mutants (runtime switch {SwitchName}); only the test projects do");
        _on = built.HasFlag(mutant);
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
    public static implicit operator bool(MutantFlag flag) => Enabled && flag._on;
}

/// <summary>
/// Deliberately broken copies of protocol steps, for tests that must catch them. Internal:
/// the test projects reach them (InternalsVisibleTo), a service cannot, and a process that has
/// not enabled them pays nothing for them (<see cref="MutantFlag"/>).
/// </summary>
[Flags]
internal enum Mutants
{
    None = 0,
    /// <summary>MCSLock.tla MutantReleaseClearTail: UNLOCK clears the tail without a CAS
    /// (the paper's one-line UNLOCK), losing the wake-up of a waiter not yet linked.</summary>
    McsReleaseClearTail = 1,
    /// <summary>NoWait that takes the lock without checking it is held (no mutual exclusion).</summary>
    NoWaitIgnoreLock = 2,
    /// <summary>WaitDie in which a younger requester waits instead of dying (deadlock).</summary>
    WaitDieYoungerWaits = 4,
    /// <summary>MCStealDB.tla MutantStealTakeNonAtomic (C1 undone): STEALOP reads the predecessor's
    /// steal context and clears it in a later store (Algorithm 3 lines 1 and 5 as written).</summary>
    StealReadThenClear = 8,
    /// <summary>MCStealDB.tla MutantClaimCheckThenSet: RUNOP tests op.tid, then sets it, without CAS.</summary>
    StealClaimTestThenSet = 16,
    /// <summary>MCStealDB.tla MutantExecuteAndRelease: an op releases its lock right after executing.</summary>
    StealEarlyRelease = 32,
    /// <summary>MCStealDB.tla MutantProceedWithoutLock: a waiter executes without being granted the lock.</summary>
    StealRunWithoutLock = 64,
    /// <summary>MCStealDB.tla MutantTimeoutCancelsContext: a timed-out waiter's node leaves the queue at
    /// once instead of waiting to reach the head.</summary>
    StealTimeoutLeavesQueue = 128,
    /// <summary>MCStrifeAnalysis.tla MutantAllocateAcross: a transaction whose items lie in two
    /// clusters joins one of them instead of the residual.</summary>
    StrifeAllocateAcross = 256,
    /// <summary>MCStrifeAnalysis.tla MutantIgnoreReads: a transaction takes part in the analysis
    /// with the items it writes only, not those it reads.</summary>
    StrifeIgnoreReads = 512,
    /// <summary>MCStrifeExec.tla MutantNoBarrier: a worker with no cluster left starts on the
    /// residuals while other workers still run clusters.</summary>
    StrifeNoBarrier = 1024,
    /// <summary>MCStrifeExec.tla MutantAbortKeepsLocks: a residual's conflict abort keeps its locks.</summary>
    StrifeAbortKeepsLocks = 2048,
    /// <summary>MCStrifeExec.tla MutantOverlapEarly: batch n+1's clusters start as soon as it is
    /// analysed, while batch n's residuals still run.</summary>
    StrifeOverlapEarly = 4096,
    /// <summary>MCStrifeExec.tla MutantRetryAfterCommit: a worker runs a committed residual again.</summary>
    StrifeRetryAfterCommit = 8192,
    /// <summary>The engine's alone (the specs do not model before-images): a clustered
    /// transaction that writes without them does not reserve its inserts' rows first, so a
    /// table found full at commit leaves its writes behind (StrifeClusterTests).</summary>
    StrifeImagelessNoReserve = 16384,
    /// <summary>The engine's alone: a <see cref="Runtime.BatchEngine"/> worker that found no work
    /// reads the wake-up count only then, just before it sleeps, so a submission made between
    /// its look and that read wakes no one (the lost wake-up the event count exists to prevent).</summary>
    BatchEngineLostWakeup = 32768,
    /// <summary>The engine's alone: <see cref="Runtime.BatchEngine.Dispose"/> stops taking
    /// submissions without waiting for those under way, so one that got past the check is
    /// queued after the workers have looked for the last time, and never runs.</summary>
    BatchEngineCloseWithoutWait = 65536,
    /// <summary>The engine's alone (the specs model no exceptions): StealDB does not catch a
    /// throwing body where its op runs, so a stolen op's exception escapes into the thief's own
    /// transaction, and an owner's leaves its attempt's locks held (StealDB before it caught them).</summary>
    StealFailureEscapes = 131072,
    /// <summary>The engine's alone (the specs model no exceptions): the op-by-op protocols prepare
    /// outside the undo that covers the ops, so an insert body that throws at prepare leaves the
    /// attempt's locks held and its writes in place (every protocol before prepare was split out).</summary>
    PrepareOutsideUndo = 262144,
    /// <summary>Two-phase commit: a participant commits as soon as it votes yes, before the
    /// coordinator has every vote (another partition's no then leaves the transaction half
    /// committed).</summary>
    TpcParticipantCommitsOnYes = 524288,
    /// <summary>Two-phase commit: a coordinator that decides abort tells no participant, so
    /// those that ran ops or voted yes keep their locks for ever.</summary>
    TpcCoordinatorForgetsAbort = 1048576,
}

/// <summary>Chooses protocols by name at run time.</summary>
public static class ProtocolRegistry
{
    static readonly (string Name, string What, Func<ProtocolSetup, IProtocol> Make)[] Known =
    [
        ("NoWait", "2PL, abort when a lock is held", s => new TwoPhaseLocking.NoWait(s)),
        ("WaitDie", "2PL, an older requester waits, a younger one aborts", s => new TwoPhaseLocking.WaitDie(s)),
        ("WaitsFor", "2PL, wait; abort on a cycle of the waits-for graph", s => new TwoPhaseLocking.WaitsFor(s)),
        ("Ordered", "2PL, every lock taken up front in key order, then wait", s => new TwoPhaseLocking.Ordered(s)),
        ("Mcs", "2PL on exclusive MCS queue locks, abort after a wait threshold", s => new TwoPhaseLocking.Mcs(s)),
        ("Silo", "optimistic: read versions, lock writes in order, validate, install", s => new Silo.SiloOcc(s)),
        ("StealDB", "queue-stealing 2PL: a lock waiter runs the holder's ops, contexts handed down the MCS queue",
            s => new StealDB.StealDb(s, new StealDB.StealDbOptions(StealDB.StealPolicy.Queue), "StealDB")),
        ("StealDBBasicWS", "StealDB's code, every waiter steals from the lock holder's one word by CAS (basic work stealing)",
            s => new StealDB.StealDb(s, new StealDB.StealDbOptions(StealDB.StealPolicy.Basic), "StealDBBasicWS")),
        ("StealDBNoSteal", "StealDB's code with stealing off: 2PL on MCS queue locks over the op DAG (vanilla)",
            s => new StealDB.StealDb(s, new StealDB.StealDbOptions(StealDB.StealPolicy.None), "StealDBNoSteal")),
        (BatchProtocol, "batches split into conflict-free clusters run with no locks, then the residual under NO_WAIT, then WaitDie",
            s => new Strife.StrifeProtocol(s, s.Strife ?? new Strife.StrifeOptions())),
    ];

    /// <summary>A protocol that is not serializable, kept as the history checker's positive control.</summary>
    public const string BrokenControl = "BrokenEarlyRelease";

    public static IReadOnlyList<string> Names => Known.Select(k => k.Name).ToArray();

    public static string Describe(string name) =>
        name == BrokenControl ? "NOT serializable: 2PL that releases each lock right after its op (the checker's control)"
                              : Known.First(k => k.Name == name).What;

    /// <summary>True for a batch protocol (<see cref="IBatchProtocol"/>).</summary>
    public static bool IsBatch(string name) => name == BatchProtocol;

    const string BatchProtocol = "Strife";

    public static bool IsKnown(string name) => name == BrokenControl || Known.Any(k => k.Name == name);

    public static IProtocol Create(string name, ProtocolSetup setup)
    {
        if (name == BrokenControl) return new Broken.EarlyRelease(setup);
        foreach (var k in Known)
            if (string.Equals(k.Name, name, StringComparison.Ordinal)) return k.Make(setup);
        throw new ArgumentException(Unknown(name));
    }

    /// <summary>The one message for a name no protocol has.</summary>
    public static string Unknown(string name) => $"unknown protocol '{name}' (known: {string.Join(", ", Names)}, and the control {BrokenControl})";
}
