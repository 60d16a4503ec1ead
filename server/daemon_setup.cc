#include "server/daemon_setup.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "server/auth_service.h"
#include "server/data_dir.h"
#include "server/pki.h"
#include "storage/file_log_store.h"
#include "storage/pg_job_archive.h"
#include "storage/pg_lease.h"
#include "storage/pg_log_store.h"
#include "storage/pg_workdir_store.h"
#include "storage/sqlite_job_archive.h"
#include "storage/sqlite_workdir_store.h"

namespace trainctl::server {

absl::StatusOr<int> LockDataDir(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kDataFileMode);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat("another trainctld is already using ", dir));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || write(fd, pid.data(), pid.size()) < 0) {
    spdlog::warn("cannot write pid to {}", path);
  }
  return fd;
}

absl::StatusOr<std::string> NewInstanceId(const std::string& data_dir) {
  const std::string path = data_dir + "/trainctld.id";
  std::string id;
  std::getline(std::ifstream(path), id);
  if (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    absl::StatusOr<std::string> made = RandomHex(8);
    if (!made.ok()) return made.status();
    id = *made;
    if (absl::Status s = WriteFileAtomically(path, id + "\n", kDataFileMode); !s.ok()) {
      spdlog::warn("{}; this trainctld's lease is not known as its data dir's after a crash",
                   s.ToString());
    }
  }
  absl::StatusOr<std::string> process = RandomHex(8);
  if (!process.ok()) return process.status();
  return absl::StrCat(id, ".", *process);
}

namespace {

absl::StatusOr<OpenedStore> OpenStore(const DaemonFlags& flags, const std::string& instance) {
  OpenedStore opened;
  if (!flags.store.empty()) {
    opened.name = "the PostgreSQL store";
    absl::StatusOr<std::unique_ptr<storage::PgStore>> pg =
        storage::PgStore::Open(flags.store, storage::LeaseApplicationName(instance));
    if (!pg.ok()) return pg.status();
    opened.pg = pg->get();
    opened.store = *std::move(pg);
    absl::StatusOr<std::unique_ptr<storage::PgJobArchive>> archive =
        storage::PgJobArchive::Open(flags.store);
    if (!archive.ok()) return archive.status();
    opened.archive = *std::move(archive);
    absl::StatusOr<std::unique_ptr<storage::PgWorkdirStore>> workdirs =
        storage::PgWorkdirStore::Open(flags.store, storage::LeaseApplicationName(instance));
    if (!workdirs.ok()) return workdirs.status();
    opened.workdirs = *std::move(workdirs);
    absl::StatusOr<std::unique_ptr<storage::PgLogStore>> logs =
        storage::PgLogStore::Open(flags.store, storage::LeaseApplicationName(instance));
    if (!logs.ok()) return logs.status();
    opened.logs = *std::move(logs);
    return opened;
  }
  opened.name = flags.data_dir + "/trainctl.db";
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> sqlite =
      storage::SqliteStore::Open(opened.name);
  if (!sqlite.ok()) return sqlite.status();
  opened.sqlite = sqlite->get();
  opened.store = *std::move(sqlite);
  absl::StatusOr<std::unique_ptr<storage::SqliteJobArchive>> archive =
      storage::SqliteJobArchive::Open(opened.name);
  if (!archive.ok()) return archive.status();
  opened.archive = *std::move(archive);
  absl::StatusOr<std::unique_ptr<storage::SqliteWorkdirStore>> workdirs =
      storage::SqliteWorkdirStore::Open(opened.name);
  if (!workdirs.ok()) return workdirs.status();
  opened.workdirs = *std::move(workdirs);
  absl::StatusOr<std::unique_ptr<storage::FileLogStore>> logs =
      storage::FileLogStore::Open(flags.log_dir.empty() ? flags.data_dir + "/logs" : flags.log_dir);
  if (!logs.ok()) return logs.status();
  opened.logs = *std::move(logs);
  return opened;
}

}  // namespace

std::optional<absl::StatusOr<OpenedStore>> OpenStoreWhenReachable(const DaemonFlags& flags,
                                                                  const std::string& instance,
                                                                  const sigset_t& stop) {
  std::string last;
  for (;;) {
    absl::StatusOr<OpenedStore> opened = OpenStore(flags, instance);
    if (opened.ok() || opened.status().code() != absl::StatusCode::kUnavailable) return opened;
    if (std::string(opened.status().message()) != last) {
      last = std::string(opened.status().message());
      spdlog::warn("{}; waiting for the database", opened.status().ToString());
    }
    const timespec second = {1, 0};
    const int sig = sigtimedwait(&stop, nullptr, &second);
    if (sig > 0 && sig != SIGHUP) return std::nullopt;
  }
}

absl::Status WriteFirstAdminToken(const std::string& dir, ReconcileLoop* loop,
                                  TokenRegistry* tokens) {
  v1::ApiToken fields;
  fields.set_owner("admin");
  fields.set_role(v1::ROLE_ADMIN);
  *fields.mutable_create_time() = MsToTimestamp(WallNowMs());
  fields.set_created_by("trainctld");
  absl::StatusOr<MintedToken> minted = MintToken(fields);
  if (!minted.ok()) return minted.status();
  const std::string path = dir + "/admin.token";
  if (absl::Status s = WriteFileAtomically(path, minted->bearer + "\n", 0600); !s.ok()) {
    return s;
  }
  // Stored only after the file exists: a crash in between leaves no token nobody holds.
  std::promise<absl::Status> stored;
  StoreToken(loop, tokens, minted->row, "TokenCreated",
             absl::StrCat("first admin token ", minted->row.token.id(), ", written to ", path),
             "trainctld", [&stored](const absl::Status& s) { stored.set_value(s); });
  if (absl::Status s = stored.get_future().get(); !s.ok()) {
    unlink(path.c_str());
    return absl::Status(s.code(),
                        absl::StrCat("cannot store the first admin token: ", s.message()));
  }
  spdlog::warn("authentication is on and no token existed: wrote the first admin token to {}",
               path);
  return absl::OkStatus();
}

}  // namespace trainctl::server
