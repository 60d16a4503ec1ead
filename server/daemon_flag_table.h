// trainctld's flags as its --help lists them, group by group: names, arguments and the help text.
// server/daemon_flags.cc parses them into DaemonFlags, which holds the defaults.
#pragma once

#include <vector>

#include "common/flags.h"

namespace trainctl::server {

// Every flag trainctld takes, in --help's groups. An absent flag reads as "".
std::vector<FlagGroup> DaemonFlagGroups();

}  // namespace trainctl::server
