#include "server/secret_box.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/os_error.h"
#include "server/pki.h"

namespace trainctl::server {
namespace {

constexpr char kVersion = 1;

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

unsigned char* Bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }
const unsigned char* Bytes(absl::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

SecretKey::SecretKey(std::string key) : key_(std::move(key)) {}

std::string SecretKey::Seal(absl::string_view binding, absl::string_view value) const {
  std::string out(1 + kNonceBytes + value.size() + kTagBytes, '\0');
  out[0] = kVersion;
  unsigned char* nonce = Bytes(out) + 1;
  unsigned char* body = nonce + kNonceBytes;
  // OpenSSL's generator; a failure here leaves no safe way to seal, and is not expected on a
  // running system.
  if (RAND_bytes(nonce, kNonceBytes) != 1) std::abort();
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  const bool ok =
      ctx != nullptr &&
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, Bytes(key_), nonce) == 1 &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, Bytes(binding),
                        static_cast<int>(binding.size())) == 1 &&
      EVP_EncryptUpdate(ctx.get(), body, &len, Bytes(value), static_cast<int>(value.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx.get(), body + len, &len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, body + value.size()) == 1;
  if (!ok) std::abort();
  return out;
}

absl::StatusOr<std::string> SecretKey::Open(absl::string_view binding,
                                            absl::string_view sealed) const {
  auto bad = [&binding]() {
    return absl::DataLossError(absl::StrCat(
        "the stored value of secret ", binding,
        " does not open with this trainctld's secret key (another key, or changed bytes)"));
  };
  if (sealed.size() < 1 + kNonceBytes + kTagBytes || sealed[0] != kVersion) return bad();
  const unsigned char* nonce = Bytes(sealed) + 1;
  const unsigned char* body = nonce + kNonceBytes;
  const size_t size = sealed.size() - 1 - kNonceBytes - kTagBytes;
  std::string value(size, '\0');
  std::string tag(sealed.substr(sealed.size() - kTagBytes));
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  const bool ok =
      ctx != nullptr &&
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, Bytes(key_), nonce) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, Bytes(binding),
                        static_cast<int>(binding.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), Bytes(value), &len, body, static_cast<int>(size)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), Bytes(value) + len, &len) == 1;
  if (!ok) return bad();
  return value;
}

absl::StatusOr<SecretKey> LoadOrCreateSecretKey(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read the secret key ", path, ": ", ErrnoText(errno)));
    }
    std::string key(SecretKey::kKeyBytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), SecretKey::kKeyBytes) != 1) {
      return absl::InternalError("OpenSSL could not draw random bytes for the secret key");
    }
    if (absl::Status s = WriteFileAtomically(path, key, 0600); !s.ok()) return s;
    return SecretKey(std::move(key));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the secret key %s is readable by others than its owner (mode %04o); it must be 0600: "
        "chmod 600 %s",
        path, st.st_mode & 07777, path));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string key = bytes.str();
  if (!in || key.size() != SecretKey::kKeyBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat("the secret key ", path, " must hold exactly ", SecretKey::kKeyBytes,
                     " bytes, it holds ", key.size(),
                     "; restore it from a backup (the secrets sealed with it cannot be read "
                     "without it)"));
  }
  return SecretKey(std::move(key));
}

}  // namespace trainctl::server
