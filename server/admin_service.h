// AdminService (proto/trainctl/v1/admin.proto): trainctld's version, and online backups of its
// database streamed to the caller (`trainctl admin backup FILE`).
//
// A backup copies DATA_DIR/trainctl.db with storage::BackupDatabase on a thread of its own into
// a temporary file beside it (DATA_DIR/trainctl.db.backup-XXXXXX, mode 0600: the copy holds
// secrets), checks the copy, streams it in chunks of 1 MiB and a last chunk with its size and
// SHA-256, and removes the file however the call ends. The reconcile loop never waits for it:
// the copy reads on a connection of its own, and WAL lets the loop commit meanwhile. One backup
// runs at a time; a second is refused with FAILED_PRECONDITION. Only an admin may take one.
// Temporary files a crash left behind are removed when the service is made, at trainctld's start.
//
// Thread-safe: gRPC calls the methods from its threads.
#pragma once

#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/api.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/admin.grpc.pb.h"

namespace trainctl::server {

class AdminServiceImpl final : public DiagnosingService<v1::AdminService> {
 public:
  // `api` (not owned) must outlive the service; `data_dir` holds trainctl.db. Without `sqlite`
  // (the state is in PostgreSQL, --store) Backup is FAILED_PRECONDITION pointing at pg_dump.
  AdminServiceImpl(Api* api, std::string data_dir, bool sqlite = true);
  // Waits for the last backup's thread. REQUIRES: the server is shut down (no backup streams).
  ~AdminServiceImpl() override;

  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* ctx,
                                       const v1::GetVersionRequest* req,
                                       v1::VersionInfo* resp) override;
  grpc::ServerWriteReactor<v1::BackupChunk>* Backup(grpc::CallbackServerContext* ctx,
                                                    const v1::BackupRequest* req) override;

  // Called by a backup's stream when it is done: the next backup may start.
  void BackupEnded() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Api* const api_;
  const std::string data_dir_;
  const bool sqlite_;

  absl::Mutex mu_;
  // Who takes the backup under way ("" when none), for a second caller's refusal.
  std::string running_for_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  // Copies the database for the latest backup; done once its stream started.
  std::thread worker_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
