// A run's identity, "<job id>/<attempt>/<replica name>/<restart>": the scheduler names each
// launched process of a replica this way, and the agent files the run's records and logs by it.
//
//   std::string id = MakeRunId({"j-abc", 2, "worker-1", 0});   // "j-abc/2/worker-1/0"
//   std::optional<RunIdParts> parts = SplitRunId(id);
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace trainctl {

struct RunIdParts {
  std::string job_id;
  int32_t attempt = 0;
  std::string replica_name;
  int32_t restart = 0;
};

std::string MakeRunId(const RunIdParts& parts);

// The four parts, or nullopt unless there are exactly four and the attempt and restart are
// non-negative integers. The names are not checked further.
std::optional<RunIdParts> SplitRunId(absl::string_view run_id);

}  // namespace trainctl
