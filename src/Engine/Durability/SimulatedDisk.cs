namespace Contend.Engine.Durability;

/// <summary>
/// A disk in memory for deterministic tests: it remembers what each file had when it was last
/// synced, and <see cref="Crash"/> keeps only that of every file and, at random (from the seed),
/// some of what was written after it, the last record perhaps torn. Faults on request: a sync
/// that fails with EIO (<see cref="FailSyncs"/>), a byte flipped on the disk (<see cref="Flip"/>).
/// A rename and a delete are durable when they return (as <see cref="DiskStorage"/>'s are, by
/// syncing the directory).
/// </summary>
internal sealed class SimulatedDisk(ulong seed) : ILogStorage
{
    sealed class Contents
    {
        public byte[] Bytes = [];
        public int Length;
        public int Synced;
    }

    readonly Dictionary<string, Contents> _files = [];
    readonly object _gate = new();
    ulong _rng = seed | 1;
    int _claims;
    /// <summary>Bumped by a crash: a file opened before it belongs to the process that died,
    /// and whatever still runs of that process (its loggers) fails on its next append or sync.</summary>
    int _incarnation;

    /// <summary>Syncs still to fail with EIO, from the next one on.</summary>
    public int FailSyncs { get; set; }

    /// <summary>Files whose name ends with this take <see cref="SlowSync"/> to sync: a disk one of
    /// whose files lags the others, so one logger's sync is seen to end long before another's.</summary>
    public string? SlowSuffix { get; set; }

    public TimeSpan SlowSync { get; set; }

    /// <summary>Syncs that returned.</summary>
    public int Syncs { get; private set; }

    public string Where => "simulated disk";

    public IDisposable Claim()
    {
        lock (_gate)
        {
            if (_claims != 0) throw new DataDirectoryException(Where, "another engine holds it (its lock file is taken); one engine per directory");
            _claims = 1;
        }
        return new Release(this);
    }

    sealed class Release(SimulatedDisk disk) : IDisposable
    {
        public void Dispose()
        {
            lock (disk._gate) disk._claims = 0;
        }
    }

    public IReadOnlyList<string> Files()
    {
        lock (_gate) return _files.Keys.Order().ToList();
    }

    public byte[] Read(string name)
    {
        lock (_gate) return _files.TryGetValue(name, out var f) ? f.Bytes.AsSpan(0, f.Length).ToArray() : throw new FileNotFoundException(name);
    }

    public ILogFile Create(string name)
    {
        var contents = new Contents();
        lock (_gate)
        {
            _files[name] = contents;
            return new File(this, contents, _incarnation);
        }
    }

    public void Replace(string from, string to)
    {
        lock (_gate)
        {
            var f = _files[from];
            _files.Remove(from);
            // Renamed whole: what a sync made durable is what survives a crash, and a checkpoint
            // is renamed only after its sync.
            _files[to] = f;
        }
    }

    public void Delete(string name)
    {
        lock (_gate) _files.Remove(name);
    }

    /// <summary>The process dies: every file keeps what was synced, and perhaps some bytes
    /// written after it (tearing the record they end in), as a disk's cache may have let them out.</summary>
    /// <param name="keepUnsynced">whether any unsynced byte may survive; false: exactly the synced prefix</param>
    /// <returns>what each file kept past its synced prefix, for the test's message</returns>
    public string Crash(bool keepUnsynced = true)
    {
        lock (_gate)
        {
            _incarnation++;
            _claims = 0;
            var kept = new List<string>();
            foreach (var (name, f) in _files.OrderBy(p => p.Key, StringComparer.Ordinal))
            {
                int extra = keepUnsynced && f.Length > f.Synced ? (int)(Next() % (ulong)(f.Length - f.Synced + 1)) : 0;
                f.Length = f.Synced + extra;
                if (extra > 0) kept.Add($"{name} +{extra} B unsynced");
            }
            return kept.Count == 0 ? "only synced bytes kept" : string.Join(", ", kept);
        }
    }

    /// <summary>Flips one bit of the byte at <paramref name="offset"/> in <paramref name="name"/>:
    /// a disk that returns what was never written.</summary>
    public void Flip(string name, int offset)
    {
        lock (_gate) _files[name].Bytes[offset] ^= 0x10;
    }

    string? NameOf(Contents contents)
    {
        lock (_gate) return _files.FirstOrDefault(p => ReferenceEquals(p.Value, contents)).Key;
    }

    public int LengthOf(string name)
    {
        lock (_gate) return _files[name].Length;
    }

    ulong Next()
    {
        _rng ^= _rng << 13;
        _rng ^= _rng >> 7;
        _rng ^= _rng << 17;
        return _rng;
    }

    sealed class File(SimulatedDisk disk, Contents contents, int incarnation) : ILogFile
    {
        void ThrowIfDead()
        {
            if (incarnation != disk._incarnation) throw new IOException("the simulated process crashed");
        }

        public long Length
        {
            get
            {
                lock (disk._gate) return contents.Length;
            }
        }

        public void Append(ReadOnlySpan<byte> bytes)
        {
            lock (disk._gate)
            {
                ThrowIfDead();
                if (contents.Length + bytes.Length > contents.Bytes.Length)
                    Array.Resize(ref contents.Bytes, Math.Max(contents.Length + bytes.Length, contents.Bytes.Length * 2));
                bytes.CopyTo(contents.Bytes.AsSpan(contents.Length));
                contents.Length += bytes.Length;
            }
        }

        public void Sync()
        {
            if (disk.SlowSuffix is { } slow && disk.SlowSync > TimeSpan.Zero && disk.NameOf(contents)?.EndsWith(slow, StringComparison.Ordinal) == true)
                Thread.Sleep(disk.SlowSync); // the bytes it syncs are those appended before the sleep ended
            lock (disk._gate)
            {
                ThrowIfDead();
                if (disk.FailSyncs > 0)
                {
                    disk.FailSyncs--;
                    throw new IOException("fdatasync failed: EIO (simulated)");
                }
                contents.Synced = contents.Length;
                disk.Syncs++;
            }
        }

        public void Dispose()
        {
        }
    }
}
