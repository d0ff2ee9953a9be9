using Contend.Engine.Programs;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;

namespace Contend.Harness.Workloads;

/// <summary>
/// StealDB's micro-benchmark (seed 000, Section 4.2): <c>tables</c> tables of <c>rows</c>
/// integer records; one transaction type that picks a random record in each of the first
/// <c>ops</c> tables and increments it. Contention is raised by restricting the first table
/// to its first <c>hot</c> records (1: every transaction updates the same record first;
/// 0: no restriction).
/// The paper gives no DAG. Every increment after the first is declared to follow the first,
/// as in StealDB.tla's HotProg: the first record's lock comes first (the paper's chain of
/// waiters forms on it), and the other increments become runnable, so stealable, once it ran
/// (a DAG's roots are never published for stealing). Other protocols run the ops in the same
/// order as before.
/// </summary>
internal sealed class StealDbMicro(int tables, int rows, int ops, int hot) : IWorkload
{
    readonly int _rows = rows, _ops = ops, _hot = hot;
    TxnProgram _program = null!;

    public string Name => "stealdb";

    public string Describe() =>
        $"StealDB micro-benchmark: {tables} tables x {_rows:N0} integer records, {_ops} increments per transaction (one per table), " +
        (_hot == 0 ? "first table unrestricted" : $"first table restricted to {_hot} hot record(s)");

    public void Load(Database db)
    {
        if (tables < 1 || tables > TxnContext.MaxOps) throw new ArgumentOutOfRangeException(nameof(tables), $"stealdb: tables = {tables} must be in 1..{TxnContext.MaxOps}");
        if (_rows < 1) throw new ArgumentOutOfRangeException("rows", $"stealdb: rows = {_rows} must be positive");
        if (_ops < 1 || _ops > tables) throw new ArgumentOutOfRangeException("ops", $"stealdb: ops = {_ops} must be in 1..{tables} (one op per table)");
        if (_hot < 0 || _hot > _rows) throw new ArgumentOutOfRangeException("hot", $"stealdb: hot = {_hot} must be in 0..{_rows}");
        var builder = new ProgramBuilder("increment", db, _ops);
        for (int t = 0; t < tables; t++)
        {
            var table = db.Create($"t{t}", sizeof(long), _rows);
            for (int key = 0; key < _rows; key++) table.Load(key);
            if (t == 0) builder.Write("increment0", table.Name, KeySource.FromArg(0), Fields.IncrementFirst);
            else if (t < _ops) builder.Write($"increment{t}", table.Name, KeySource.FromArg(t), Fields.IncrementFirst, "increment0");
        }
        _program = builder.BodiesNeverAbort().Build();
    }

    public ITransactionSource CreateSource(int worker, ulong seed) => new Source(this, Rng.Seed(seed, worker));

    sealed class Source(StealDbMicro w, ulong rng) : ITransactionSource
    {
        ulong _rng = rng;

        public TxnProgram Next(TxnContext ctx)
        {
            for (int t = 0; t < w._ops; t++)
            {
                int range = t == 0 && w._hot > 0 ? w._hot : w._rows;
                ctx.Args[t] = (long)(Rng.Next(ref _rng) % (ulong)range);
            }
            return w._program;
        }
    }
}
