#include "server/tokens.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/time_util.h"

namespace trainctl::server {
namespace {

constexpr char kTokenPrefix[] = "tct_";
constexpr size_t kIdBytes = 8;
constexpr size_t kSecretBytes = 32;

// The id of "tct_<id>_<secret>", or "" when `bearer` does not have that shape.
std::string IdOf(const std::string& bearer) {
  if (!absl::StartsWith(bearer, kTokenPrefix)) return "";
  const size_t sep = bearer.find('_', sizeof(kTokenPrefix) - 1);
  if (sep != sizeof(kTokenPrefix) - 1 + 2 * kIdBytes) return "";
  if (bearer.size() != sep + 1 + 2 * kSecretBytes) return "";
  return bearer.substr(sizeof(kTokenPrefix) - 1, 2 * kIdBytes);
}

}  // namespace

std::string HashToken(const std::string& bearer) { return Sha256Hex(bearer); }

absl::StatusOr<std::string> RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    return absl::InternalError("OpenSSL could not produce random bytes");
  }
  return absl::BytesToHexString(raw);
}

absl::StatusOr<MintedToken> MintToken(const v1::ApiToken& fields) {
  absl::StatusOr<std::string> id = RandomHex(kIdBytes);
  if (!id.ok()) return id.status();
  absl::StatusOr<std::string> secret = RandomHex(kSecretBytes);
  if (!secret.ok()) return secret.status();
  MintedToken t;
  t.bearer = absl::StrCat(kTokenPrefix, *id, "_", *secret);
  t.row.token = fields;
  t.row.token.set_id(*id);
  t.row.hash = HashToken(t.bearer);
  return t;
}

void TokenRegistry::Load(const std::vector<storage::TokenRow>& rows) {
  absl::MutexLock lock(&mu_);
  by_id_.clear();
  order_.clear();
  for (const storage::TokenRow& r : rows) {
    if (by_id_.emplace(r.token.id(), r).second) order_.push_back(r.token.id());
  }
}

void TokenRegistry::Put(const storage::TokenRow& row) {
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = by_id_.insert_or_assign(row.token.id(), row);
  if (fresh) order_.push_back(row.token.id());
}

absl::StatusOr<v1::ApiToken> TokenRegistry::Verify(const std::string& bearer,
                                                   int64_t now_ms) const {
  const std::string id = IdOf(bearer);
  if (id.empty()) {
    return absl::UnauthenticatedError(
        "the token is malformed: trainctl tokens read tct_<id>_<secret>");
  }
  const std::string hash = HashToken(bearer);
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.hash.size() != hash.size() ||
      CRYPTO_memcmp(it->second.hash.data(), hash.data(), hash.size()) != 0) {
    return absl::UnauthenticatedError(
        absl::StrCat("token ", id, " is not known to this trainctld"));
  }
  const v1::ApiToken& token = it->second.token;
  if (token.revoked()) {
    return absl::UnauthenticatedError(absl::StrCat("token ", id, " was revoked"));
  }
  if (token.has_expire_time() && TimestampToMs(token.expire_time()) <= now_ms) {
    return absl::UnauthenticatedError(absl::StrCat(
        "token ", id, " expired at ", FormatRfc3339(TimestampToMs(token.expire_time()))));
  }
  return token;
}

std::optional<storage::TokenRow> TokenRegistry::Find(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::vector<v1::ApiToken> TokenRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ApiToken> out;
  for (const std::string& id : order_) out.push_back(by_id_.at(id).token);
  return out;
}

size_t TokenRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return by_id_.size();
}

}  // namespace trainctl::server
