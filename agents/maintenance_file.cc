// The agent's --maintenance-file: parsing and change detection (maintenance_file.h).
#include "agents/maintenance_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr char kExample[] =
    "write {\"start\": \"2026-12-01T02:00:00Z\", \"duration\": \"2h\", \"reason\": \"BIOS "
    "update\"}";

absl::Status BadKey(const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" ", what, "; ", kExample));
}

}  // namespace

absl::StatusOr<v1::MaintenanceReport> ParseMaintenanceFile(const std::string& text) {
  v1::MaintenanceReport report;
  if (absl::StripAsciiWhitespace(text).empty()) return report;
  google::protobuf::Struct doc;
  if (!google::protobuf::util::JsonStringToMessage(text, &doc).ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not a JSON object; ", kExample));
  }
  const auto& fields = doc.fields();
  auto string_of = [&fields](const std::string& key) -> std::string {
    auto it = fields.find(key);
    if (it == fields.end()) return "";
    if (it->second.has_string_value()) return it->second.string_value();
    if (it->second.has_number_value()) return absl::StrCat(it->second.number_value());
    return "";
  };
  v1::MaintenanceWindow& w = *report.mutable_window();
  google::protobuf::Timestamp start;
  if (!google::protobuf::util::TimeUtil::FromString(string_of("start"), &start)) {
    return BadKey("start", "must be an RFC3339 time");
  }
  *w.mutable_start_time() = start;
  std::string duration = string_of("duration");
  if (!duration.empty() && duration.find_first_not_of("0123456789.") == std::string::npos) {
    duration += "s";  // a number of seconds
  }
  absl::StatusOr<int64_t> ms = ParseDurationMs(duration);
  if (!ms.ok() || *ms < 60'000 || *ms > 30LL * 86'400'000) {
    return BadKey("duration", "must be a duration of 1m..720h such as 2h or 90m");
  }
  *w.mutable_duration() = MsToDuration(*ms);
  w.set_reason(string_of("reason"));
  if (w.reason().empty() || w.reason().size() > 1024) {
    return BadKey("reason", "must say why, in 1..1024 characters");
  }
  w.set_source("agent");
  return report;
}

void MaintenanceFile::Read() {
  std::ifstream in(path_);
  std::string text;
  if (in) {
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  absl::StatusOr<v1::MaintenanceReport> report = ParseMaintenanceFile(text);
  if (report.ok()) {
    current_ = *std::move(report);
    bad_text_.clear();
    return;
  }
  if (text != bad_text_) {
    spdlog::warn("--maintenance-file {}: {}; keeping the last window reported", path_,
                 std::string(report.status().message()));
    bad_text_ = text;
  }
}

std::optional<v1::MaintenanceReport> MaintenanceFile::Poll() {
  Read();
  std::string now = current_.SerializeAsString();
  if (sent_once_ && now == sent_) return std::nullopt;
  sent_ = std::move(now);
  sent_once_ = true;
  return current_;
}

v1::MaintenanceReport MaintenanceFile::Current() {
  Read();
  sent_ = current_.SerializeAsString();
  sent_once_ = true;
  return current_;
}

}  // namespace trainctl::agent
