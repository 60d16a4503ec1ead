#include "server/replica_tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/pki.h"

namespace trainctl::server {
namespace {

constexpr char kReplicaTokenPrefix[] = "tcr_";
constexpr size_t kKeyBytes = 32;

}  // namespace

absl::StatusOr<ReplicaTokens> ReplicaTokens::Adopt(storage::Store& store, const std::string& path) {
  std::string candidate(kKeyBytes, '\0');
  if (std::ifstream(path).good()) {
    absl::StatusOr<ReplicaTokens> file = LoadOrCreate(path);
    if (!file.ok()) return file.status();
    candidate = file->key_;
  } else if (RAND_bytes(reinterpret_cast<unsigned char*>(candidate.data()),
                        static_cast<int>(kKeyBytes)) != 1) {
    return absl::InternalError("OpenSSL could not produce random bytes");
  }
  absl::StatusOr<std::string> key = store.AdoptSecret("replica-token-key", candidate);
  if (!key.ok()) {
    return absl::Status(key.status().code(),
                        absl::StrCat("the replica token key: ", key.status().message()));
  }
  if (key->size() != kKeyBytes) {
    return absl::DataLossError("the database's replica token key has the wrong size");
  }
  return ReplicaTokens(*std::move(key));
}

absl::StatusOr<ReplicaTokens> ReplicaTokens::LoadOrCreate(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::stringstream hex;
    hex << in.rdbuf();
    std::string key = absl::HexStringToBytes(std::string(absl::StripAsciiWhitespace(hex.str())));
    if (key.size() != kKeyBytes) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is not a replica token key (", 2 * kKeyBytes,
                       " hex digits); remove it to make a new one, which invalidates the tokens "
                       "of running replicas"));
    }
    return ReplicaTokens(std::move(key));
  }
  if (errno != ENOENT) {
    return absl::InternalError(absl::StrCat("cannot read ", path, ": ", strerror(errno)));
  }
  std::string key(kKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(kKeyBytes)) != 1) {
    return absl::InternalError("OpenSSL could not produce random bytes");
  }
  absl::Status written = WriteFileAtomically(path, absl::BytesToHexString(key) + "\n", 0600);
  if (!written.ok()) return written;
  return ReplicaTokens(std::move(key));
}

bool ReplicaTokens::IsReplicaToken(absl::string_view bearer) {
  return absl::StartsWith(bearer, kReplicaTokenPrefix);
}

std::string ReplicaTokens::Mac(absl::string_view job_id) const {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  const std::string message = absl::StrCat("trainctl replica token\n", job_id);
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), md, &n);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(md), n));
}

std::string ReplicaTokens::Mint(const std::string& job_id) const {
  return absl::StrCat(kReplicaTokenPrefix, job_id, "_", Mac(job_id));
}

std::optional<std::string> ReplicaTokens::JobOf(absl::string_view bearer) const {
  if (!absl::ConsumePrefix(&bearer, kReplicaTokenPrefix)) return std::nullopt;
  const size_t sep = bearer.rfind('_');
  if (sep == absl::string_view::npos || sep == 0) return std::nullopt;
  const absl::string_view job = bearer.substr(0, sep);
  const absl::string_view mac = bearer.substr(sep + 1);
  const std::string want = Mac(job);
  if (mac.size() != want.size() || CRYPTO_memcmp(mac.data(), want.data(), want.size()) != 0) {
    return std::nullopt;
  }
  return std::string(job);
}

}  // namespace trainctl::server
