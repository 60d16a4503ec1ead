// The flag values every program reads (common/flag_values.h), and their one error wording.
#include "common/flag_values.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>

namespace trainctl {
namespace {

template <typename T>
std::string FlagErrorOf(const absl::StatusOr<T>& result) {
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(result.status().message());
}

TEST_CASE("BadFlagValue words every bad value alike") {
  const absl::Status s = BadFlagValue("--limit", "a whole number from 1 to 5", "x");
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() == "--limit must be a whole number from 1 to 5, got \"x\"");
}

TEST_CASE("ParseWholeNumberFlag takes whole numbers within the range") {
  CHECK(*ParseWholeNumberFlag<int>("--limit", "1", 1, 5) == 1);
  CHECK(*ParseWholeNumberFlag<int>("--limit", "5", 1, 5) == 5);
  CHECK(*ParseWholeNumberFlag<int64_t>("--n", "-1", -1) == -1);
  CHECK(*ParseWholeNumberFlag<int64_t>("--n", "9223372036854775807", 0) ==
        std::numeric_limits<int64_t>::max());
  for (const char* bad : {"0", "6", "x", "", "1.5", "2x"}) {
    CAPTURE(bad);
    CHECK(FlagErrorOf(ParseWholeNumberFlag<int>("--limit", bad, 1, 5)) ==
          std::string("--limit must be a whole number from 1 to 5, got \"") + bad + "\"");
  }
}

TEST_CASE("ParseWholeNumberFlag leaves the type's limit unnamed") {
  CHECK(FlagErrorOf(ParseWholeNumberFlag<int32_t>("--gpus", "-1", 0)) ==
        "--gpus must be a whole number >= 0, got \"-1\"");
  // Beyond the type is as wrong as below the minimum.
  CHECK(FlagErrorOf(ParseWholeNumberFlag<int32_t>("--gpus", "2147483648", 0)) ==
        "--gpus must be a whole number >= 0, got \"2147483648\"");
  CHECK(FlagErrorOf(ParseWholeNumberFlag<int64_t>("--n", "99999999999999999999", 1)) ==
        "--n must be a whole number >= 1, got \"99999999999999999999\"");
  // A maximum below the type's is named.
  CHECK(FlagErrorOf(ParseWholeNumberFlag<int64_t>("--n", "3", 0, 2)) ==
        "--n must be a whole number from 0 to 2, got \"3\"");
}

TEST_CASE("ParseNumberFlag takes finite numbers of the sign asked for") {
  CHECK(*ParseNumberFlag("--cpus", "0.5", NumberSign::kPositive) == 0.5);
  CHECK(*ParseNumberFlag("--cpus", "0", NumberSign::kNonNegative) == 0);
  CHECK(*ParseNumberFlag("--cpu", "-2", NumberSign::kAny) == -2);
  CHECK(FlagErrorOf(ParseNumberFlag("--cpus", "0", NumberSign::kPositive)) ==
        "--cpus must be a positive number, got \"0\"");
  CHECK(FlagErrorOf(ParseNumberFlag("--cpus", "-1", NumberSign::kNonNegative)) ==
        "--cpus must be a non-negative number, got \"-1\"");
  for (const char* bad : {"inf", "nan", "x", ""}) {
    CAPTURE(bad);
    CHECK(FlagErrorOf(ParseNumberFlag("--cpu", bad, NumberSign::kAny)) ==
          std::string("--cpu must be a number, got \"") + bad + "\"");
  }
  CHECK(
      FlagErrorOf(ParseNumberFlag("--cpu", "-1", NumberSign::kNonNegative, "a number of cores")) ==
      "--cpu must be a number of cores, got \"-1\"");
}

TEST_CASE("ParseDurationFlag takes durations within the range") {
  constexpr char kWant[] = "a duration between 1s and 60s, e.g. 5s";
  CHECK(*ParseDurationFlag("--lease", "1s", 1000, 60'000, kWant) == 1000);
  CHECK(*ParseDurationFlag("--lease", "1m", 1000, 60'000, kWant) == 60'000);
  CHECK(*ParseDurationFlag("--lease", "2", 1000, 60'000, kWant) == 2000);
  for (const char* bad : {"999ms", "61s", "-5s", "soon", ""}) {
    CAPTURE(bad);
    CHECK(FlagErrorOf(ParseDurationFlag("--lease", bad, 1000, 60'000, kWant)) ==
          std::string("--lease must be ") + kWant + ", got \"" + bad + "\"");
  }
}

TEST_CASE("ParseBoolFlag takes true or false") {
  CHECK(*ParseBoolFlag("--check", "true"));
  CHECK(*ParseBoolFlag("--check", "1"));
  CHECK_FALSE(*ParseBoolFlag("--check", "false"));
  CHECK_FALSE(*ParseBoolFlag("--check", "0"));
  CHECK(FlagErrorOf(ParseBoolFlag("--check", "maybe")) ==
        "--check must be true or false, got \"maybe\"");
}

}  // namespace
}  // namespace trainctl
