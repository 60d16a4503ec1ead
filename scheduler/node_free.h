// The free-resource book's entries: what one schedulable node has free (NodeFree) and what one
// replica demands of its node (ReplicaDemand). Placement (placement.h), its topology domains
// (domain_index.h) and node selection read them; this header depends on the model alone, so
// those include it without including each other.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace trainctl::sched {

struct NodeFree {
  std::string name;
  // Free now: allocatable minus what placed replicas hold.
  Res free;
  // Ports of its pool not held by any replica.
  int32_t free_ports = 0;
  // The indices of its free GPUs, for messages: "most free: 3 on node-a (GPUs 1,5,7)". Left out
  // (empty) once a placement in progress took GPUs of the node.
  std::vector<int32_t> free_gpu_indices = {};
  // Its labels (agent --labels, gpu.model), for node selection and topology; nullptr: none.
  std::shared_ptr<const std::map<std::string, std::string>> labels = nullptr;
};

struct ReplicaDemand {
  // For messages: "worker-2".
  std::string replica;
  Res need;
  // Ports it holds on its node (PortsNeeded: 2 for the primary, 1 for the others).
  int32_t ports = 0;
};

}  // namespace trainctl::sched
