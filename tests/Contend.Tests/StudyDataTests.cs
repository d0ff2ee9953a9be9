using System.Text.Json;
using Contend.Harness.Studies;

namespace Contend.Tests;

/// <summary>A study's CSV rows become data lines: every field kept, quoted ones unquoted, numbers
/// as numbers except the columns that are text, and only the files this run wrote.</summary>
public class StudyDataTests
{
    [Fact]
    public void EveryRowOfTheRunsCsvsIsAppendedAsOneLine()
    {
        string dir = Directory.CreateTempSubdirectory("contend-study-").FullName, data = Path.Combine(dir, "data");
        try
        {
            File.WriteAllText(Path.Combine(dir, "old.csv"), "figure,txn_per_s\nold,1\n");
            File.SetLastWriteTimeUtc(Path.Combine(dir, "old.csv"), DateTime.UtcNow.AddHours(-1));
            var since = DateTime.UtcNow.AddSeconds(-1);
            File.WriteAllText(Path.Combine(dir, "micro.csv"),
                "figure,point,protocol,txn_per_s,config,commit\n" +
                "micro,1,StealDB,117433.5,\"32 tables, \"\"hot\"\"\nfirst\",1234567\n" +
                "micro,2,Mcs,68618,plain,abcdef0\n");
            Assert.Equal(2, StudyData.Append("stealdb", dir, since, data));
            var lines = File.ReadAllLines(Path.Combine(data, "study-stealdb.ndjson"));
            Assert.Equal(2, lines.Length);
            using var first = JsonDocument.Parse(lines[0]);
            var row = first.RootElement;
            Assert.Equal("stealdb", row.GetProperty("study").GetString());
            Assert.Equal("micro.csv", row.GetProperty("file").GetString());
            Assert.Equal(117433.5, row.GetProperty("txn_per_s").GetDouble());
            Assert.Equal("32 tables, \"hot\"\nfirst", row.GetProperty("config").GetString());
            Assert.Equal("1234567", row.GetProperty("commit").GetString()); // a commit stays text
            Assert.Equal("1", row.GetProperty("point").GetString());
            Assert.Equal(2, StudyData.Append("stealdb", dir, since, data)); // appended, not replaced
            Assert.Equal(4, File.ReadAllLines(Path.Combine(data, "study-stealdb.ndjson")).Length);
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
