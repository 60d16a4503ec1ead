// The fixed clock of the CLI's view tests and their fake servers.
#pragma once

#include <cstdint>

namespace trainctl::cli {

inline constexpr int64_t kNowMs = 1767225600000;  // 2026-01-01T00:00:00Z
inline constexpr int64_t kMinuteMs = 60 * 1000;

}  // namespace trainctl::cli
