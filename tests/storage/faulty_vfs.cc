#include "tests/storage/faulty_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

namespace trainctl::testing {
namespace {

std::atomic<FaultyVfs::Fault> g_fault{FaultyVfs::Fault::kNone};

// Our file: the header SQLite sees, followed in the same allocation by the real file.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  switch (g_fault.load()) {
    case FaultyVfs::Fault::kFull:
      return SQLITE_FULL;
    case FaultyVfs::Fault::kIoError:
      return SQLITE_IOERR_WRITE;
    case FaultyVfs::Fault::kNone:
      break;
  }
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) { return Real(f)->pMethods->xSync(Real(f), flags); }
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return Real(f)->pMethods->xFetch(Real(f), off, n, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

// Our methods for each version of the real files' methods, made once per real table.
const sqlite3_io_methods* MethodsFor(const sqlite3_io_methods* real) {
  static std::mutex mu;
  static std::map<const sqlite3_io_methods*, sqlite3_io_methods> made;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = made.try_emplace(real);
  if (fresh) {
    sqlite3_io_methods& m = it->second;
    m = sqlite3_io_methods{};
    m.iVersion = real->iVersion;
    m.xClose = Close;
    m.xRead = Read;
    m.xWrite = Write;
    m.xTruncate = Truncate;
    m.xSync = Sync;
    m.xFileSize = FileSize;
    m.xLock = Lock;
    m.xUnlock = Unlock;
    m.xCheckReservedLock = CheckReservedLock;
    m.xFileControl = FileControl;
    m.xSectorSize = SectorSize;
    m.xDeviceCharacteristics = DeviceCharacteristics;
    if (real->iVersion >= 2) {
      m.xShmMap = ShmMap;
      m.xShmLock = ShmLock;
      m.xShmBarrier = ShmBarrier;
      m.xShmUnmap = ShmUnmap;
    }
    if (real->iVersion >= 3) {
      m.xFetch = Fetch;
      m.xUnfetch = Unfetch;
    }
  }
  return &it->second;
}

sqlite3_vfs* g_default = nullptr;

int Open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  File* file = reinterpret_cast<File*>(f);
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  file->base.pMethods = nullptr;
  int rc = g_default->xOpen(g_default, name, file->real, flags, out_flags);
  if (file->real->pMethods != nullptr) file->base.pMethods = MethodsFor(file->real->pMethods);
  return rc;
}

sqlite3_vfs g_vfs;

}  // namespace

const char* FaultyVfs::Name() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_default = sqlite3_vfs_find(nullptr);
    g_vfs = *g_default;
    g_vfs.zName = "trainctl-faulty";
    g_vfs.szOsFile = static_cast<int>(sizeof(File)) + g_default->szOsFile;
    g_vfs.xOpen = Open;
    g_vfs.pNext = nullptr;
    sqlite3_vfs_register(&g_vfs, /*makeDflt=*/0);
  });
  return g_vfs.zName;
}

void FaultyVfs::Set(Fault fault) { g_fault = fault; }

}  // namespace trainctl::testing
