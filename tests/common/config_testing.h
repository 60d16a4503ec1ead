// Helpers of the config-file tests: a config file in a directory of its own, and the flags a
// program's --help lists (each must be a config key).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace trainctl::testing {

// A file NAME holding `text` in a new directory under /tmp; both removed at the end of the test.
class TempConfigFile {
 public:
  explicit TempConfigFile(const std::string& text, const std::string& name = "config.yaml") {
    char dir[] = "/tmp/trainctl-config-test.XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    dir_ = dir;
    path_ = dir_ + "/" + name;
    Write(text);
  }
  ~TempConfigFile() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  TempConfigFile(const TempConfigFile&) = delete;
  TempConfigFile& operator=(const TempConfigFile&) = delete;

  void Write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

// The long flag names of a help text's flag rows ("      --name VALUE  help", "  -h, --help"),
// less `actions`.
inline std::set<std::string> FlagsOfUsage(const std::string& usage,
                                          const std::set<std::string>& actions) {
  std::set<std::string> names;
  std::istringstream lines(usage);
  for (std::string line; std::getline(lines, line);) {
    const size_t start = line.find_first_not_of(' ');
    // Rows are indented by 2 to 6 spaces; headings not at all, wrapped help text by far more.
    if (start == std::string::npos || start < 2 || start > 6) continue;
    size_t at = line.compare(start, 2, "--") == 0 ? start : line.find(", --", start);
    if (at == std::string::npos || (at != start && at > start + 3)) continue;
    at = line.find("--", at) + 2;
    const std::string name = line.substr(at, line.find_first_of(" ", at) - at);
    if (actions.count(name) == 0) names.insert(name);
  }
  return names;
}

}  // namespace trainctl::testing
