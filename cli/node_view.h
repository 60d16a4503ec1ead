// How the CLI shows one node: `trainctl node describe` and the line that `node cordon`,
// `node uncordon` and `node drain` print.
//
//   std::cout << RenderNodeDescription(node, events.events(), WallNowMs());
//   // Name:            node-c
//   // ...
//   // State:           ISOLATED since 2025-12-31T23:55:00Z (5m ago)
//   // State reason:    failed preflight check disk-size root: 3.1 GB free, need > 32 GB
//   // ...
//   // Checks:
//   //   preflight   FAILED   2025-12-31T23:55:00Z (5m ago)   job j-abc
//   //     item disk-size root  failed  measured 3.1 GB free  threshold > 32 GB  message ...
//
//   std::cout << NodeActionLine(NodeAction::kDrain, node) << "\n";
//   // node node-1 DRAINING: kernel upgrade (2 replicas moving)
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cli/node_flags.h"
#include "cli/output.h"
#include "google/protobuf/repeated_field.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// The node's maintenance window: "2026-12-01T02:00:00Z for 2h, in 3h (BIOS update)", "now, until
// 2026-12-01T04:00:00Z (BIOS update)" once it began, or "" when it has none. From an agent's
// --maintenance-file: " [agent]" at the end.
std::string MaintenanceText(const v1::Node& node, int64_t now_ms);

// One check item on one line, in the words of `trainctl-agent --check`:
// "item disk-size root  passed  measured 120.4 GB free  threshold > 32 GB". A failed item adds
// "  message <its message>". Parts the item leaves empty are left out.
std::string CheckItemLine(const v1::CheckResult& item);

// `node describe -o table`. A "Key: value" block (name, address, agent version, connected, last
// heartbeat, registered, state since state_time, state reason, health, the last health event,
// cordoned, flapping, the isolation times, the drain deadline while DRAINING, labels), then these
// sections, each after a blank line with its body indented by two spaces:
//   - "Resources:": a RESOURCE CAPACITY ALLOCATABLE FREE table (cpu, memory, gpus) and the
//     replicas placed on the node;
//   - "GPUs:": a GPU MODEL MEMORY UUID NUMA NVLINK HELD-BY RUN table, one row per GPU, HELD-BY
//     "free" or "<job>/<replica>" (left out for a node without GPUs; columns no GPU fills too);
//   - "Config:": the agent's check configuration, sorted by key (left out when empty);
//   - "Checks:": each check run (phase, PASSED or FAILED, time, the job when set), its items below
//     it as CheckItemLine, indented by four spaces (left out when there are none);
//   - "Recent events:": a TIME TYPE JOB REPLICA REASON table of `events` in the order given (JOB
//     and REPLICA left out when no event has them), or "Recent events:  <none>".
std::string RenderNodeDescription(const v1::Node& node,
                                  const google::protobuf::RepeatedPtrField<v1::Event>& events,
                                  int64_t now_ms);

// `node describe` in `format`. JSON is {"node": Node, "events": [Event, ...]}, both in the proto's
// JSON mapping as `get -o json` prints messages; YAML is the same document.
absl::StatusOr<std::string> FormatNodeDescription(const v1::Node& node,
                                                  const v1::ListEventsResponse& events,
                                                  OutputFormat format, int64_t now_ms);

// What `node cordon|uncordon|drain` prints: "node NAME STATE", then ": <state reason>" unless the
// node is READY, " (N replicas moving)" while it drains replicas, and " (cordoned)" when a hold is
// in place under another state (a cordoned node that is ISOLATED). An uncordoned node that stays
// ISOLATED says why: "node node-1 ISOLATED: stays out until its checks pass: <state reason>".
std::string NodeActionLine(NodeAction action, const v1::Node& node);

// `node prepull -o table`: a NODE DIGEST SIZE ERROR table, one row per node in the order given,
// SIZE in decimal units ("1.2 GB"); DIGEST and SIZE are "-" for a node that failed, ERROR "-" for
// one that did not.
std::string RenderPrepullResults(const v1::PrepullImageResponse& resp);

// Whether any node of `resp` failed (node prepull then exits 1).
bool AnyPrepullFailed(const v1::PrepullImageResponse& resp);

}  // namespace trainctl::cli
