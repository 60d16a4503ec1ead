// SetNodeMaintenance requests for the core's maintenance tests: a window and a clear.
#pragma once

#include <string>

#include "common/time_util.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched::testing {

// A window on `node` from `start_ms` for `duration_ms` (Unix ms), with `reason`.
inline v1::SetNodeMaintenanceRequest WindowReq(const std::string& node, int64_t start_ms,
                                               int64_t duration_ms, const std::string& reason) {
  v1::SetNodeMaintenanceRequest req;
  req.set_name(node);
  *req.mutable_start_time() = MsToTimestamp(start_ms);
  *req.mutable_duration() = MsToDuration(duration_ms);
  req.set_reason(reason);
  return req;
}

// Clears `node`'s window.
inline v1::SetNodeMaintenanceRequest ClearReq(const std::string& node) {
  v1::SetNodeMaintenanceRequest req;
  req.set_name(node);
  req.set_clear(true);
  return req;
}

}  // namespace trainctl::sched::testing
