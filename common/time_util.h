// Time helpers shared by the scheduler, the agent and the CLI.
//
// Times inside trainctl are int64 milliseconds since the Unix epoch ("ms"); protobuf Timestamps
// and Durations appear only at the API edge.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace trainctl {

// Wall-clock now, in ms since the epoch.
int64_t WallNowMs();

// Converts ms since the epoch to a Timestamp; 0 gives an empty (unset) Timestamp.
google::protobuf::Timestamp MsToTimestamp(int64_t ms);
int64_t TimestampToMs(const google::protobuf::Timestamp& ts);

int64_t DurationToMs(const google::protobuf::Duration& d);

// OK when `d` is a valid non-negative Duration of at most `max_seconds`: seconds in
// 0..max_seconds and nanos in 0..999999999 (and 0 at the maximum). Else INVALID_ARGUMENT:
// "<path> must be between 0s and 3600s, got 5s and 2000000000ns". Every Duration that enters
// through the API is checked with it, so that stored values always convert.
absl::Status ValidateProtoDuration(const std::string& path, const google::protobuf::Duration& d,
                                   int64_t max_seconds);
google::protobuf::Duration MsToDuration(int64_t ms);

// "2026-11-21T03:44:36Z" (UTC, seconds precision).
std::string FormatRfc3339(int64_t ms);

// A duration in words for messages: "1h2m3s", "30m0s", "45s", "250ms", "-5s". Whole seconds
// from one second on.
std::string FormatDuration(int64_t ms);

// A duration that ParseDurationMs reads back exactly, in its largest whole unit: "90d", "2h",
// "15m", "30s", "1500ms", "0s".
std::string FormatDurationExact(int64_t ms);

// A short age for tables: "42s", "5m", "3h", "2d".
std::string FormatAge(int64_t ms);

// Parses "1.5s", "300ms", "5m", "2h", "1h30m", "90" (seconds). Negative values are rejected.
absl::StatusOr<int64_t> ParseDurationMs(const std::string& text);

}  // namespace trainctl
