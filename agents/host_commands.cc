#include "agents/host_commands.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace trainctl::agent {

bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (access(absl::StrCat(dir, "/", name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

absl::StatusOr<std::string> CommandOutput(const std::string& command) {
  constexpr size_t kMaxOutput = 1 << 20;
  FILE* out = popen(absl::StrCat(command, " 2>/dev/null").c_str(), "r");
  if (out == nullptr) {
    return absl::InternalError(absl::StrCat(command, ": ", std::strerror(errno)));
  }
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), out)) > 0) {
    if (text.size() < kMaxOutput) text.append(buf, n);
  }
  const int status = pclose(out);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(command, " failed"));
  }
  return text;
}

}  // namespace trainctl::agent
