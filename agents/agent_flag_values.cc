// ValidateNodeName, ParseLabels, ResolvePrograms and the --gang-check-* flags (agent_flags.h):
// values of trainctl-agent flags.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/agent_flags.h"
#include "common/flag_values.h"
#include "common/names.h"

namespace trainctl::agent {

absl::Status ValidateNodeName(absl::string_view name) {
  if (IsDnsLabel(name, 63)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--node: \"", name,
      "\" is not a valid node name: use at most 63 lowercase letters, digits and '-', starting "
      "and ending with a letter or digit"));
}

absl::StatusOr<std::map<std::string, std::string>> ParseLabels(absl::string_view text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) return labels;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.first.empty() || item.find('=') == absl::string_view::npos) {
      return BadFlagValue("--labels", "key=value pairs separated by commas", item);
    }
    if (!labels.emplace(kv.first, kv.second).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--labels: label \"", kv.first, "\" is given twice"));
    }
  }
  return labels;
}

absl::Status ResolvePrograms(AgentFlags* flags) {
  for (auto [flag, path] : {std::pair<const char*, std::string*>{
                                "--health-check-program", &flags->checks.health_check_program},
                            {"--startup-script", &flags->checks.startup_script}}) {
    if (path->empty()) continue;
    char resolved[PATH_MAX];
    struct stat st;
    if (realpath(path->c_str(), resolved) == nullptr || stat(resolved, &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": cannot find \"", *path, "\": ", std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode) || access(resolved, X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": \"", *path, "\" is not an executable file"));
    }
    *path = resolved;
  }
  return absl::OkStatus();
}

FlagGroup GangCheckFlagGroup() {
  using Kind = FlagSpec::Kind;
  return {
      "Fabric check before a multi-node gang starts (the other agents must reach\n"
      "--gang-check-port through any firewall):",
      {{"gang-check-port", 0, Kind::kValue, "N", "",
        "the TCP port of this agent's fabric check listener, on every address of the host; "
        "the other agents of a gang connect to it to measure latency and a short bandwidth "
        "sample; 0 picks a free port at each start, sent to the scheduler (default: 0)"},
       {"gang-check-program", 0, Kind::kValue, "CMD", "",
        "a shell command line (/bin/sh -c) run on every node of a multi-node gang before it "
        "starts, when the job's gangCheck asks for it, with TRAINCTL_CHECK_RANK, "
        "TRAINCTL_CHECK_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TRAINCTL_CHECK_NODES and "
        "TRAINCTL_JOB_ID (e.g. an NCCL all-reduce test); exit 0 passes; a last stdout line "
        "{\"gbps\": N} reports its bandwidth; killed at the check's deadline "
        "(default: none)"},
       {"gang-check-min-gbps", 0, Kind::kValue, "X", "",
        "the least bandwidth, in Gbit/s, --gang-check-program must report; 0: not judged "
        "(default: 0)"},
       {"gang-check-min-tcp-gbps", 0, Kind::kValue, "X", "",
        "the least bandwidth, in Gbit/s, of the built-in TCP sample to each peer; 0: "
        "reported, not judged (default: 0)"}}};
}

std::map<std::string, std::function<absl::Status(const std::string& flag, const std::string& v)>>
GangCheckFlagSetters(FabricCheckOptions* options) {
  auto gbps = [](double* out) {
    return [out](const std::string& f, const std::string& v) -> absl::Status {
      absl::StatusOr<double> value =
          ParseNumberFlag(f, v, NumberSign::kNonNegative, "a number of Gbit/s, 0 or more");
      if (!value.ok()) return value.status();
      *out = *value;
      return absl::OkStatus();
    };
  };
  return {
      {"--gang-check-port",
       [options](const std::string& f, const std::string& v) -> absl::Status {
         absl::StatusOr<int> port = ParseWholeNumberFlag<int>(f, v, 0, 65535);
         if (!port.ok()) return port.status();
         options->port = *port;
         return absl::OkStatus();
       }},
      {"--gang-check-program",
       [options](const std::string&, const std::string& v) {
         options->program = v;
         return absl::OkStatus();
       }},
      {"--gang-check-min-gbps", gbps(&options->min_gbps)},
      {"--gang-check-min-tcp-gbps", gbps(&options->min_tcp_gbps)},
  };
}

}  // namespace trainctl::agent
