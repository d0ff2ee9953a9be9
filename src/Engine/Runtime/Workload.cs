using Contend.Engine.Programs;
using Contend.Engine.Storage;

namespace Contend.Engine.Runtime;

/// <summary>A workload is data plus a seed: the same seed gives every worker the same transactions.</summary>
internal interface IWorkload
{
    string Name { get; }
    /// <summary>The configuration in one line, and what the workload includes and leaves out.</summary>
    string Describe();
    /// <summary>Creates and fills the tables (single-threaded) and builds the programs.</summary>
    void Load(Database db);
    ITransactionSource CreateSource(int worker, ulong seed);
}

/// <summary>One worker's stream of transactions.</summary>
internal interface ITransactionSource
{
    /// <summary>Fills <see cref="TxnContext.Args"/> for the next transaction and returns its program.</summary>
    TxnProgram Next(TxnContext ctx);
}
