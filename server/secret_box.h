// Project secrets at rest: sealed with AES-256-GCM (OpenSSL's EVP interface; nothing here is
// hand-rolled crypto) under a 32-byte key kept in a file beside the database, mode 0600. Each
// value is bound to its project and name (the GCM associated data), so a sealed value copied to
// another row does not open there.
//
//   absl::StatusOr<SecretKey> key = LoadOrCreateSecretKey(data_dir + "/secrets.key");
//   std::string sealed = key->Seal("team-a/WANDB", "token");       // what the store keeps
//   absl::StatusOr<std::string> value = key->Open("team-a/WANDB", sealed);
//
// The sealed form: one version byte (1), a 12-byte random nonce, the ciphertext (as long as the
// value), the 16-byte tag. Thread-safe: a key is immutable once loaded.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl::server {

class SecretKey {
 public:
  static constexpr size_t kKeyBytes = 32;
  static constexpr size_t kNonceBytes = 12;
  static constexpr size_t kTagBytes = 16;

  // REQUIRES: key.size() == kKeyBytes.
  explicit SecretKey(std::string key);

  // Seals `value` for the row named `binding` (e.g. "team-a/WANDB"), with a fresh random nonce.
  std::string Seal(absl::string_view binding, absl::string_view value) const;
  // The value sealed for `binding`; DATA_LOSS when `sealed` was not sealed with this key for this
  // binding, or was changed (the message says which row, never a byte of the value).
  absl::StatusOr<std::string> Open(absl::string_view binding, absl::string_view sealed) const;

 private:
  std::string key_;
};

// The key in `path`: created with kKeyBytes random bytes, mode 0600, when the file does not exist
// (through a temporary file renamed into place); else read and checked. FAILED_PRECONDITION when
// the file has the wrong size, or is readable by others than its owner (it says which and how to
// fix it).
absl::StatusOr<SecretKey> LoadOrCreateSecretKey(const std::string& path);

}  // namespace trainctl::server
