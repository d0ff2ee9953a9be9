namespace Contend.Tests;

/// <summary>
/// The package as a user meets it: Contend.Engine packed from this build, a project outside the
/// repository (tests/Consumer, copied out) restoring it from a local folder feed, and one
/// transfer run through each of its front doors (ContendEngine, ReactDbEngine).
/// </summary>
public class PackageTests
{
    [Fact]
    public void AConsumerRestoresThePackedPackageAndRunsATransactionThroughEachFrontDoor()
    {
        string work = Directory.CreateTempSubdirectory("contend-package-").FullName;
        try
        {
            string feed = Path.Combine(work, "feed"), consumer = Path.Combine(work, "consumer");
            var pack = Processes.Run("dotnet", ["pack", Path.Combine(Processes.Root, "src", "Engine", "Contend.Engine.csproj"),
                                                "-c", Processes.Configuration, "--no-build", "-o", feed, "-nologo"],
                                     Processes.Root, TimeSpan.FromMinutes(3));
            Assert.True(pack.Code == 0, pack.Output);
            string package = Assert.Single(Directory.GetFiles(feed, "Contend.Engine.*.nupkg"));
            string version = Path.GetFileNameWithoutExtension(package)["Contend.Engine.".Length..];

            Directory.CreateDirectory(consumer);
            foreach (var file in new[] { "Consumer.csproj", "Program.cs" })
                File.Copy(Path.Combine(Processes.Root, "tests", "Consumer", file), Path.Combine(consumer, file));
            // The folder feed beside the machine's own sources (the package's dependencies come from
            // those), and a package folder of its own, so no earlier pack of the same version is reused.
            File.WriteAllText(Path.Combine(consumer, "nuget.config"),
                $"<configuration><packageSources><add key=\"contend\" value=\"{feed}\" /></packageSources></configuration>");
            var run = Processes.Run("dotnet", ["run", "-c", "Release", $"-p:ContendVersion={version}",
                                               $"-p:RestorePackagesPath={Path.Combine(work, "packages")}", "--", "StealDB"],
                                    consumer, TimeSpan.FromMinutes(4));
            Assert.True(run.Code == 0, run.Output);
            Assert.Contains("transfer: Committed, balances 750 and 1250; overdraft: UserAborted (User)", run.Output);
            Assert.Contains("reactor transfer: Committed, balances 750 and 1250; overdraft: UserAborted (User)", run.Output);
            // It ran the packed assembly, not a build of the repository's.
            Assert.True(File.Exists(Path.Combine(work, "packages", "contend.engine", version, "lib", "net10.0", "Contend.Engine.dll")));
        }
        finally
        {
            Directory.Delete(work, recursive: true);
        }
    }
}
