// ValidateNodeName, ParseLabels and ResolvePrograms (agent_flags.h): values of trainctl-agent
// flags.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

}  // namespace trainctl::agent
