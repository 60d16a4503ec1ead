// Process-wide spdlog set-up for trainctld and trainctl-agent.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace trainctl {

// OK for a level SetupLogging takes; else INVALID_ARGUMENT "--log-level must be one of ...".
absl::Status CheckLogLevel(const std::string& level);

// Sets the default logger to stderr with "<time> <level> <name>: message", at `level`
// ("trace".."critical"). Returns INVALID_ARGUMENT for an unknown level.
absl::Status SetupLogging(const std::string& name, const std::string& level);

}  // namespace trainctl
