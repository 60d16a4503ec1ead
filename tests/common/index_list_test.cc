// Index lists ("0-3,6") as the kernel writes cpusets and trainctl shows GPUs.
#include "common/index_list.h"

#include <catch2/catch.hpp>

namespace trainctl {
namespace {

TEST_CASE("index lists are formatted with ranges", "[index_list]") {
  CHECK(FormatIndexList({}).empty());
  CHECK(FormatIndexList({3}) == "3");
  CHECK(FormatIndexList({0, 1}) == "0-1");
  CHECK(FormatIndexList({6, 0, 2, 1, 3, 3}) == "0-3,6");
  CHECK(FormatIndexList({0, 2, 4, 5, 6, 9}) == "0,2,4-6,9");
}

TEST_CASE("index lists are parsed, and bad ones refused", "[index_list]") {
  CHECK(ParseIndexList("")->empty());
  CHECK(ParseIndexList("0-3,6\n").value() == std::vector<int32_t>{0, 1, 2, 3, 6});
  CHECK(ParseIndexList(" 7, 2-3 ,2").value() == std::vector<int32_t>{2, 3, 7});
  for (const char* bad : {"a", "3-1", "-1", "1-", "1,,2", "0-99999999"}) {
    INFO(bad);
    absl::StatusOr<std::vector<int32_t>> parsed = ParseIndexList(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(ParseIndexList("3-1").status().message() ==
        "'3-1' in '3-1' is not an index or a range a-b with a <= b");
  for (const std::vector<int32_t>& v :
       {std::vector<int32_t>{0, 2, 4, 5, 6, 9}, std::vector<int32_t>{1, 2}}) {
    CHECK(ParseIndexList(FormatIndexList(v)).value() == v);
  }
}

}  // namespace
}  // namespace trainctl
