using System.Diagnostics;

namespace Contend.Engine.Cluster;

/// <summary>
/// Virtual time for a deterministic simulation: a <see cref="TimeProvider"/> whose timers fire
/// only when <see cref="Step"/> or <see cref="RunUntil"/> is called, on the calling thread, in
/// the order of their due times and, at equal due times, of their setting. Time jumps to the
/// next timer, so a run of seconds of virtual time takes as long as its callbacks do. Nothing
/// else decides an order, so the same callbacks on the same seed give the same run (the habit
/// of FoundationDB's simulator and TigerBeetle's VOPR).
/// </summary>
/// <remarks>Not thread-safe: one thread drives a simulation, and every callback runs on it.</remarks>
internal sealed class SimulatedTime : TimeProvider
{
    /// <summary>Pending firings; a firing whose timer has been changed or disposed since is skipped.</summary>
    readonly PriorityQueue<(Timer Timer, long Generation), (long Due, long Sequence)> _queue = new();
    readonly DateTimeOffset _epoch;
    long _now;
    long _sequence;

    readonly Func<int, int>? _choose;
    readonly List<((Timer Timer, long Generation) Firing, (long Due, long Sequence) When)> _window = new();

    /// <param name="choose">null: firings run in due order. Otherwise an explorer (a systematic
    /// tester's controlled random choice) picks which of the next <see cref="ChoiceWindow"/> firings
    /// runs first: given their count, it returns an index among them, in due order. The others
    /// run later, so what they carry is late: every order of the next few deliveries and
    /// timeouts is reachable, as if their delays had been drawn otherwise.</param>
    public SimulatedTime(DateTimeOffset? start = null, Func<int, int>? choose = null)
    {
        _epoch = start ?? new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);
        _choose = choose;
    }

    /// <summary>How many of the next firings an explorer chooses among.</summary>
    public const int ChoiceWindow = 4;

    /// <summary>Virtual time since the simulation began.</summary>
    public TimeSpan Elapsed => TimeSpan.FromTicks(_now);

    /// <summary>How many timer firings have run: a run's length, same seed same count.</summary>
    public long Fired { get; private set; }

    public override DateTimeOffset GetUtcNow() => _epoch.AddTicks(_now);

    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => _now;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = new Timer(this, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    /// <summary>Runs the next firing, moving time to it; false when no timer is set.</summary>
    public bool Step()
    {
        if (_choose is not null) return StepChosen();
        while (_queue.TryDequeue(out var firing, out var when))
        {
            var timer = firing.Timer;
            if (firing.Generation != timer.Generation) continue; // changed or disposed since
            Debug.Assert(when.Due >= _now, "a timer due before now: time must not go back");
            Fire(timer, when.Due);
            return true;
        }
        return false;
    }

    /// <summary>Takes the next live firings (up to the window), lets the explorer pick one, puts the others back.</summary>
    bool StepChosen()
    {
        _window.Clear();
        while (_window.Count < ChoiceWindow && _queue.TryDequeue(out var firing, out var when))
            if (firing.Generation == firing.Timer.Generation) _window.Add((firing, when));
        if (_window.Count == 0) return false;
        int pick = _window.Count == 1 ? 0 : _choose!(_window.Count);
        if ((uint)pick >= (uint)_window.Count)
            throw new InvalidOperationException($"simulated time: the explorer chose firing {pick} of {_window.Count}");
        for (int i = 0; i < _window.Count; i++)
            if (i != pick) _queue.Enqueue(_window[i].Firing, _window[i].When);
        var chosen = _window[pick];
        Fire(chosen.Firing.Timer, Math.Max(_now, chosen.When.Due));
        return true;
    }

    void Fire(Timer timer, long at)
    {
        _now = at;
        Fired++;
        timer.Fire();
    }

    /// <summary>Runs every firing due up to <paramref name="elapsed"/> (virtual time since the
    /// start), then sets the clock there. Returns false when no timer was left before it.</summary>
    public bool RunUntil(TimeSpan elapsed)
    {
        long until = elapsed.Ticks;
        while (_queue.TryPeek(out _, out var when) && when.Due <= until)
        {
            if (!Step()) break;
        }
        bool more = _queue.Count > 0;
        if (_now < until) _now = until;
        return more;
    }

    void Schedule(Timer timer, long due) => _queue.Enqueue((timer, timer.Generation), (due, _sequence++));

    sealed class Timer(SimulatedTime time, TimerCallback callback, object? state) : ITimer
    {
        /// <summary>Bumped by every change, so that firings set before it are skipped.</summary>
        public long Generation;
        long _period = -1;
        bool _disposed;

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            if (_disposed) return false;
            if (dueTime < TimeSpan.Zero && dueTime != Timeout.InfiniteTimeSpan)
                throw new ArgumentOutOfRangeException(nameof(dueTime), $"simulated timer: due time {dueTime} is negative");
            Generation++;
            _period = period == Timeout.InfiniteTimeSpan || period == TimeSpan.Zero ? -1 : period.Ticks;
            if (dueTime != Timeout.InfiniteTimeSpan) time.Schedule(this, time._now + dueTime.Ticks);
            return true;
        }

        public void Fire()
        {
            if (_period > 0) time.Schedule(this, time._now + _period);
            else Generation++; // one-shot: fired, so any later firing is stale
            callback(state);
        }

        public void Dispose()
        {
            _disposed = true;
            Generation++;
        }

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
