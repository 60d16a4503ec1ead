// The one rule for names that must be DNS labels: node names, projects, cohorts, pool names.
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace trainctl {

// True for [a-z0-9]([-a-z0-9]*[a-z0-9])?, 1..max_len characters.
bool IsDnsLabel(absl::string_view name, size_t max_len);

}  // namespace trainctl
