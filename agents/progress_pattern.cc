// Training steps read from a replica's output (progress_pattern.h).
#include "agents/progress_pattern.h"

#include <fcntl.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace trainctl::agent {

std::shared_ptr<const re2::RE2> CompileStepPattern(const std::string& pattern) {
  if (pattern.empty()) return nullptr;
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok() || re->NamedCapturingGroups().count("step") == 0) return nullptr;
  return re;
}

std::optional<int64_t> LastStepIn(absl::string_view text, const re2::RE2& pattern) {
  const int group = pattern.NamedCapturingGroups().at("step");
  std::optional<int64_t> step;
  std::vector<re2::StringPiece> groups(static_cast<size_t>(group) + 1);
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const re2::StringPiece piece(line.data(), line.size());
    if (!pattern.Match(piece, 0, piece.size(), re2::RE2::UNANCHORED, groups.data(),
                       static_cast<int>(groups.size()))) {
      continue;
    }
    const re2::StringPiece& matched = groups[static_cast<size_t>(group)];
    int64_t n = 0;
    if (matched.size() <= 18 &&
        absl::SimpleAtoi(absl::string_view(matched.data(), matched.size()), &n) && n >= 0) {
      step = n;
    }
  }
  return step;
}

std::optional<int64_t> ScanForStep(const std::string& log_path, const re2::RE2& pattern,
                                   int64_t* offset) {
  const int fd = open(log_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= *offset) {
    close(fd);
    return std::nullopt;
  }
  const int64_t start = std::max(*offset, static_cast<int64_t>(st.st_size) - kMaxStepScanBytes);
  std::string text(static_cast<size_t>(st.st_size - start), '\0');
  const ssize_t n = pread(fd, text.data(), text.size(), start);
  close(fd);
  if (n <= 0) return std::nullopt;
  text.resize(static_cast<size_t>(n));
  const size_t end = text.rfind('\n');
  if (end == std::string::npos) {
    // No whole line yet; a line longer than a pass's bytes is skipped.
    if (start > *offset || text.size() >= static_cast<size_t>(kMaxStepScanBytes)) *offset = start;
    return std::nullopt;
  }
  text.resize(end + 1);
  *offset = start + static_cast<int64_t>(end) + 1;
  return LastStepIn(text, pattern);
}

}  // namespace trainctl::agent
