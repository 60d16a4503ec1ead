#include "common/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace trainctl {

bool IsDnsLabel(absl::string_view name, size_t max_len) {
  if (name.empty() || name.size() > max_len) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-';
}

bool IsEnvName(absl::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  if (!(absl::ascii_isalpha(name[0]) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(absl::ascii_isalnum(c) || c == '_')) return false;
  }
  return true;
}

bool IsUserName(absl::string_view name) {
  if (name.empty() || name.size() > 32 || name[0] == '-') return false;
  for (char c : name) {
    if (!(absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

bool IsSecretName(absl::string_view name) {
  if (name.empty() || name.size() > 253 || !absl::ascii_isalnum(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

bool IsSha256Digest(absl::string_view digest) {
  if (!absl::ConsumePrefix(&digest, "sha256:") || digest.size() != 64) return false;
  for (char c : digest) {
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

}  // namespace trainctl
