using System.Collections.Concurrent;
using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.ReactDB;

/// <summary>
/// A container's transaction executor (seed 004, Section 3.1, Algorithm 1): a fixed number of
/// threads draining the container's queue of (sub-)transactions. It is a <see cref="TaskScheduler"/>:
/// a sub-transaction is started on it as a task, a root is queued as itself, and every await in
/// their logic resumes on it, so the logic only ever runs on its container's threads.
/// </summary>
/// <remarks>
/// Decision (ReactDB.tla D1, the engine's obligation): a (sub-)transaction that waits on a future
/// gives its thread back. Its continuation is queued here when the future completes, and the
/// thread meanwhile runs whatever is queued. The paper's BLOCKED thread lets another run but
/// keeps its (sub-)transaction; here nothing keeps a thread while it waits. So the queue is never
/// left with work while every thread is blocked, and the deadlock of <c>ReactDBPaperPoolOf1</c>
/// (two roots calling into each other's one-thread container) cannot happen. The number of
/// threads is the paper's cap on ACTIVE ones: at most that many run logic at once.
/// <para>Decision: each thread runs its loop inside one task of this scheduler, so that
/// <see cref="TaskScheduler.Current"/> is this executor for all it runs, and a root's awaits are
/// continued here without the root being a task of its own: without a task per root, roots of
/// one row ran 1.08x faster on a saturated executor (docs/measured/ReactDB.md). A
/// <see cref="SynchronizationContext"/> would do the same without the loop's task, but Coyote's
/// rewritten awaiters find their runtime through the thread's synchronization context.</para>
/// </remarks>
internal sealed class ContainerExecutor : TaskScheduler
{
    /// <summary>Sub-transactions and continuations (tasks), and roots to start (<see cref="RootTransaction"/>).</summary>
    readonly ConcurrentQueue<object> _queue = new();
    readonly Action<RootTransaction> _runRoot;
    /// <summary>Sleeping threads wait on it for work (a Monitor, whose waits Coyote schedules).</summary>
    readonly object _gate = new();
    int _sleepers;
    readonly Thread[] _threads;
    bool _stopping;
    /// <summary>Threads still in <see cref="Drain"/>; the last one out completes <see cref="_exited"/>.</summary>
    int _running;
    readonly TaskCompletionSource _exited = new(TaskCreationOptions.RunContinuationsAsynchronously);

    [ThreadStatic] static ContainerExecutor? t_current;

    /// <summary>Told of what escaped a piece of work (the engine then fails), and of a thread
    /// that could not be pinned (why); the thread goes on draining either way.</summary>
    readonly Action<int, Exception> _failed;
    readonly Action<int, string> _unpinned;

    /// <param name="container">the container's index, in thread names</param>
    /// <param name="cores">the core each thread is pinned to; null: unpinned</param>
    /// <param name="runRoot">starts a root queued here, on the thread that takes it</param>
    public ContainerExecutor(string engine, int container, int threads, int[]? cores, Action<RootTransaction> runRoot,
                             Action<int, Exception> failed, Action<int, string> unpinned)
    {
        Container = container;
        _runRoot = runRoot;
        _failed = failed;
        _unpinned = unpinned;
        _threads = new Thread[threads];
        _running = threads;
        for (int i = 0; i < threads; i++)
        {
            int core = cores?[i] ?? -1;
            _threads[i] = new Thread(() => Serve(core)) { IsBackground = true, Name = $"{engine}-c{container}-e{i}" };
            _threads[i].Start();
        }
    }

    public int Container { get; }

    public override int MaximumConcurrencyLevel => _threads.Length;

    /// <summary>True on one of this executor's threads.</summary>
    public bool IsCurrent => t_current == this;

    protected override void QueueTask(Task task) => Enqueue(task);

    /// <summary>ReactDB.tla Submit: queues a root, which a thread of this container starts.</summary>
    public void Queue(RootTransaction root) => Enqueue(root);

    void Enqueue(object work)
    {
        _queue.Enqueue(work);
        if (Volatile.Read(ref _sleepers) == 0) return;
        lock (_gate) Monitor.Pulse(_gate);
    }

    /// <summary>Inline only on this container's own threads: a continuation of another
    /// container's work is queued here instead.</summary>
    protected override bool TryExecuteTaskInline(Task task, bool taskWasPreviouslyQueued) =>
        t_current == this && !taskWasPreviouslyQueued && TryExecuteTask(task);

    protected override IEnumerable<Task> GetScheduledTasks() => _queue.OfType<Task>().ToArray();

    /// <summary>A thread's life: <see cref="Drain"/>, inside a task of this scheduler (the class
    /// remark's decision), which it runs inline, being one of the scheduler's threads.</summary>
    void Serve(int core)
    {
        if (core >= 0 && Affinity.PinCurrentThread(core) is { } why) _unpinned(Container, why);
        t_current = this;
        new Task(Drain, TaskCreationOptions.DenyChildAttach).RunSynchronously(this);
    }

    /// <summary>Algorithm 1's loop: take the next root, sub-transaction or continuation of one, and run it.</summary>
    void Drain()
    {
        while (true)
        {
            if (_queue.TryDequeue(out var work))
            {
                // Nothing that escapes a piece of work ends the thread: a container whose threads
                // had died would leave every root queued on it unanswered. The engine fails instead,
                // visibly, and the thread drains on, so that what is queued still ends.
                try
                {
                    if (work is RootTransaction root) _runRoot(root);
                    else TryExecuteTask((Task)work);
                }
                catch (Exception e)
                {
                    _failed(Container, e);
                }
                continue;
            }
            // A sub-transaction's caller queues the next piece of work microseconds later (a
            // continuation, the next call): spin for it before paying the OS's wake-up.
            if (Spin.BeforeSleeping(_queue, static q => !q.IsEmpty)) continue;
            lock (_gate)
            {
                // Counted as a sleeper before the last look, so that a task queued after that
                // look finds the count and pulses: no wake-up is lost.
                Interlocked.Increment(ref _sleepers);
                if (_queue.IsEmpty && !_stopping) Monitor.Wait(_gate);
                Interlocked.Decrement(ref _sleepers);
                if (_stopping && _queue.IsEmpty) break;
            }
        }
        if (Interlocked.Decrement(ref _running) == 0) _exited.SetResult();
    }

    /// <summary>Tells the threads to stop, which each does once it finds the queue empty, and
    /// completes when the last has; the engine calls it after every root has ended, so nothing is
    /// queued any more.</summary>
    public Task StopAsync()
    {
        lock (_gate)
        {
            _stopping = true;
            Monitor.PulseAll(_gate);
        }
        return _exited.Task;
    }
}
