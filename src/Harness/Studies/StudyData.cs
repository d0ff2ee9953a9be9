using System.Text;
using System.Text.Json;

namespace Contend.Harness.Studies;

/// <summary>
/// A study's runs kept as data: every row of the CSVs a study run wrote, appended as one JSON
/// object per line to <c>study-NAME.ndjson</c> in a folder the project commits
/// (docs/measured/data), each with the file it came from. The CSVs already carry the command,
/// commit, machine and date of every run.
/// </summary>
internal static class StudyData
{
    /// <summary>Columns kept as text even when they read as a number (a commit of digits only).</summary>
    static readonly HashSet<string> Text = ["figure", "point", "protocol", "config", "command", "commit", "machine", "date"];

    /// <summary>Appends the rows of the CSVs in <paramref name="dir"/> written since
    /// <paramref name="since"/>; returns how many.</summary>
    public static int Append(string study, string dir, DateTime since, string dataDir)
    {
        Directory.CreateDirectory(dataDir);
        var lines = new StringBuilder();
        int rows = 0;
        foreach (string csv in Directory.EnumerateFiles(dir, "*.csv").Where(f => File.GetLastWriteTimeUtc(f) >= since).Order(StringComparer.Ordinal))
        {
            var records = Records(File.ReadAllText(csv));
            if (records.Count == 0) continue;
            string[] header = records[0];
            foreach (string[] fields in records.Skip(1))
            {
                using var buffer = new MemoryStream();
                using (var json = new Utf8JsonWriter(buffer, new JsonWriterOptions { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping }))
                {
                    json.WriteStartObject();
                    json.WriteString("study", study);
                    json.WriteString("file", Path.GetFileName(csv));
                    for (int i = 0; i < header.Length && i < fields.Length; i++)
                    {
                        if (!Text.Contains(header[i]) && double.TryParse(fields[i], System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out double number))
                            json.WriteNumber(header[i], number);
                        else json.WriteString(header[i], fields[i]);
                    }
                    json.WriteEndObject();
                }
                lines.Append(Encoding.UTF8.GetString(buffer.ToArray())).Append('\n');
                rows++;
            }
        }
        File.AppendAllText(Path.Combine(dataDir, $"study-{study}.ndjson"), lines.ToString());
        return rows;
    }

    /// <summary>The records of a CSV as <see cref="Runner.Quote"/> writes them: a field with a
    /// comma, a quote or a line break is quoted, its quotes doubled.</summary>
    internal static List<string[]> Records(string text)
    {
        var records = new List<string[]>();
        var fields = new List<string>();
        var field = new StringBuilder();
        bool quoted = false;
        for (int i = 0; i < text.Length; i++)
        {
            char c = text[i];
            if (quoted)
            {
                if (c == '"' && i + 1 < text.Length && text[i + 1] == '"') { field.Append('"'); i++; }
                else if (c == '"') quoted = false;
                else field.Append(c);
            }
            else if (c == '"') quoted = true;
            else if (c == ',') { fields.Add(field.ToString()); field.Clear(); }
            else if (c == '\n' || c == '\r')
            {
                if (c == '\r' && i + 1 < text.Length && text[i + 1] == '\n') i++;
                fields.Add(field.ToString());
                field.Clear();
                if (fields.Count > 1 || fields[0].Length > 0) records.Add(fields.ToArray());
                fields.Clear();
            }
            else field.Append(c);
        }
        if (field.Length > 0 || fields.Count > 0)
        {
            fields.Add(field.ToString());
            records.Add(fields.ToArray());
        }
        return records;
    }
}
