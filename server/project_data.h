// What trainctld keeps for projects beside their jobs: the secrets' key, checked against the
// database, and the sweeper that deletes working directories no job uses any more.
//
//   absl::StatusOr<std::unique_ptr<ProjectSecrets>> secrets =
//       OpenProjectSecrets(store, data_dir + "/secrets.key", /*create=*/true, rows);
//   WorkdirSweeper sweeper(workdirs, absl::Minutes(1), absl::Hours(1));   // runs until destroyed
//
// The key: with SQLite, DATA_DIR/secrets.key, made at the first start; with PostgreSQL, the
// --secret-key-file every trainctld of the database reads (never made: each would make its own).
// The database keeps a value sealed with the key it first saw (Store::AdoptSecret
// "project-secret-key-check"): a start with another key is refused, naming the file, rather than
// failing every launch that needs a secret.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/project_secrets.h"
#include "storage/store.h"
#include "storage/workdir_store.h"

namespace trainctl::server {

// The secrets of `rows` under the key in `key_file` (created when `create` and it is missing).
// FAILED_PRECONDITION when the key is not the one the database's secrets were sealed with.
absl::StatusOr<std::unique_ptr<ProjectSecrets>> OpenProjectSecrets(
    storage::Store& store, const std::string& key_file, bool create,
    std::vector<storage::SecretRow> rows);

// Calls WorkdirStore::Sweep every `interval` (and once at the start) on a thread of its own.
class WorkdirSweeper {
 public:
  WorkdirSweeper(storage::WorkdirStore* workdirs, absl::Duration interval, absl::Duration grace);
  ~WorkdirSweeper();
  WorkdirSweeper(const WorkdirSweeper&) = delete;
  WorkdirSweeper& operator=(const WorkdirSweeper&) = delete;

 private:
  void Run();

  storage::WorkdirStore* const workdirs_;
  const absl::Duration interval_;
  const absl::Duration grace_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace trainctl::server
