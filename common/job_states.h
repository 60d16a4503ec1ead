// Facts about the API's job and replica states that every part of trainctl shares.
#pragma once

#include "trainctl/v1/job.pb.h"

namespace trainctl {

// SUCCEEDED, FAILED and CANCELLED: the job will not change any more.
inline bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

// SUCCEEDED, FAILED, STOPPED and REMOVED: the replica's run is over.
inline bool IsTerminal(v1::ReplicaState state) {
  return state == v1::REPLICA_STATE_SUCCEEDED || state == v1::REPLICA_STATE_FAILED ||
         state == v1::REPLICA_STATE_STOPPED || state == v1::REPLICA_STATE_REMOVED;
}

}  // namespace trainctl
