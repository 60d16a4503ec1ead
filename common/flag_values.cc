#include "common/flag_values.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/time_util.h"

namespace trainctl {

absl::Status BadFlagValue(absl::string_view flag, absl::string_view want, absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " must be ", want, ", got \"", text, "\""));
}

namespace flag_values_internal {

absl::StatusOr<int64_t> ParseWholeNumber(absl::string_view flag, absl::string_view text,
                                         int64_t min, int64_t max, bool open_above) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < min || n > max) {
    return BadFlagValue(flag,
                        open_above ? absl::StrCat("a whole number >= ", min)
                                   : absl::StrCat("a whole number from ", min, " to ", max),
                        text);
  }
  return n;
}

}  // namespace flag_values_internal

absl::StatusOr<double> ParseNumberFlag(absl::string_view flag, absl::string_view text,
                                       NumberSign sign, absl::string_view want) {
  double n = 0;
  const bool fits = absl::SimpleAtod(text, &n) && std::isfinite(n) &&
                    (sign == NumberSign::kAny || (sign == NumberSign::kNonNegative && n >= 0) ||
                     (sign == NumberSign::kPositive && n > 0));
  if (fits) return n;
  if (want.empty()) {
    want = sign == NumberSign::kAny           ? "a number"
           : sign == NumberSign::kNonNegative ? "a non-negative number"
                                              : "a positive number";
  }
  return BadFlagValue(flag, want, text);
}

absl::StatusOr<int64_t> ParseDurationFlag(absl::string_view flag, absl::string_view text,
                                          int64_t min_ms, int64_t max_ms, absl::string_view want) {
  absl::StatusOr<int64_t> ms = ParseDurationMs(std::string(text));
  if (!ms.ok() || *ms < min_ms || *ms > max_ms) return BadFlagValue(flag, want, text);
  return *ms;
}

absl::StatusOr<bool> ParseBoolFlag(absl::string_view flag, absl::string_view text) {
  bool value = false;
  if (!absl::SimpleAtob(text, &value)) return BadFlagValue(flag, "true or false", text);
  return value;
}

}  // namespace trainctl
