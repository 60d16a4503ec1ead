#include "common/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace trainctl {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(absl::string_view bytes) {
  EVP_DigestUpdate(ctx_, bytes.data(), bytes.size());
  size_ += static_cast<int64_t>(bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(md), n));
}

std::string Sha256Hex(absl::string_view bytes) {
  Sha256 hash;
  hash.Update(bytes);
  return hash.HexDigest();
}

}  // namespace trainctl
