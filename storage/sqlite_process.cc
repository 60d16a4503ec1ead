#include "storage/sqlite_process.h"

#include <sqlite3.h>

#include <mutex>

namespace trainctl::storage {

int SingleThreadOpenFlags(int flags) {
  static std::once_flag once;
  std::call_once(once, [] {
    // SQLITE_MISUSE when SQLite already initialized: the statistics then stay on (harmless).
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  });
  return flags | SQLITE_OPEN_NOMUTEX;
}

}  // namespace trainctl::storage
