// Job-scoped tokens for replicas, so that a replica can report its progress (ReportProgress)
// when authentication is on, and do nothing else.
//
// A replica token reads "tcr_<job id>_<HMAC-SHA256 of the job id, hex>", keyed by 32 random bytes
// in DATA_DIR/replica-token.key (mode 0600, made at the first start). Nothing is stored per
// token: trainctld recomputes the HMAC to check one, so tokens survive a restart and cost nothing
// per job. The agent gets the token in each launch and passes it as TRAINCTL_TOKEN, with
// TRAINCTL_SERVER and TRAINCTL_CA, so `trainctl progress` works inside a replica. The token is
// valid for its job only and for ReportProgress only (see Authorizer); a job that ended refuses
// progress anyway. Deleting the key file invalidates every replica token at the next start.
// With a PostgreSQL store the key is the cluster's, in the database (Adopt), so that every
// trainctld sharing it checks the tokens any of them minted: the first start adopts the key file
// when there is one (tokens of running replicas stay good), else a new key.
//
// Thread-safe (immutable after construction).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/store.h"

namespace trainctl::server {

class ReplicaTokens {
 public:
  // Reads the key at `path`, or makes one there when the file does not exist.
  static absl::StatusOr<ReplicaTokens> LoadOrCreate(const std::string& path);
  // The cluster's key in `store` (Store::AdoptSecret "replica-token-key"); when it has none yet,
  // the key file at `path` becomes it, or a new key when there is no file.
  static absl::StatusOr<ReplicaTokens> Adopt(storage::Store& store, const std::string& path);
  // For tests: a key given directly.
  explicit ReplicaTokens(std::string key) : key_(std::move(key)) {}

  // Whether `bearer` has a replica token's shape (it may still be forged).
  static bool IsReplicaToken(absl::string_view bearer);

  std::string Mint(const std::string& job_id) const;
  // The job a genuine token is for; nullopt for a forged or malformed one.
  std::optional<std::string> JobOf(absl::string_view bearer) const;

 private:
  std::string Mac(absl::string_view job_id) const;

  std::string key_;
};

}  // namespace trainctl::server
