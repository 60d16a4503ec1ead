#include "cli/usage.h"

#include <catch2/catch.hpp>

#include "tests/common/example_specs.h"

namespace trainctl::cli {
namespace {

using testing::kCommands;
using testing::kGlobals;

TEST_CASE("FormatCommandUsage lists every flag with its default", "[flags]") {
  std::string usage = FormatCommandUsage(kCommands[1], kGlobals);
  CHECK_THAT(usage, Catch::StartsWith("Usage:\n  trainctl list [flags]\n"));
  CHECK_THAT(usage, Catch::Contains("      --state STATE     State [repeatable]\n"));
  CHECK_THAT(usage, Catch::Contains("      --limit N         Limit (default 100)\n"));
  CHECK_THAT(usage, Catch::Contains("  -o, --output FORMAT   Format (default table)\n"));
  CHECK_THAT(usage, Catch::Contains("Global flags:\n      --server HOST:PORT   Server address\n"));
  CHECK_THAT(usage, Catch::Contains("  -h, --help               Show help\n"));

  std::string top = FormatUsage("trainctl", kGlobals, kCommands);
  CHECK_THAT(top, Catch::Contains("  submit   Submit\n  list     List\n  logs     Logs\n"));
}

}  // namespace
}  // namespace trainctl::cli
