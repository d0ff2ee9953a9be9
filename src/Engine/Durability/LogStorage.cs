using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace Contend.Engine.Durability;

/// <summary>
/// Where a data directory's files live: the disk (<see cref="DiskStorage"/>), or a simulated disk
/// that loses what was not synced on a simulated crash (<see cref="SimulatedDisk"/>). The log, the
/// checkpoint and recovery see only this, so a partition server can own one of its own.
/// </summary>
internal interface ILogStorage
{
    /// <summary>Where the files are, for messages.</summary>
    string Where { get; }

    /// <summary>Claims the directory for one engine until the claim is disposed; throws
    /// <see cref="DataDirectoryException"/> when another holds it.</summary>
    IDisposable Claim();

    IReadOnlyList<string> Files();

    /// <summary>The file's bytes as far as they were written (after a crash: as far as they survived).</summary>
    byte[] Read(string name);

    /// <summary>A new, empty file (replacing one of that name), open for appending.</summary>
    ILogFile Create(string name);

    /// <summary>Renames over <paramref name="to"/>, atomically and durably.</summary>
    void Replace(string from, string to);

    void Delete(string name);
}

/// <summary>A file being appended to.</summary>
internal interface ILogFile : IDisposable
{
    long Length { get; }

    void Append(ReadOnlySpan<byte> bytes);

    /// <summary>Makes every byte appended so far durable (fdatasync); throws
    /// <see cref="IOException"/> when the disk says it could not, and then nothing may be
    /// assumed of what was appended since the last sync that returned.</summary>
    void Sync();
}

/// <summary>The files of a directory on the disk.</summary>
internal sealed class DiskStorage(string directory) : ILogStorage
{
    public string Where => directory;

    public IDisposable Claim()
    {
        Directory.CreateDirectory(directory);
        try
        {
            // FileShare.None takes an advisory lock (flock on Linux), which a process that dies drops.
            return new FileStream(Path.Combine(directory, LogFormat.LockName), FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
        }
        catch (IOException e)
        {
            throw new DataDirectoryException(directory, "another engine holds it (its lock file is taken); one engine per directory", e);
        }
    }

    public IReadOnlyList<string> Files() =>
        Directory.EnumerateFiles(directory).Select(Path.GetFileName).Where(n => n != LogFormat.LockName).Order().ToList()!;

    public byte[] Read(string name) => File.ReadAllBytes(Path.Combine(directory, name));

    public ILogFile Create(string name)
    {
        var file = new DiskFile(Path.Combine(directory, name));
        SyncDirectory(); // the new name itself is durable
        return file;
    }

    public void Replace(string from, string to)
    {
        File.Move(Path.Combine(directory, from), Path.Combine(directory, to), overwrite: true);
        SyncDirectory();
    }

    public void Delete(string name)
    {
        File.Delete(Path.Combine(directory, name));
        SyncDirectory();
    }

    void SyncDirectory()
    {
        if (!OperatingSystem.IsLinux()) return;
        int fd = Native.open(directory, Native.ReadOnlyDirectory);
        if (fd < 0) throw new IOException($"{directory}: open for fsync failed (errno {Marshal.GetLastPInvokeError()})");
        try
        {
            if (Native.fsync(fd) != 0) throw new IOException($"{directory}: fsync of the directory failed (errno {Marshal.GetLastPInvokeError()})");
        }
        finally
        {
            Native.close(fd);
        }
    }

    sealed class DiskFile : ILogFile
    {
        readonly SafeFileHandle _handle;
        readonly string _path;
        long _length;

        public DiskFile(string path)
        {
            _path = path;
            _handle = File.OpenHandle(path, FileMode.Create, FileAccess.ReadWrite, FileShare.Read);
        }

        public long Length => _length;

        public void Append(ReadOnlySpan<byte> bytes)
        {
            RandomAccess.Write(_handle, bytes, _length);
            _length += bytes.Length;
        }

        public void Sync()
        {
            if (!OperatingSystem.IsLinux())
            {
                using var stream = new FileStream(_handle, FileAccess.ReadWrite);
                stream.Flush(flushToDisk: true);
                return;
            }
            if (Native.fdatasync(_handle) != 0)
                throw new IOException($"{_path}: fdatasync failed (errno {Marshal.GetLastPInvokeError()})");
        }

        public void Dispose() => _handle.Dispose();
    }

    static class Native
    {
        public const int ReadOnlyDirectory = 0x10000; // O_RDONLY | O_DIRECTORY

        [DllImport("libc", SetLastError = true)]
        public static extern int fdatasync(SafeFileHandle fd);

        [DllImport("libc", SetLastError = true)]
        public static extern int fsync(int fd);

        [DllImport("libc", SetLastError = true, CharSet = CharSet.Ansi)]
        public static extern int open(string path, int flags);

        [DllImport("libc", SetLastError = true)]
        public static extern int close(int fd);
    }
}
