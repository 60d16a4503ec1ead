#include "server/admin_service.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/sha256.h"
#include "common/time_util.h"
#include "server/grpc_unary.h"
#include "storage/backup.h"

namespace trainctl::server {
namespace {

constexpr char kDatabaseFile[] = "trainctl.db";
// The temporary copies' names: this, then mkstemp's six characters.
constexpr char kTempPrefix[] = "trainctl.db.backup-";
// The most data one chunk carries, well below a gRPC message's limit.
constexpr size_t kChunkBytes = size_t{1} << 20;

// Removes a temporary copy and the files SQLite may have made beside it.
void RemoveCopy(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = path + suffix;
    if (unlink(file.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("cannot remove the backup copy {}: {}", file, strerror(errno));
    }
  }
}

// A Backup call refused before it began.
class RefusedBackup final : public grpc::ServerWriteReactor<v1::BackupChunk> {
 public:
  explicit RefusedBackup(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

// One backup's stream. Run() makes the copy on the service's backup thread, then starts the
// first write; the writes that follow start from OnWriteDone on gRPC's threads. Each write is
// started only after the one before it is done, so the members below are used by one thread
// at a time, each handing over to the next through gRPC.
class BackupReactor final : public grpc::ServerWriteReactor<v1::BackupChunk> {
 public:
  BackupReactor(AdminServiceImpl* service, std::string source, std::string copy, std::string who)
      : service_(service),
        source_(std::move(source)),
        copy_(std::move(copy)),
        who_(std::move(who)) {}

  // On the backup thread. Its last act is StartWrite or Finish: OnDone may delete *this as soon
  // as either is called.
  void Run() {
    const auto started = std::chrono::steady_clock::now();
    // Every change committed before this moment is in the copy (its read begins after it).
    snapshot_ms_ = WallNowMs();
    storage::BackupOptions options;
    options.cancelled = [this] { return cancelled_.load(); };
    absl::StatusOr<storage::BackupInfo> info = storage::BackupDatabase(source_, copy_, options);
    if (!info.ok()) {
      spdlog::warn("backup for {} failed: {}", who_, info.status().ToString());
      Finish(ToGrpcStatus(info.status()));
      return;
    }
    fd_ = open(copy_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat("cannot read the backup copy ",
                                                                   copy_, ": ", strerror(errno))));
      return;
    }
    // Read through the open descriptor from here on: the name can go at once.
    RemoveCopy(copy_);
    spdlog::info("backup for {}: copied {} ({} bytes, {} pages in {} steps) in {} ms; sending it",
                 who_, source_, info->bytes, info->pages, info->steps,
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - started)
                     .count());
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the backup stream broke: the client stopped reading"));
      return;
    }
    WriteNext();
  }

  void OnCancel() override { cancelled_.store(true); }

  void OnDone() override {
    if (fd_ >= 0) close(fd_);
    RemoveCopy(copy_);
    service_->BackupEnded();
    delete this;
  }

 private:
  // Sends the next chunk of the copy, or after the last byte the summary, which ends the call.
  void WriteNext() {
    if (cancelled_.load()) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the backup was cancelled"));
      return;
    }
    chunk_.Clear();
    std::string* data = chunk_.mutable_data();
    data->resize(kChunkBytes);
    ssize_t n = 0;
    do {
      n = read(fd_, data->data(), data->size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                          absl::StrCat("cannot read the backup copy: ", strerror(errno))));
      return;
    }
    data->resize(static_cast<size_t>(n));
    if (n > 0) {
      hash_.Update(*data);
      StartWrite(&chunk_);
      return;
    }
    const int64_t size = hash_.size();
    v1::BackupSummary* done = chunk_.mutable_done();
    done->set_size_bytes(size);
    done->set_sha256(hash_.HexDigest());
    *done->mutable_snapshot_time() = MsToTimestamp(snapshot_ms_);
    spdlog::info("backup for {}: sent {} bytes, sha256 {}", who_, size, done->sha256());
    StartWriteAndFinish(&chunk_, grpc::WriteOptions(), grpc::Status::OK);
  }

  AdminServiceImpl* const service_;
  const std::string source_;
  const std::string copy_;
  const std::string who_;
  std::atomic<bool> cancelled_{false};
  int64_t snapshot_ms_ = 0;
  int fd_ = -1;
  Sha256 hash_;
  // The chunk being written: gRPC reads it until OnWriteDone (the last one: until OnDone).
  v1::BackupChunk chunk_;
};

}  // namespace

