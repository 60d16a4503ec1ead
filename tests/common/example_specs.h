// A small program's flag and command specs, for the tests of common/flags.h and of the CLI's
// help layout (tests/cli/usage_test.cc): `-f` is a value for `submit` and a switch for `logs`.
#pragma once

#include <vector>

#include "common/flags.h"

namespace trainctl::testing {

inline const std::vector<FlagSpec> kGlobals = {
    {"server", 0, FlagSpec::Kind::kValue, "HOST:PORT", "", "Server address"},
    {"help", 'h', FlagSpec::Kind::kBool, "", "", "Show help"},
};

inline const std::vector<CommandSpec> kCommands = {
    {"submit",
     "",
     "Submit",
     "",
     {{"filename", 'f', FlagSpec::Kind::kValue, "FILE", "", "Spec file"}},
     0,
     0},
    {"list",
     "",
     "List",
     "",
     {{"state", 0, FlagSpec::Kind::kList, "STATE", "", "State"},
      {"limit", 0, FlagSpec::Kind::kValue, "N", "100", "Limit"},
      {"output", 'o', FlagSpec::Kind::kValue, "FORMAT", "table", "Format"}},
     0,
     0},
    {"logs",
     "ID",
     "Logs",
     "",
     {{"follow", 'f', FlagSpec::Kind::kBool, "", "", "Follow"},
      {"restart", 0, FlagSpec::Kind::kValue, "N", "-1", "Restart"}},
     1,
     1},
};

}  // namespace trainctl::testing
