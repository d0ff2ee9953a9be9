using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Running;
using BenchmarkDotNet.Toolchains.InProcess.Emit;

// dotnet run -c Release --project bench/Contend.Benchmarks -- --filter '*'   (or build.ps1 bench ...)
// In-process: the engine's pinned arenas and worker threads live in the benchmark process.
var config = DefaultConfig.Instance
    .AddJob(Job.Default.WithToolchain(InProcessEmitToolchain.Instance))
    .AddDiagnoser(MemoryDiagnoser.Default)
    .AddColumn(StatisticColumn.OperationsPerSecond)
    .AddColumn(new Contend.Benchmarks.AbortRateColumn())
    .AddColumn(new Contend.Benchmarks.ResidualShareColumn());
BenchmarkSwitcher.FromAssembly(typeof(Contend.Benchmarks.LockBenchmarks).Assembly).Run(args, config);
