using System.Diagnostics;
using System.Numerics;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using Contend.Engine.Programs;
using Contend.Engine.Protocols.TwoPhaseLocking;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Engine.Protocols.StealDB;

// StealDB's per-worker state and the words other workers read, laid out by cache line.
internal sealed partial class StealDb
{
    /// <summary>One worker's transaction state that other workers reach: the spec's per-transaction
    /// variables for the attempt the worker is running.</summary>
    sealed class Slot(int worker, int imageBytes)
    {
        public readonly int Worker = worker;
        public TxnContext Ctx = null!;
        /// <summary>The exception an op of the running attempt threw, for the owner to raise;
        /// written at most once an attempt, so it may sit beside the references a steal reads.
        /// The owner clears it as it raises it, so every attempt begins with none.</summary>
        public ExceptionDispatchInfo? Failure;
        public SlotWords Words;
        /// <summary>Per op, a line's 64 bytes: the owner runs ops from the front of the runnable
        /// queue while a waiter runs them from the back, and neither should invalidate the other's.
        /// The array is not line-aligned, so each op shares a line with a neighbour at one end;
        /// aligned (<see cref="CacheLines"/>), StealDB ran no faster (docs/measured/StealDB.md).</summary>
        public readonly OpLine[] Ops = new OpLine[TxnContext.MaxOps];
        /// <summary>rq: op index + 1 per position, 0 while a position is reserved but unwritten.</summary>
        public readonly int[] Rq = new int[TxnContext.MaxOps];
        /// <summary>Before-images, one region of a whole number of cache lines per op.</summary>
        public readonly byte[] Images = new byte[TxnContext.MaxOps * imageBytes];
    }

    /// <summary>One op's words. Everything but the claim word and the dependency counter is
    /// written by the thread that runs the op and read by the owner once the op is counted finished.</summary>
    [StructLayout(LayoutKind.Explicit, Size = 64)]
    struct OpLine
    {
        /// <summary>opTid: the attempt's tid until claimed, then 0.</summary>
        [FieldOffset(0)] public long Tid;
        [FieldOffset(8)] public long ReadVersion;
        [FieldOffset(16)] public long InsertKey;
        [FieldOffset(24)] public int Row;
        /// <summary>Dependencies not yet finished; kept only for an op with more than one, since
        /// an op with one has a single finisher, which needs no count (<see cref="Finish"/>).</summary>
        [FieldOffset(28)] public int DepsLeft;
        [FieldOffset(32)] public byte Lock;
        [FieldOffset(33)] public bool Wrote;
        /// <summary>The op's node is a reader's (the op only reads its row).</summary>
        [FieldOffset(34)] public bool SharedLock;
        /// <summary>The row's table, once the row is found: what the release and the undo use,
        /// where looking it up again from the program took six dependent loads an op, each time
        /// (docs/measured/StealDB.md, "Frames without zeroing"). In the op's line, not an array
        /// of its own: the thread that runs the op writes it, as it writes the row.</summary>
        [FieldOffset(40)] public Table Table;
    }

    /// <summary>The slot's words that change while it runs, in groups by who writes them and
    /// when, no two groups on one cache line. A steal reads the slot's references
    /// (<see cref="Slot.Ctx"/>, its arrays) and takes its steal context while the slot's own
    /// worker counts every op it runs: where the runtime laid the counters out beside either,
    /// each op and each steal moved that line between the cores, which cost StealDB 6-8% at one
    /// hot record (docs/measured/StealDB.md). The struct sits at whatever offset mod 64 the
    /// slot's address gives it, so groups a line apart could still share one: each group is
    /// under 64 bytes and starts 128 after the last, so that any two words of different groups,
    /// the first word and the struct's start, and the last word and its end, are 64 bytes apart
    /// or more (StealDbLayoutTests).</summary>
    [StructLayout(LayoutKind.Explicit, Size = 896)]
    internal struct SlotWords
    {
        /// <summary>Ops the owner's own thread finished; the other workers count theirs in <see cref="Finished"/>.</summary>
        [FieldOffset(128)] public int OwnFinished;
        /// <summary>Ops this worker executed, and how many of them were other transactions';
        /// like <see cref="OwnFinished"/>, written by this slot's worker alone.</summary>
        [FieldOffset(136)] public long Executed;
        [FieldOffset(144)] public long Stolen;
        [FieldOffset(256)] public long StealContext;
        /// <summary>Bumped by whoever publishes into <see cref="StealContext"/>, just before it.</summary>
        [FieldOffset(264)] public int Writes;
        [FieldOffset(384)] public long Running;
        [FieldOffset(512)] public int RqLength;
        /// <summary>Ops finished by workers other than the owner.</summary>
        [FieldOffset(640)] public int Finished;
        [FieldOffset(768)] public int Doom;
    }

    /// <summary>The basic policy's holder hints of one table, one int per row, the rows spread
    /// over up to <see cref="MostGroups"/> groups of at least a cache line each: row r is in group
    /// r mod the group count. Dense (row r at index r), sixteen rows shared a line, and every
    /// worker wrote it on every lock and release of any of them: the hot set's 16 rows were one
    /// line between the cores (docs/measured/StealDB.md). Spread, two rows less than the group
    /// count apart never share a line, and a table of more rows than that takes the room dense
    /// hints took.</summary>
    internal sealed class HolderHints
    {
        const int MostGroups = 4096, IntsPerLine = CacheLines.Bytes / sizeof(int);
        readonly int[] _hints;
        readonly int _rows, _groupMask, _groupShift, _groupWidth;

        public HolderHints(int rows)
        {
            _rows = rows;
            int groups = (int)Math.Min(BitOperations.RoundUpToPowerOf2((uint)Math.Max(rows, 1)), MostGroups);
            _groupMask = groups - 1;
            _groupShift = BitOperations.Log2((uint)groups);
            _groupWidth = Math.Max(IntsPerLine, (rows + groups - 1) / groups);
            _hints = new int[groups * _groupWidth];
        }

        /// <summary>Row <paramref name="row"/>'s hint.</summary>
        public ref int Of(int row)
        {
            Debug.Assert((uint)row < (uint)_rows, $"holder hint of row {row} outside the table's {_rows} rows");
            return ref _hints[(row & _groupMask) * _groupWidth + (row >> _groupShift)];
        }
    }
}
