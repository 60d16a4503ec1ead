// Training steps read from a replica's output (agents/progress_pattern.h): the last matching
// line of each pass wins, a line is read once and only when whole, a pass reads at most
// kMaxStepScanBytes, and patterns without a step group are refused.
#include "agents/progress_pattern.h"

#include <re2/re2.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

TEST_CASE("progress pattern: the last whole matching line of each pass gives the step",
          "[progress_pattern]") {
  std::shared_ptr<const re2::RE2> re = CompileStepPattern(R"(^step (?P<step>\d+)\b)");
  REQUIRE(re != nullptr);
  testing::TempDir dir;
  const std::string log = dir.path() + "/run.log";
  int64_t offset = 0;
  CHECK_FALSE(ScanForStep(log, *re, &offset).has_value());  // no log yet
  Append(log, "loading data\nstep 10 loss 2.3\nstep 20 loss 2.1\nevaluating\nstep 3");
  CHECK(ScanForStep(log, *re, &offset) == std::optional<int64_t>(20));
  CHECK(offset == 58);  // up to the last newline: "step 3" is not whole yet
  Append(log, "0 loss 2.0\n");
  CHECK(ScanForStep(log, *re, &offset) == std::optional<int64_t>(30));
  CHECK_FALSE(ScanForStep(log, *re, &offset).has_value());  // nothing new
  Append(log, "no step here\nstep 99999999999999999999 overflow\n");
  CHECK_FALSE(ScanForStep(log, *re, &offset).has_value());

  // A pass reads at most kMaxStepScanBytes: the newest of them.
  std::string flood;
  for (int i = 1; i <= 200'000; ++i) flood += "step " + std::to_string(i) + "\n";
  Append(log, flood);
  CHECK(ScanForStep(log, *re, &offset) == std::optional<int64_t>(200'000));
}

TEST_CASE("progress pattern: only patterns with a step group compile", "[progress_pattern]") {
  CHECK(CompileStepPattern("") == nullptr);
  CHECK(CompileStepPattern("step (\\d+)") == nullptr);
  CHECK(CompileStepPattern("step (?P<step>\\d+") == nullptr);
  std::shared_ptr<const re2::RE2> re = CompileStepPattern("it=(?P<step>[0-9]+)/(?P<total>\\d+)");
  REQUIRE(re != nullptr);
  CHECK(LastStepIn("it=5/100\nit=6/100\n", *re) == std::optional<int64_t>(6));
  CHECK_FALSE(LastStepIn("", *re).has_value());
}

}  // namespace
}  // namespace trainctl::agent
