#include "common/time_util.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trainctl {

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

google::protobuf::Timestamp MsToTimestamp(int64_t ms) {
  google::protobuf::Timestamp ts;
  if (ms <= 0) return ts;
  ts.set_seconds(ms / 1000);
  ts.set_nanos(static_cast<int32_t>((ms % 1000) * 1000000));
  return ts;
}

int64_t TimestampToMs(const google::protobuf::Timestamp& ts) {
  return ts.seconds() * 1000 + ts.nanos() / 1000000;
}

int64_t DurationToMs(const google::protobuf::Duration& d) {
  return d.seconds() * 1000 + d.nanos() / 1000000;
}

absl::Status ValidateProtoDuration(const std::string& path, const google::protobuf::Duration& d,
                                   int64_t max_seconds) {
  const bool ok = d.seconds() >= 0 && d.nanos() >= 0 && d.nanos() <= 999'999'999 &&
                  (d.seconds() < max_seconds || (d.seconds() == max_seconds && d.nanos() == 0));
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, " must be between 0s and ", max_seconds,
                                                 "s, got ", d.seconds(), "s and ", d.nanos(),
                                                 "ns"));
}

google::protobuf::Duration MsToDuration(int64_t ms) {
  google::protobuf::Duration d;
  d.set_seconds(ms / 1000);
  d.set_nanos(static_cast<int32_t>((ms % 1000) * 1000000));
  return d;
}

std::string FormatRfc3339(int64_t ms) {
  if (ms <= 0) return "";
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm_utc;
  gmtime_r(&secs, &tm_utc);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
  return buf;
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) return absl::StrCat("-", FormatDuration(-ms));
  if (ms < 1000) return absl::StrCat(ms, "ms");
  int64_t s = ms / 1000;
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m", s % 60, "s");
  return absl::StrCat(s / 3600, "h", (s % 3600) / 60, "m", s % 60, "s");
}

std::string FormatDurationExact(int64_t ms) {
  if (ms == 0) return "0s";
  for (auto [unit_ms, unit] : {std::pair<int64_t, const char*>{86'400'000, "d"},
                               {3'600'000, "h"},
                               {60'000, "m"},
                               {1000, "s"}}) {
    if (ms % unit_ms == 0) return absl::StrCat(ms / unit_ms, unit);
  }
  return absl::StrCat(ms, "ms");
}

std::string FormatAge(int64_t ms) {
  if (ms < 0) ms = 0;
  int64_t s = ms / 1000;
  if (s < 120) return absl::StrCat(s, "s");
  if (s < 2 * 3600) return absl::StrCat(s / 60, "m");
  if (s < 2 * 86400) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

absl::StatusOr<int64_t> ParseDurationMs(const std::string& text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid duration \"", text, "\": use e.g. 30s, 500ms, 5m, 2h, 1h30m"));
  };
  if (text.empty()) return bad();
  size_t i = 0;
  double total_ms = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (i == start) return bad();
    double value = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    std::string unit;
    while (i < text.size() && isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    double scale;
    if (unit.empty()) {
      if (any) return bad();
      scale = 1000;  // bare number: seconds
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60 * 1000;
    } else if (unit == "h") {
      scale = 3600 * 1000;
    } else if (unit == "d") {
      scale = 86400 * 1000;
    } else {
      return bad();
    }
    total_ms += value * scale;
    any = true;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15) return bad();
  return static_cast<int64_t>(std::llround(total_ms));
}

}  // namespace trainctl