AdminServiceImpl::AdminServiceImpl(Api* api, std::string data_dir, bool sqlite)
    : api_(api), data_dir_(std::move(data_dir)), sqlite_(sqlite) {
  Diagnose("GetVersion", &AdminServiceImpl::GetVersion);
  Diagnose("Backup", &AdminServiceImpl::Backup);
  // Copies a crash left behind: they hold secrets, and no one will read them.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir_, ec)) {
    if (absl::StartsWith(entry.path().filename().string(), kTempPrefix)) {
      spdlog::info("removing {}, a backup copy an earlier trainctld left", entry.path().string());
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

AdminServiceImpl::~AdminServiceImpl() {
  std::thread last;
  {
    absl::MutexLock lock(&mu_);
    last = std::move(worker_);
  }
  if (last.joinable()) last.join();
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetVersion(grpc::CallbackServerContext* ctx,
                                                       const v1::GetVersionRequest* req,
                                                       v1::VersionInfo* resp) {
  return Unary(api_, &Api::GetVersion, ctx, req, resp);
}

grpc::ServerWriteReactor<v1::BackupChunk>* AdminServiceImpl::Backup(
    grpc::CallbackServerContext* ctx, const v1::BackupRequest* /*req*/) {
  const CallContext call = CallContextOf(*ctx);
  absl::StatusOr<Caller> caller = api_->Authorize(call, Route::kBackup);
  if (!caller.ok()) return new RefusedBackup(caller.status());
  if (!sqlite_) {
    return new RefusedBackup(absl::FailedPreconditionError(
        "trainctld keeps its state in PostgreSQL (--store): back it up with PostgreSQL's tools, "
        "e.g. `pg_dump -Fc -f trainctl.dump DB` (trainctl admin backup copies the SQLite store "
        "only)"));
  }
  const std::string who = caller->name.empty() ? call.peer : caller->name + " at " + call.peer;
  std::thread previous;
  absl::ReleasableMutexLock lock(&mu_);
  if (running_) {
    return new RefusedBackup(absl::FailedPreconditionError(
        absl::StrCat("another backup, for ", running_for_,
                     ", is under way; trainctld takes one at a time: try again once it ended")));
  }
  std::string copy = absl::StrCat(data_dir_, "/", kTempPrefix, "XXXXXX");
  const int fd = mkstemp(copy.data());  // mode 0600
  if (fd < 0) {
    return new RefusedBackup(absl::UnavailableError(absl::StrCat(
        "cannot make a backup copy in --data-dir ", data_dir_, ": ", strerror(errno))));
  }
  close(fd);
  running_ = true;
  running_for_ = who;
  spdlog::info("backup for {}: copying {}/{} into {}", who, data_dir_, kDatabaseFile, copy);
  auto* reactor =
      new BackupReactor(this, absl::StrCat(data_dir_, "/", kDatabaseFile), std::move(copy), who);
  previous = std::move(worker_);
  worker_ = std::thread([reactor] { reactor->Run(); });
  lock.Release();
  // The previous backup's thread ended its work when its stream started.
  if (previous.joinable()) previous.join();
  return reactor;
}

void AdminServiceImpl::BackupEnded() {
  absl::MutexLock lock(&mu_);
  running_ = false;
  running_for_.clear();
}

}  // namespace trainctl::server
