#include "agents/container_check.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/run_files.h"
#include "agents/spawn.h"
#include "agents/tool_run.h"

namespace trainctl::agent {
namespace {

// Whether `filesystems` (as /proc/filesystems) lists overlay.
bool ListsOverlayfs(const std::string& filesystems) {
  std::ifstream in(filesystems);
  std::string line;
  while (std::getline(in, line)) {
    if (absl::EndsWith(line, "\toverlay")) return true;
  }
  return false;
}

// "" when a file can be made in `dir` (made first when missing), else why not.
std::string ImageDirProblem(const std::string& dir) {
  if (dir.empty()) return "no image dir is configured";
  if (absl::Status made = MakeDirs(dir); !made.ok()) return std::string(made.message());
  std::string path = dir + "/.trainctl-check-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return absl::StrCat("cannot create a file in ", dir, ": ", std::strerror(errno));
  close(fd);
  unlink(path.c_str());
  return "";
}

}  // namespace

CheckResult CheckContainerRuntime(const ContainerCheckConfig& config) {
  CheckResult result;
  result.item = kContainerRuntimeItem;
  result.threshold =
      absl::StrCat("`", config.runc, " --version` exits 0 within ",
                   absl::FormatDuration(config.timeout), ", image dir writable, overlayfs");
  std::vector<std::string> found;
  std::vector<std::string> problems;

  ToolRequest request;
  request.argv = {config.runc, "--version"};
  request.env = CurrentEnvironment();
  request.timeout = config.timeout;
  request.max_stdout = 4096;
  const ToolOutcome runc = RunTool(request);
  if (runc.ok()) {
    const std::string version = runc.stdout_text.substr(0, runc.stdout_text.find('\n'));
    found.push_back(version.empty() ? config.runc : version);
  } else {
    found.push_back(absl::StrCat(config.runc, " not working"));
    problems.push_back(absl::StrCat("`", config.runc,
                                    " --version` failed: ", runc.Describe(config.timeout),
                                    " (install runc, apt-get install runc, or point --runc at a "
                                    "working one)"));
  }

  if (const std::string why = ImageDirProblem(config.image_dir); why.empty()) {
    found.push_back(absl::StrCat("image dir ", config.image_dir, " writable"));
  } else {
    found.push_back(absl::StrCat("image dir ", config.image_dir, " not writable"));
    problems.push_back(absl::StrCat("image dir ", config.image_dir, " is not writable: ", why,
                                    " (make it writable by the agent, free its file system, or "
                                    "point --image-dir elsewhere)"));
  }

  if (ListsOverlayfs(config.filesystems)) {
    found.push_back("overlayfs present");
  } else {
    found.push_back("no overlayfs");
    problems.push_back(absl::StrCat("the kernel has no overlayfs (not in ", config.filesystems,
                                    "; modprobe overlay)"));
  }

  result.passed = problems.empty();
  result.measured = absl::StrJoin(found, ", ");
  result.message = result.passed ? result.measured : absl::StrJoin(problems, "; ");
  return result;
}

}  // namespace trainctl::agent
