#include "storage/sqlite_process.h"

#include <sqlite3.h>

#include <mutex>

namespace trainctl::storage {

void ConfigureSqliteProcess() {
  static std::once_flag once;
  std::call_once(once, [] {
    // SQLITE_MISUSE when SQLite already initialized: the statistics then stay on.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  });
}

int SingleThreadOpenFlags(int flags) {
  ConfigureSqliteProcess();
  return flags | SQLITE_OPEN_NOMUTEX;
}

}  // namespace trainctl::storage
