// Every record (its value: the id of the root that wrote it, 0 before any) and every commit
// lock, with Silo's steps on them, one request at a time.
machine Db {
  var store: map[int, int];
  var locks: map[int, int];   // key -> the root holding its commit lock; absent: free

  start state Serve {
    on eRead do (r: (from: machine, key: int)) {
      send r.from, eValue, Value(r.key);
    }
    // LockStep: a held lock fails at once (D4), and nothing is locked then.
    on eLock do (r: (from: machine, root: int, ks: set[int])) {
      var k: int; var free: bool;
      free = true;
      foreach (k in r.ks) { if (k in locks && locks[k] != r.root) { free = false; } }
      if (free) { foreach (k in r.ks) { locks[k] = r.root; } }
      send r.from, eVote, free;
    }
    // ValidateStep: each value read is still current and not locked by another root.
    on eValidate do (r: (from: machine, root: int, reads: map[int, int])) {
      var k: int; var ok: bool;
      ok = true;
      foreach (k in keys(r.reads)) {
        if (Value(k) != r.reads[k] || (k in locks && locks[k] != r.root)) { ok = false; }
      }
      send r.from, eVote, ok;
    }
    // WriteStep: install and unlock.
    on eInstall do (r: (from: machine, root: int, ks: set[int])) {
      var k: int;
      foreach (k in r.ks) {
        store[k] = r.root;
        locks -= (k);
        announce eInstalledKey, (root = r.root, key = k);
      }
      send r.from, eDbDone;
    }
    // AbortAll
    on eUnlockAll do (r: (from: machine, root: int)) {
      var k: int; var held: set[int];
      foreach (k in keys(locks)) { if (locks[k] == r.root) { held += (k); } }
      foreach (k in held) { locks -= (k); }
      send r.from, eDbDone;
    }
  }

  fun Value(k: int): int {
    if (k in store) { return store[k]; }
    return 0;
  }
}
