#include "common/ignore_rules.h"

#include <fnmatch.h>

#include "absl/strings/str_split.h"

namespace trainctl {
namespace {

// Whether `pattern`'s segments from `i` match `path`'s from `j`.
bool Match(const std::vector<std::string>& pattern, size_t i, const std::vector<std::string>& path,
           size_t j) {
  if (i == pattern.size()) return j == path.size();
  if (pattern[i] == "**") {
    // Zero or more segments; a trailing "**" needs at least one (everything *inside*).
    if (i + 1 == pattern.size()) return j < path.size();
    for (size_t k = j; k <= path.size(); ++k) {
      if (Match(pattern, i + 1, path, k)) return true;
    }
    return false;
  }
  if (j == path.size()) return false;
  return fnmatch(pattern[i].c_str(), path[j].c_str(), 0) == 0 && Match(pattern, i + 1, path, j + 1);
}

// The line without its unescaped trailing spaces.
std::string TrimTrailingSpaces(absl::string_view line) {
  size_t end = line.size();
  while (end > 0 && line[end - 1] == ' ' && !(end >= 2 && line[end - 2] == '\\')) --end;
  return std::string(line.substr(0, end));
}

}  // namespace

IgnoreRules IgnoreRules::Parse(absl::string_view text) {
  IgnoreRules out;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::string line = TrimTrailingSpaces(raw);
    if (line.empty() || line[0] == '#') continue;
    Rule rule;
    if (line[0] == '!') {
      rule.negated = true;
      line.erase(0, 1);
    } else if (line.size() >= 2 && line[0] == '\\' && (line[1] == '#' || line[1] == '!')) {
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      rule.dir_only = true;
      line.pop_back();
    }
    if (line.empty()) continue;
    const bool anchored = line.find('/') != std::string::npos;
    if (line[0] == '/') line.erase(0, 1);
    if (!anchored) rule.segments.push_back("**");
    for (absl::string_view s : absl::StrSplit(line, '/', absl::SkipEmpty())) {
      rule.segments.emplace_back(s);
    }
    out.rules_.push_back(std::move(rule));
  }
  return out;
}

bool IgnoreRules::Decide(const std::vector<std::string>& path, bool is_dir, bool ignored) const {
  for (const Rule& rule : rules_) {
    if (rule.dir_only && !is_dir) continue;
    if (Match(rule.segments, 0, path, 0)) ignored = !rule.negated;
  }
  return ignored;
}

bool IgnoreRules::Ignored(absl::string_view path, bool is_dir) const {
  const std::vector<std::string> segments = absl::StrSplit(path, '/', absl::SkipEmpty());
  // A directory above it that is left out takes it along.
  std::vector<std::string> prefix;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    prefix.push_back(segments[i]);
    if (Decide(prefix, /*is_dir=*/true, false)) return true;
  }
  return Decide(segments, is_dir, false);
}

}  // namespace trainctl
