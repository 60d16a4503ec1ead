// The values of command-line flags as trainctld, trainctl-agent and trainctl read them (whole
// numbers in a range, numbers, durations, true or false), and the one wording of a value that
// does not fit, the same in every program:
//
//   --flag must be WANT, got "TEXT"
//
//   TC_ASSIGN_OR_RETURN(int64_t limit, ParseWholeNumberFlag<int64_t>("--limit", text, 1, 1000));
//   // "--limit must be a whole number from 1 to 1000, got "x""
//   TC_ASSIGN_OR_RETURN(int64_t ms, ParseDurationFlag("--lease-duration", text, 1000, 60'000,
//                                                     "a duration between 1s and 60s, e.g. 5s"));
//
// `flag` is the flag as the user writes it ("--limit"). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl {

// INVALID_ARGUMENT `--flag must be WANT, got "TEXT"`: what every program says of a flag whose
// value does not fit. `want` names what fits: "a whole number from 0 to 100", "true or false".
absl::Status BadFlagValue(absl::string_view flag, absl::string_view want, absl::string_view text);

namespace flag_values_internal {
// ParseWholeNumberFlag's work; `open_above`: `max` is only the type's limit, not worth naming.
absl::StatusOr<int64_t> ParseWholeNumber(absl::string_view flag, absl::string_view text,
                                         int64_t min, int64_t max, bool open_above);
}  // namespace flag_values_internal

// A whole number from `min` to `max` as `Int` (given explicitly: ParseWholeNumberFlag<int>).
// WANT is "a whole number from MIN to MAX", or "a whole number >= MIN" when `max` is left at
// Int's largest value.
template <typename Int>
absl::StatusOr<Int> ParseWholeNumberFlag(absl::string_view flag, absl::string_view text,
                                         int64_t min,
                                         int64_t max = std::numeric_limits<Int>::max()) {
  static_assert(std::numeric_limits<Int>::is_integer && std::numeric_limits<Int>::is_signed &&
                    sizeof(Int) <= sizeof(int64_t),
                "a signed integer type of at most 64 bits");
  absl::StatusOr<int64_t> n = flag_values_internal::ParseWholeNumber(
      flag, text, min, max, max == std::numeric_limits<Int>::max());
  if (!n.ok()) return n.status();
  return static_cast<Int>(*n);
}

// Which numbers ParseNumberFlag takes.
enum class NumberSign {
  kAny,          // any finite number; WANT "a number"
  kNonNegative,  // 0 or more; WANT "a non-negative number"
  kPositive,     // more than 0; WANT "a positive number"
};

// A finite number ("8", "0.5", "1e3"; not "inf" or "nan") of `sign`. `want` replaces the WANT of
// `sign` when given ("a non-negative number of cores (e.g. 8 or 0.5)").
absl::StatusOr<double> ParseNumberFlag(absl::string_view flag, absl::string_view text,
                                       NumberSign sign, absl::string_view want = {});

// A duration as ParseDurationMs reads it ("500ms", "30s", "5m", "1h30m", a number of seconds),
// in milliseconds, from `min_ms` to `max_ms`. `want` says what fits, in words the user knows:
// "a duration between 1s and 60s, e.g. 5s".
absl::StatusOr<int64_t> ParseDurationFlag(absl::string_view flag, absl::string_view text,
                                          int64_t min_ms, int64_t max_ms, absl::string_view want);

// true or false, also as 1 or 0, yes or no, t or f, y or n (any case). WANT "true or false".
absl::StatusOr<bool> ParseBoolFlag(absl::string_view flag, absl::string_view text);

}  // namespace trainctl
