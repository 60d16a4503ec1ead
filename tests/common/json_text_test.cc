// JsonQuoted (common/json_text.h): text as a JSON string literal.
#include "common/json_text.h"

#include <catch2/catch.hpp>

namespace trainctl {
namespace {

TEST_CASE("JsonQuoted escapes quotes, backslashes and control characters") {
  CHECK(JsonQuoted("") == "\"\"");
  CHECK(JsonQuoted("node-a:29500") == "\"node-a:29500\"");
  CHECK(JsonQuoted("say \"hi\"\\") == "\"say \\\"hi\\\"\\\\\"");
  CHECK(JsonQuoted("a\nb\tc") == "\"a\\nb\\tc\"");
  CHECK(JsonQuoted(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(JsonQuoted("préemption ✓") == "\"préemption ✓\"");  // UTF-8 as it is
}

}  // namespace
}  // namespace trainctl
