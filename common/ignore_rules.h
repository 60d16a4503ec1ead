// .trainctlignore: which files of a working directory stay behind when a job ships it, in
// gitignore's syntax (as git documents it):
//   - blank lines and lines starting with '#' say nothing; "\#" and "\!" start a pattern with
//     those characters; trailing spaces are dropped unless escaped ("\ ");
//   - "!pattern" takes a file back in that an earlier pattern left out; the last pattern that
//     matches decides;
//   - "pattern/" matches directories only;
//   - a pattern with a '/' at its start or in its middle is relative to the directory itself;
//     one without matches a name at any depth;
//   - '*', '?' and "[a-z]" match within one path segment (fnmatch(3)); "**/" any number of leading
//     directories, "/**" everything inside, "/**/" zero or more directories between;
//   - a file inside a left-out directory stays out whatever later patterns say (git cannot take
//     it back either): Ignored checks every directory above the path first.
//
//   IgnoreRules rules = IgnoreRules::Parse(".git/\n*.ckpt\n!keep.ckpt\n");
//   rules.Ignored("runs/a.ckpt", /*is_dir=*/false);   // true
//
// Thread-safe: immutable once parsed.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace trainctl {

class IgnoreRules {
 public:
  static IgnoreRules Parse(absl::string_view text);

  // Whether `path` (relative to the directory, '/'-separated, without a leading '/') stays out;
  // `is_dir` when it is a directory.
  bool Ignored(absl::string_view path, bool is_dir) const;

  size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    // Its segments; a leading "**" for a pattern that matches at any depth.
    std::vector<std::string> segments;
    bool negated = false;
    bool dir_only = false;
  };
  // The last rule that matches decides: true (left out), false (taken in), or unchanged.
  bool Decide(const std::vector<std::string>& path, bool is_dir, bool ignored) const;

  std::vector<Rule> rules_;
};

}  // namespace trainctl
