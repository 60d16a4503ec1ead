// trainctl's help texts, laid out from the flag and command specs of common/flags.h:
//
//   trainctl --help            FormatUsage: the commands and the global flags
//   trainctl COMMAND --help    FormatCommandUsage: one command's usage line, details and flags
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/flags.h"

namespace trainctl::cli {

// Help text for the whole program: `header`, the usage line, commands, global flags and exit
// statuses.
std::string FormatUsage(absl::string_view header, const std::vector<FlagSpec>& globals,
                        const std::vector<CommandSpec>& commands);

// Help text for one command: usage line, details, its flags, then the global flags.
std::string FormatCommandUsage(const CommandSpec& command, const std::vector<FlagSpec>& globals);

}  // namespace trainctl::cli
