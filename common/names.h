// The rules for names: DNS labels (node names, projects, cohorts, pool names), secret names,
// digests, environment variable names (a pool's env, the agent's --pass-env) and user names (a
// quota's runAsUser, the agent's --run-as and --default-run-as-user).
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace trainctl {

// True for [a-z0-9]([-a-z0-9]*[a-z0-9])?, 1..max_len characters.
bool IsDnsLabel(absl::string_view name, size_t max_len);

// True for [A-Za-z_][A-Za-z0-9_]*, 1..256 characters.
bool IsEnvName(absl::string_view name);

// True for a project secret's name: [A-Za-z0-9][A-Za-z0-9_.-]*, 1..253 characters.
bool IsSecretName(absl::string_view name);

// True for "sha256:" and 64 lowercase hex digits (a working directory's digest).
bool IsSha256Digest(absl::string_view digest);

// True for a POSIX portable user name: [A-Za-z0-9._-]+ not starting with '-', 1..32 bytes.
bool IsUserName(absl::string_view name);

}  // namespace trainctl
