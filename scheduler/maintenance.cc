// Maintenance windows: validation, a job's expected end, and the hosts a job avoids
// (maintenance.h).
#include "scheduler/maintenance.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "scheduler/placement_kind.h"

namespace trainctl::sched {
namespace {

constexpr size_t kMaxWindowReason = 1024;
constexpr int64_t kMinWindowMs = 60'000;
constexpr int64_t kMaxWindowMs = 30LL * 86'400'000;

absl::Status InvalidWindow(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

absl::Status ValidateWindow(const v1::MaintenanceWindow& window, const std::string& prefix) {
  if (!window.has_start_time() || window.start_time().seconds() <= 0) {
    return InvalidWindow(prefix + "startTime",
                         "is required: when the window starts, in RFC 3339, e.g. "
                         "2026-12-01T02:00:00Z");
  }
  const int64_t ms = DurationToMs(window.duration());
  if (ms < kMinWindowMs || ms > kMaxWindowMs) {
    return InvalidWindow(prefix + "duration",
                         absl::StrCat("must be 1m..720h (30 days), got ", FormatDuration(ms)));
  }
  if (window.reason().empty()) {
    return InvalidWindow(prefix + "reason",
                         "is required: say why the host goes down, e.g. \"BIOS update\"");
  }
  if (window.reason().size() > kMaxWindowReason) {
    return InvalidWindow(prefix + "reason",
                         absl::StrCat("must be at most ", kMaxWindowReason, " characters, got ",
                                      window.reason().size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::MaintenanceWindow>> WindowFromRequest(
    const v1::SetNodeMaintenanceRequest& req) {
  if (req.clear()) {
    if (req.has_start_time() || req.has_duration() || !req.reason().empty()) {
      return InvalidWindow("clear", "removes the window: give no startTime, duration or reason");
    }
    return std::optional<v1::MaintenanceWindow>();
  }
  v1::MaintenanceWindow window;
  *window.mutable_start_time() = req.start_time();
  *window.mutable_duration() = req.duration();
  window.set_reason(req.reason());
  window.set_source("operator");
  if (absl::Status valid = ValidateWindow(window, ""); !valid.ok()) return valid;
  return std::optional<v1::MaintenanceWindow>(std::move(window));
}

absl::Time WindowStart(const v1::MaintenanceWindow& window) {
  return absl::FromUnixMillis(TimestampToMs(window.start_time()));
}

absl::Time WindowEnd(const v1::MaintenanceWindow& window) {
  return WindowStart(window) + absl::Milliseconds(DurationToMs(window.duration()));
}

std::string DescribeWindow(const v1::MaintenanceWindow& window) {
  return absl::StrCat(FormatRfc3339(TimestampToMs(window.start_time())), " for ",
                      FormatDurationExact(DurationToMs(window.duration())), " (", window.reason(),
                      ")");
}

std::string DescribeWindowSpan(const v1::MaintenanceWindow& window) {
  return absl::StrCat("from ", FormatRfc3339(absl::ToUnixMillis(WindowStart(window))), " to ",
                      FormatRfc3339(absl::ToUnixMillis(WindowEnd(window))));
}

bool SameWindow(const v1::MaintenanceWindow& a, const v1::MaintenanceWindow& b) {
  return TimestampToMs(a.start_time()) == TimestampToMs(b.start_time()) &&
         DurationToMs(a.duration()) == DurationToMs(b.duration()) && a.reason() == b.reason();
}

absl::Duration ExpectedDuration(const v1::JobSpec& spec) {
  const v1::Scheduling& s = spec.scheduling();
  if (s.has_expected_duration() && DurationToMs(s.expected_duration()) > 0) {
    return absl::Milliseconds(DurationToMs(s.expected_duration()));
  }
  if (s.has_timeout() && DurationToMs(s.timeout()) > 0) {
    return absl::Milliseconds(DurationToMs(s.timeout()));
  }
  return kDefaultMaintenanceHorizon;
}

absl::Time ExpectedEnd(const v1::JobSpec& spec, absl::Time now) {
  return now + ExpectedDuration(spec);
}

absl::Time ExpectedEnd(const v1::JobSpec& spec, std::optional<absl::Time> started, absl::Time now) {
  if (!started.has_value()) return ExpectedEnd(spec, now);
  return std::max(now, *started + ExpectedDuration(spec));
}

std::vector<NodeWindow> WindowsOf(const NodeRegistry& nodes) {
  std::vector<NodeWindow> out;
  for (const auto& [name, node] : nodes.nodes()) {
    if (!node.status.maintenance.has_value()) continue;
    const v1::MaintenanceWindow& w = *node.status.maintenance;
    out.push_back({name, WindowStart(w), WindowEnd(w), DescribeWindow(w)});
  }
  return out;
}

std::set<std::string> NodesToAvoid(const std::vector<NodeWindow>& windows, absl::Time end) {
  std::set<std::string> out;
  for (const NodeWindow& w : windows) {
    if (w.start < end) out.insert(w.node);
  }
  return out;
}

namespace {

constexpr char kOnlyWindowedNodes[] =
    "only nodes whose maintenance window starts before the job's expected end "
    "(scheduling.expectedDuration, else scheduling.timeout, else 24h from its start) have room "
    "for it: ";

std::string AvoidedWindows(const std::vector<NodeWindow>& windows,
                           const std::set<std::string>& avoided, absl::Time end) {
  std::vector<std::string> parts;
  for (const NodeWindow& w : windows) {
    if (avoided.count(w.node) > 0 && w.start < end) {
      parts.push_back(absl::StrCat(w.node, " from ", w.text));
    }
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

std::string MaintenanceReason(const std::vector<NodeWindow>& windows,
                              const std::set<std::string>& avoided, absl::Time end) {
  // The words stay the same from pass to pass (no times relative to now), so a waiting job's
  // reason changes only when the windows do.
  return ReasonText(BlockerKind::kMaintenance, MaintenanceNoRoom(windows, avoided, end));
}

std::string MaintenanceNoRoom(const std::vector<NodeWindow>& windows,
                              const std::set<std::string>& avoided, absl::Time end) {
  return absl::StrCat(kOnlyWindowedNodes, AvoidedWindows(windows, avoided, end));
}

}  // namespace trainctl::sched
