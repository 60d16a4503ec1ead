// API tokens: minting, hashing and the registry every call is authenticated against.
//
// A bearer token reads "tct_<id>_<secret>": 16 hex digits of id (public: list and revoke name
// it) and 64 of secret (256 random bits from OpenSSL). Only the SHA-256 of the whole token is
// stored; verification recomputes it and compares in constant time.
//
//   absl::StatusOr<MintedToken> t = MintToken(fields);   // t->row to store, t->bearer to show once
//   registry.Put(t->row);                                 // after the row has committed
//   absl::StatusOr<v1::ApiToken> who = registry.Verify(bearer, now_ms);
//
// Thread-safety: TokenRegistry is thread-safe; the functions keep no state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/store.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

struct MintedToken {
  // The row to store: `fields` with its new id, and the hash.
  storage::TokenRow row;
  // The whole bearer token; never stored.
  std::string bearer;
};

// `bytes` random bytes from OpenSSL, as hex (token ids and secrets, trainctld's instance id).
absl::StatusOr<std::string> RandomHex(size_t bytes);

// A new token with `fields` (owner, role, projects, expiry, ...); its id is set here.
absl::StatusOr<MintedToken> MintToken(const v1::ApiToken& fields);

// SHA-256 of `bearer`, hex.
std::string HashToken(const std::string& bearer);

class TokenRegistry {
 public:
  // Replaces every token (at start, from the store).
  void Load(const std::vector<storage::TokenRow>& rows) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds or replaces one (after its row committed).
  void Put(const storage::TokenRow& row) ABSL_LOCKS_EXCLUDED(mu_);
  // The token `bearer` names, when it is known, not revoked and not expired at `now_ms`;
  // UNAUTHENTICATED saying which otherwise (never echoing the secret).
  absl::StatusOr<v1::ApiToken> Verify(const std::string& bearer, int64_t now_ms) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<storage::TokenRow> Find(const std::string& id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every token, oldest first.
  std::vector<v1::ApiToken> List() const ABSL_LOCKS_EXCLUDED(mu_);
  // How many tokens there are, revoked ones included.
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, storage::TokenRow> by_id_ ABSL_GUARDED_BY(mu_);
  // Ids in the order they were added.
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
