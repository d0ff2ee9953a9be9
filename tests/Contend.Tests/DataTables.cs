using System.Globalization;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace Contend.Tests;

/// <summary>
/// The tables of the docs that are made from committed data: between
/// <c>&lt;!-- table FILE: field, field as Header, ... --&gt;</c> and <c>&lt;!-- end table --&gt;</c>,
/// one row per line of the NDJSON file (its path relative to the page; <c>FILE@last</c>: only the
/// lines of its last line's commit), one column per field.
/// </summary>
internal static partial class DataTables
{
    [GeneratedRegex(@"<!-- table (?<file>[\w./-]+)(?<last>@last)?: (?<columns>[^>]+?) -->\n(?<body>.*?)<!-- end table -->", RegexOptions.Singleline)]
    private static partial Regex Table();

    /// <summary>The page with each of its data tables made again from its file.</summary>
    public static string Regenerate(string page, string text) => Table().Replace(text, m =>
    {
        string file = Path.Combine(Path.GetDirectoryName(page)!, m.Groups["file"].Value);
        var columns = m.Groups["columns"].Value.Split(',').Select(c => c.Trim()).Select(c =>
        {
            int at = c.IndexOf(" as ", StringComparison.Ordinal);
            return at < 0 ? (Field: c, Header: c) : (Field: c[..at], Header: c[(at + 4)..]);
        }).ToArray();
        var table = new StringBuilder();
        table.Append("| ").AppendJoin(" | ", columns.Select(c => c.Header)).Append(" |\n");
        table.Append("| ").AppendJoin(" | ", columns.Select(_ => "---")).Append(" |\n");
        // Cloned, so that each line's document goes back to the pool once read.
        var rows = File.ReadLines(file).Where(l => l.Length > 0).Select(l =>
        {
            using var line = JsonDocument.Parse(l);
            return line.RootElement.Clone();
        }).ToList();
        // @last: only the rows of the file's last commit (a run appends many rows at once).
        if (m.Groups["last"].Success && rows.Count > 0)
        {
            string commit = rows[^1].GetProperty("commit").GetString()!;
            rows = rows.Where(r => r.GetProperty("commit").GetString() == commit).ToList();
        }
        foreach (var row in rows)
            table.Append("| ").AppendJoin(" | ", columns.Select(c => Cell(row, c.Field))).Append(" |\n");
        return $"<!-- table {m.Groups["file"].Value}{m.Groups["last"].Value}: {m.Groups["columns"].Value} -->\n{table}<!-- end table -->";
    });

    static string Cell(JsonElement row, string field) =>
        !row.TryGetProperty(field, out var value) ? "-" : value.ValueKind switch
        {
            JsonValueKind.Null => "-",
            JsonValueKind.String => value.GetString()!.Replace("|", "\\|"),
            JsonValueKind.Number => value.GetDouble().ToString("#,0.###", CultureInfo.InvariantCulture),
            _ => value.GetRawText(),
        };
}
