// The secrets projects keep for their jobs, in trainctld's memory: each value sealed
// (secret_box.h) as the store keeps it, opened only to hand it to a launch. Names and sizes can be
// listed; no read returns a value.
//
//   ProjectSecrets secrets(std::move(key));
//   secrets.Restore(std::move(snapshot.secrets));
//   absl::StatusOr<storage::SecretRow> row = secrets.Set("team-a", "WANDB", "token", now);
//   ... commit *row, then: secrets.Apply(*row);
//   absl::StatusOr<std::string> value = secrets.Open("team-a", "WANDB");   // at launch
//
// Set and Delete validate and return the row to write (or the key to delete) without changing
// what is held; Apply and Forget change it once the store has the row. So a failed commit leaves
// memory as the database is.
//
// Thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/secret_box.h"
#include "storage/store.h"

namespace trainctl::server {

// What a list shows of a secret: never its value.
struct SecretInfo {
  std::string project;
  std::string name;
  int64_t size = 0;
  int64_t update_ms = 0;
};

class ProjectSecrets {
 public:
  // A secret's name: 1..253 of [A-Za-z0-9_.-], starting with a letter or digit.
  static absl::Status ValidateName(const std::string& name);
  // The most a value may hold.
  static constexpr int64_t kMaxValueBytes = 64 * 1024;

  explicit ProjectSecrets(SecretKey key) : key_(std::move(key)) {}

  // The rows loaded at start-up. Values are opened only when used.
  void Restore(std::vector<storage::SecretRow> rows);

  // The row that sets `name` of `project` to `value` at `now`; INVALID_ARGUMENT for a bad name or
  // an empty or too large value (naming the limit).
  absl::StatusOr<storage::SecretRow> Set(const std::string& project, const std::string& name,
                                         const std::string& value, absl::Time now) const;
  // Holds `row` (committed).
  void Apply(storage::SecretRow row);
  // NOT_FOUND when the project has no such secret; else OK, and the caller deletes the row.
  absl::Status CheckExists(const std::string& project, const std::string& name) const;
  // Forgets it (its deletion committed).
  void Forget(const std::string& project, const std::string& name);

  // The project's secrets (all projects' with an empty `project`), by project and name.
  std::vector<SecretInfo> List(const std::string& project) const;
  // The secret's SecretInfo; NOT_FOUND as CheckExists says.
  absl::StatusOr<SecretInfo> Find(const std::string& project, const std::string& name) const;
  // The value, for a launch; NOT_FOUND naming the project and secret when there is none,
  // DATA_LOSS when it does not open with this key.
  absl::StatusOr<std::string> Open(const std::string& project, const std::string& name) const;

 private:
  static std::string Binding(const std::string& project, const std::string& name) {
    return project + "/" + name;
  }

  const SecretKey key_;
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, storage::SecretRow> rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
