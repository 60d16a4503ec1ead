// Process-wide spdlog set-up for trainctld and trainctl-agent.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace trainctl {

// Sets the default logger to stderr with "<time> <level> <name>: message", at `level`
// ("trace".."critical"). Returns INVALID_ARGUMENT for an unknown level.
absl::Status SetupLogging(const std::string& name, const std::string& level);

}  // namespace trainctl
