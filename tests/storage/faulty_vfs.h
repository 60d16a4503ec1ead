// FaultyVfs: an SQLite VFS over the default one whose writes can be made to fail as a full disk
// (SQLITE_FULL) or a failing device (SQLITE_IOERR_WRITE) makes them fail, for the store's and
// the reconcile loop's tests of what a failed commit does. Open a database through it with
// SqliteStore::Open(path, FaultyVfs::Name()).
//
// Thread-safe: the fault is an atomic that any thread may set.
#pragma once

namespace trainctl::testing {

class FaultyVfs {
 public:
  enum class Fault { kNone, kFull, kIoError };
  // Registers the VFS (once; later calls do nothing) and returns its name.
  static const char* Name();
  // Every write through the VFS from now on fails with `fault` (kNone: none fails).
  static void Set(Fault fault);
};

// Sets a fault for the scope and clears it at the end.
class ScopedFault {
 public:
  explicit ScopedFault(FaultyVfs::Fault fault) { FaultyVfs::Set(fault); }
  ~ScopedFault() { FaultyVfs::Set(FaultyVfs::Fault::kNone); }
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;
};

}  // namespace trainctl::testing
