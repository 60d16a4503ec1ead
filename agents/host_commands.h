// Running the host's own tools (nvidia-smi) from the agent: is a program on PATH, and what does
// a command print.
//
//   if (OnPath("nvidia-smi")) {
//     absl::StatusOr<std::string> out = CommandOutput("nvidia-smi -L");
//   }
//
// Thread-safe: no state.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace trainctl::agent {

// True when an executable named `name` is in one of $PATH's directories.
bool OnPath(const std::string& name);

// The standard output of `command` run by /bin/sh (stderr discarded), at most 1 MiB. INTERNAL
// when it cannot be run or exits non-zero.
absl::StatusOr<std::string> CommandOutput(const std::string& command);

}  // namespace trainctl::agent
