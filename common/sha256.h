// SHA-256 over bytes that come in pieces (a file streamed in chunks), or all at once, as lower-case
// hex: the checksum of a database backup (storage/backup.h), which trainctld computes as it sends
// the copy and the CLI again as it writes it.
//
//   Sha256 hash;
//   hash.Update(chunk1);
//   hash.Update(chunk2);
//   std::string hex = hash.HexDigest();   // 64 hex digits
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

struct evp_md_ctx_st;

namespace trainctl {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Hashes `bytes` after everything before. REQUIRES: HexDigest() was not called yet.
  void Update(absl::string_view bytes);
  // The digest of every byte given, as 64 lower-case hex digits. Call once.
  std::string HexDigest();
  // How many bytes were given.
  int64_t size() const { return size_; }

 private:
  evp_md_ctx_st* const ctx_;
  int64_t size_ = 0;
};

// The SHA-256 of `bytes`, as 64 lower-case hex digits.
std::string Sha256Hex(absl::string_view bytes);

}  // namespace trainctl
