// How the CLI shows the cluster: the `nodes` table, the `events` table, and the --since flag.
//
//   std::cout << RenderNodeList(response.nodes(), WallNowMs());
//   // NAME     STATUS   ADDRESS          CPU     MEMORY        GPUS   REPLICAS   HEARTBEAT
//   // node-a   Ready    10.0.0.1:7071    3.5/4   3968/4096Mi   0/0    1          3s ago
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/output.h"
#include "google/protobuf/repeated_field.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// "Ready" while the node's agent is connected, else "Disconnected".
std::string NodeStatus(const v1::Node& node);

// One row of the nodes table: NAME STATUS ADDRESS CPU MEMORY GPUS REPLICAS HEARTBEAT, where
// CPU, MEMORY and GPUS are "free/allocatable" and HEARTBEAT is an age ("3s ago", "-" if never).
std::vector<std::string> NodeRow(const v1::Node& node, int64_t now_ms);

// `nodes -o table`: the header, then NodeRow for each node.
std::string RenderNodeList(const google::protobuf::RepeatedPtrField<v1::Node>& nodes,
                           int64_t now_ms);

// `events -o table`: TIME (RFC3339) TYPE JOB REPLICA NODE REASON, in the order given (the
// server's: oldest first). JOB, REPLICA and NODE are left out when no event has them.
std::string RenderEventList(const google::protobuf::RepeatedPtrField<v1::Event>& events);

// The response in `format`, as `nodes` prints it; JSON and YAML are {"nodes": [...]}.
absl::StatusOr<std::string> FormatNodes(const v1::ListNodesResponse& response, OutputFormat format,
                                        int64_t now_ms);

// The response in `format`, as `events` prints it; JSON and YAML are {"events": [...]}.
absl::StatusOr<std::string> FormatEvents(const v1::ListEventsResponse& response,
                                         OutputFormat format);

// The --since flag: a duration back from `now_ms` ("10m", "1h30m", "90" seconds) or an RFC3339
// time ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00"), as ms since the epoch.
// INVALID_ARGUMENT for anything else.
absl::StatusOr<int64_t> ParseSince(const std::string& text, int64_t now_ms);

}  // namespace trainctl::cli
