// Sizes for people, in decimal units as registries and `docker pull` count them: 999 -> "999 B",
// 12345678 -> "12.3 MB". Used for image sizes by the scheduler's pull messages and the CLI.
#pragma once

#include <cstdint>
#include <string>

namespace trainctl {

// `bytes` with one decimal in kB, MB, GB, TB or PB (under 1000: "N B").
std::string FormatDecimalBytes(int64_t bytes);

}  // namespace trainctl
