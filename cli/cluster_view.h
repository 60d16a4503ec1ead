// How the CLI shows the cluster: the `nodes` table, the `events` table, and the --since flag.
//
//   std::cout << RenderNodeList(response.nodes(), /*wide=*/false, WallNowMs());
//   // NAME     STATE      HEALTH      CPU     MEMORY        GPUS   REPLICAS   HEARTBEAT
//   // node-a   READY      HEALTHY     3.5/4   3968/4096Mi   6/8    1          3s ago
//   // node-c   ISOLATED   UNHEALTHY   4/4     4096/4096Mi   8/8    0          2s ago
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/output.h"
#include "google/protobuf/repeated_field.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// How `nodes` prints: -o table, wide (the table with more columns), json or yaml.
struct NodesOutput {
  OutputFormat format = OutputFormat::kTable;
  bool wide = false;  // only with kTable
};

// "table", "wide", "json" or "yaml" (any case); INVALID_ARGUMENT naming the four otherwise.
absl::StatusOr<NodesOutput> ParseNodesOutput(absl::string_view text);

// One row of the nodes table: NAME STATE HEALTH CPU MEMORY GPUS REPLICAS HEARTBEAT, where STATE
// and HEALTH are NodeStateName and NodeHealthName, CPU, MEMORY and GPUS are "free/allocatable"
// and HEARTBEAT is an age ("3s ago", "-" if never). `wide` adds ADDRESS after HEALTH, and AGENT
// (the agent's version) and REASON (why the node is in its state) at the end.
std::vector<std::string> NodeRow(const v1::Node& node, bool wide, int64_t now_ms);

// `nodes -o table` (or wide): the header, then NodeRow for each node.
std::string RenderNodeList(const google::protobuf::RepeatedPtrField<v1::Node>& nodes, bool wide,
                           int64_t now_ms);

// `events -o table`: TIME (RFC3339) TYPE JOB REPLICA NODE REASON, in the order given (the
// server's: oldest first). JOB, REPLICA and NODE are left out when no event has them.
std::string RenderEventList(const google::protobuf::RepeatedPtrField<v1::Event>& events);

// The response as `nodes` prints it; JSON and YAML are {"nodes": [...]}, the proto's JSON mapping.
absl::StatusOr<std::string> FormatNodes(const v1::ListNodesResponse& response, NodesOutput output,
                                        int64_t now_ms);

// The response in `format`, as `events` prints it; JSON and YAML are {"events": [...]}.
absl::StatusOr<std::string> FormatEvents(const v1::ListEventsResponse& response,
                                         OutputFormat format);

// The --since flag: a duration back from `now_ms` ("10m", "1h30m", "90" seconds) or an RFC3339
// time ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00"), as ms since the epoch.
// INVALID_ARGUMENT for anything else.
absl::StatusOr<int64_t> ParseSince(const std::string& text, int64_t now_ms);

}  // namespace trainctl::cli
