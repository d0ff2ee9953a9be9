using System.Diagnostics;
using Contend.Engine.Runtime;

namespace Contend.Harness;

/// <summary>
/// Two front-door runs measured in turn in one process: short slices of one, then of the other,
/// alternating (A B, B A, ...), so that a drift of the machine's speed reaches both alike. Each
/// run's callers work only in its own slices; between slices every call in flight ends before the
/// other run starts, so a slice measures one engine alone.
/// </summary>
/// <remarks>Why: on this machine the speed of a whole process swings by 20-50 % within seconds
/// (docs/measured/ReactDB.md), and two 2 s runs one after the other differ by more than the 5 %
/// that ReactDB's goal against Silo asks about; slices of 0.1 s, paired, keep a comparison
/// readable while the machine swings.</remarks>
internal sealed class InTurn
{
    /// <summary>The slice the command and the study use: long enough that the drain between slices
    /// (a call in flight, some microseconds) is lost in it, short enough that the machine rarely
    /// changes speed inside one.</summary>
    public const double Slice = 0.1;

    readonly double _sliceSeconds;
    readonly int _warmupSlices, _slices;
    readonly Seat[] _seats;

    /// <param name="sliceSeconds">each slice's length</param>
    /// <param name="options">the warm-up and the measured seconds, each run's share of them</param>
    public InTurn(double sliceSeconds, RunOptions options)
    {
        _sliceSeconds = sliceSeconds;
        _warmupSlices = (int)Math.Ceiling(options.WarmupSeconds / sliceSeconds);
        _slices = Pairs(options, sliceSeconds);
        _seats = [new Seat(), new Seat()];
    }

    /// <summary>The measured pairs of slices over <paramref name="options"/>' seconds, before any
    /// pair without commits on both sides is left out.</summary>
    public static int Pairs(RunOptions options, double sliceSeconds) => Math.Max(1, (int)Math.Round(options.Seconds / sliceSeconds));

    /// <summary>Runs <paramref name="first"/> and <paramref name="second"/>, each on a thread of its
    /// own with its seat, and drives their slices; returns their rows and, per pair of slices in
    /// which both runs committed, the first's throughput over the second's. A pair in which either
    /// committed nothing is left out: its ratio, 0 or infinite, says that a run's callers got no
    /// thread in their slice (a starved thread pool), not how the two engines compare.</summary>
    public (RunRow First, RunRow Second, double[] Ratios) Run(Func<Seat, RunRow> first, Func<Seat, RunRow> second)
    {
        var rows = new RunRow?[2];
        var errors = new Exception?[2];
        var threads = new[] { first, second }.Select((run, i) => new Thread(() =>
        {
            try
            {
                rows[i] = run(_seats[i]);
            }
            catch (Exception e)
            {
                errors[i] = e;
                _seats[i].Fail();
            }
        }) { Name = $"in-turn-{i}" }).ToArray();
        foreach (var t in threads) t.Start();
        var ratios = new List<double>();
        if (_seats.All(s => s.WaitJoined()))
        {
            for (int round = 0; round < _warmupSlices + _slices; round++)
            {
                bool measured = round >= _warmupSlices;
                if (round == _warmupSlices)
                    foreach (var seat in _seats) seat.OpenWindow();
                var rates = new double[2];
                foreach (int i in round % 2 == 0 ? [0, 1] : new[] { 1, 0 })
                    rates[i] = _seats[i].Slice(_sliceSeconds, measured);
                if (measured && rates[0] > 0 && rates[1] > 0) ratios.Add(rates[0] / rates[1]);
            }
            foreach (var seat in _seats) seat.CloseWindow();
        }
        foreach (var seat in _seats) seat.Stop();
        foreach (var t in threads) t.Join();
        if (errors.FirstOrDefault(e => e is not null) is { } error) throw new InvalidOperationException("a run measured in turn failed", error);
        return (rows[0]!, rows[1]!, ratios.ToArray());
    }

    /// <summary>A run's place in the turn: its callers ask it before each step whether they may
    /// go on, and <see cref="Runner.MeasureCallers"/> hands it what the turn reads between slices.</summary>
    internal sealed class Seat
    {
        int _active, _inStep, _stopped;
        TaskCompletionSource _open = new(TaskCreationOptions.RunContinuationsAsynchronously);
        readonly ManualResetEventSlim _joined = new();
        Func<long>? _commits;
        Action? _reset;
        Func<object>? _snapshot;
        bool _failed;

        /// <summary>The measured slices' total length.</summary>
        public double Seconds { get; private set; }
        public object? Before { get; private set; }
        public object? After { get; private set; }
        public bool Stopped => Volatile.Read(ref _stopped) != 0;

        /// <summary>The run's callers have started: the turn may give it slices.</summary>
        /// <param name="commits">the callers' commits so far, read while none runs</param>
        /// <param name="reset">clears the callers' stats, called while none runs</param>
        /// <param name="snapshot">the engine's counters, taken as the measured window opens and closes</param>
        public void Join(Func<long> commits, Action reset, Func<object> snapshot)
        {
            (_commits, _reset, _snapshot) = (commits, reset, snapshot);
            _joined.Set();
        }

        /// <summary>Before a caller's step: true when the run has the turn (the caller then calls
        /// <see cref="Leave"/> after the step); false when it has not, and the caller awaits
        /// <see cref="Opened"/> before it asks again.</summary>
        public bool TryEnter()
        {
            Interlocked.Increment(ref _inStep);
            if (Volatile.Read(ref _active) != 0) return true;
            Interlocked.Decrement(ref _inStep);
            return false;
        }

        public void Leave() => Interlocked.Decrement(ref _inStep);

        /// <summary>Completes when the run next has the turn (or stops); read after a refused <see cref="TryEnter"/>.</summary>
        public Task Opened => Volatile.Read(ref _open).Task;

        /// <summary>Waits until the run has joined (true) or failed before it could (false).</summary>
        internal bool WaitJoined()
        {
            _joined.Wait();
            return !Volatile.Read(ref _failed);
        }

        internal void Fail()
        {
            Volatile.Write(ref _failed, true);
            _joined.Set();
        }

        internal void OpenWindow()
        {
            _reset!();
            Before = _snapshot!();
        }

        /// <summary>After the last slice, while none of the run's callers steps.</summary>
        internal void CloseWindow() => After = _snapshot!();

        /// <summary>Gives the run the turn for <paramref name="seconds"/>, then takes it back once
        /// every step in flight has ended; the run's commits per second in the slice.</summary>
        internal double Slice(double seconds, bool measured)
        {
            long before = _commits!();
            var clock = Stopwatch.StartNew();
            Volatile.Write(ref _active, 1);
            _open.TrySetResult();
            Thread.Sleep(TimeSpan.FromSeconds(seconds));
            // A new gate before the turn is taken back: a caller refused from here on awaits it.
            Volatile.Write(ref _open, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
            Volatile.Write(ref _active, 0);
            var wait = new SpinWait();
            while (Volatile.Read(ref _inStep) != 0) wait.SpinOnce();
            double elapsed = clock.Elapsed.TotalSeconds;
            if (!measured) return 0;
            Seconds += elapsed;
            return (_commits() - before) / elapsed;
        }

        /// <summary>Ends the run: its callers wake, see it stopped, and leave.</summary>
        internal void Stop()
        {
            Volatile.Write(ref _stopped, 1);
            Volatile.Write(ref _active, 1);
            _open.TrySetResult();
        }
    }
}
