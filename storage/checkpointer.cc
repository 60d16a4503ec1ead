#include "storage/checkpointer.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace trainctl::storage {

absl::StatusOr<std::unique_ptr<Checkpointer>> Checkpointer::Start(const std::string& path,
                                                                  const std::string& vfs,
                                                                  absl::Duration interval) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE,
                                 vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(
        absl::StrCat("cannot open database ", path, " to checkpoint it: ", msg));
  }
  // The database file is synced after each checkpoint, as the writer's connection would.
  sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  std::unique_ptr<Checkpointer> c(new Checkpointer(db, path, interval));
  c->thread_ = std::thread([p = c.get()] { p->Run(); });
  return c;
}

Checkpointer::Checkpointer(sqlite3* db, std::string path, absl::Duration interval)
    : db_(db), path_(std::move(path)), interval_(interval) {}

Checkpointer::~Checkpointer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  sqlite3_close(db_);
}

absl::Status Checkpointer::CheckpointNow() {
  int log_pages = 0;
  int copied = 0;
  const int rc =
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    return absl::UnavailableError(
        absl::StrCat("cannot checkpoint ", path_, ": ", sqlite3_errmsg(db_)));
  }
  if (copied > 0) {
    absl::MutexLock lock(&mu_);
    ++checkpoints_;
  }
  return absl::OkStatus();
}

int64_t Checkpointer::checkpoints() const {
  absl::MutexLock lock(&mu_);
  return checkpoints_;
}

void Checkpointer::Run() {
  // While writes come, every interval; when a checkpoint found nothing to copy, 20 times less
  // often, so an idle daemon's checkpointer all but sleeps.
  absl::Duration wait = interval_;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), wait)) return;
    }
    const int64_t before = checkpoints();
    absl::Status s = CheckpointNow();
    wait = checkpoints() > before ? interval_ : 20 * interval_;
    if (!s.ok() && std::string(s.message()) != last_error_) {
      spdlog::warn("{}; the write-ahead log keeps the changes and grows until a checkpoint works",
                   std::string(s.message()));
    } else if (s.ok() && !last_error_.empty()) {
      spdlog::info("checkpoints of {} work again", path_);
    }
    last_error_ = s.ok() ? "" : std::string(s.message());
  }
}

}  // namespace trainctl::storage
