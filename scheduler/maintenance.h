// Maintenance windows (v1::MaintenanceWindow): the rules behind `trainctl node maintenance` and
// the agents' --maintenance-file. What a valid window is, when a job is expected to end, which
// hosts a job avoids because their window starts before then, and the words of the queue reason
// of a job that waits for a window.
//
// NodeRegistry keeps each node's window (NodeMaintenance, node_maintenance.h); placement
// (placement_pipeline.h) asks NodesToAvoid for each gang or replica it places, with the expected
// end its caller gives (from now at admission, from the job's start for a move).
//
//   std::vector<NodeWindow> windows = WindowsOf(nodes);        // once per pass
//   std::set<std::string> avoid = NodesToAvoid(windows, ExpectedEnd(job.spec, now));
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/node_registry.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// How far ahead a job with neither scheduling.expectedDuration nor scheduling.timeout avoids
// windows.
inline constexpr absl::Duration kDefaultMaintenanceHorizon = absl::Hours(24);

// Checks a window's start, duration (1m..30d) and reason (required, at most 1024 characters).
// INVALID_ARGUMENT naming `prefix` + the field ("startTime", "duration", "reason").
absl::Status ValidateWindow(const v1::MaintenanceWindow& window, const std::string& prefix);

// The window a SetNodeMaintenance request asks for (source "operator"), or nullopt for clear.
// INVALID_ARGUMENT naming the field.
absl::StatusOr<std::optional<v1::MaintenanceWindow>> WindowFromRequest(
    const v1::SetNodeMaintenanceRequest& req);

absl::Time WindowStart(const v1::MaintenanceWindow& window);
absl::Time WindowEnd(const v1::MaintenanceWindow& window);
// "2026-11-27T02:00:00Z for 2h (BIOS update)"
std::string DescribeWindow(const v1::MaintenanceWindow& window);
// "from 2026-11-27T02:00:00Z to 2026-11-27T04:00:00Z"
std::string DescribeWindowSpan(const v1::MaintenanceWindow& window);
// Whether two windows say the same start, duration and reason (whatever their source and state).
bool SameWindow(const v1::MaintenanceWindow& a, const v1::MaintenanceWindow& b);

// How long a job is expected to run: scheduling.expectedDuration, else scheduling.timeout, else
// kDefaultMaintenanceHorizon.
absl::Duration ExpectedDuration(const v1::JobSpec& spec);
// When a job that starts at `now` is expected to end: now + ExpectedDuration.
absl::Time ExpectedEnd(const v1::JobSpec& spec, absl::Time now);
// When a job that started at `started` (nullopt: not yet) is expected to end, for a replica that
// moves at `now`: started + ExpectedDuration, as scheduling.timeout counts; never before `now`.
absl::Time ExpectedEnd(const v1::JobSpec& spec, std::optional<absl::Time> started, absl::Time now);

// A node's window, for one admission pass.
struct NodeWindow {
  std::string node;
  absl::Time start;
  absl::Time end;
  // DescribeWindow's words.
  std::string text;
};

// Every node that has a window that has not ended, by name.
std::vector<NodeWindow> WindowsOf(const NodeRegistry& nodes);

// The nodes of `windows` a job expected to run until `end` keeps off: their window starts before
// `end`.
std::set<std::string> NodesToAvoid(const std::vector<NodeWindow>& windows, absl::Time end);

// The queue reason of a job that only fits on nodes it avoids: "MAINTENANCE: only nodes with a
// maintenance window before the job's expected end (...) have room: node-a from ... (...)".
std::string MaintenanceReason(const std::vector<NodeWindow>& windows,
                              const std::set<std::string>& avoided, absl::Time end);
// Why a moving replica found no node: "only nodes whose maintenance window starts before the
// job's expected end (...) have room for it: node-a from ... (...)".
std::string MaintenanceNoRoom(const std::vector<NodeWindow>& windows,
                              const std::set<std::string>& avoided, absl::Time end);

}  // namespace trainctl::sched
