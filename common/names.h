// The rules for names: DNS labels (node names, projects, cohorts, pool names) and environment
// variable names (a pool's env, the agent's --pass-env).
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace trainctl {

// True for [a-z0-9]([-a-z0-9]*[a-z0-9])?, 1..max_len characters.
bool IsDnsLabel(absl::string_view name, size_t max_len);

// True for [A-Za-z_][A-Za-z0-9_]*, 1..256 characters.
bool IsEnvName(absl::string_view name);

}  // namespace trainctl
