#include "server/secret_env.h"

#include <fnmatch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl::server {

absl::StatusOr<SecretRedactor> SecretRedactor::Parse(const std::string& text) {
  std::vector<std::string> patterns;
  if (text == "none") return SecretRedactor();
  for (absl::string_view p : absl::StrSplit(text, ',')) {
    const bool valid = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '*' || c == '?';
    });
    if (!valid) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--secret-env-pattern: \"", p,
          "\" is not a pattern of letters, digits, '_', '*' and '?' (comma-separated, or none)"));
    }
    patterns.emplace_back(p);
  }
  return SecretRedactor(std::move(patterns));
}

bool SecretRedactor::IsSecret(const v1::WorkerPool& pool, const std::string& name) const {
  if (std::find(pool.secret_env().begin(), pool.secret_env().end(), name) !=
      pool.secret_env().end()) {
    return true;
  }
  for (const std::string& p : patterns_) {
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

void SecretRedactor::Redact(v1::JobSpec* spec) const {
  for (v1::WorkerPool& pool : *spec->mutable_worker_pools()) {
    for (auto& [name, value] : *pool.mutable_env()) {
      if (IsSecret(pool, name)) value = kRedacted;
    }
  }
}

}  // namespace trainctl::server
