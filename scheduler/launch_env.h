// The commands for agents: the LaunchReplica message for one replica (argv, and the environment
// every replica sees), and the StopReplica message.
//
// Environment (docs/users/replica-environment.md; R3, R10): TRAINCTL_JOB_ID, TRAINCTL_ATTEMPT,
// TRAINCTL_REPLICA_NAME, TRAINCTL_RESTART_COUNT, TRAINCTL_NODE, RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, TRAINCTL_CLUSTER_SPEC, TRAINCTL_CHECKPOINT_DIR, the host-local ranks (LOCAL_RANK,
// LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK: LocalRanksOf), its GPUs (CUDA_VISIBLE_DEVICES,
// NVIDIA_VISIBLE_DEVICES, TRAINCTL_GPUS: the indices it owns, comma-separated; with
// CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers devices as nvidia-smi does), and Vertex AI's
// CLUSTER_SPEC, TF_CONFIG and AIP_CHECKPOINT_DIR so code written for Vertex runs unchanged. The
// pool's own env comes first; trainctl's variables win on a clash.
//
// Ports are the ones the job lifecycle gave each replica (Replica::port, rendezvous_port):
// MASTER_PORT is the primary's rendezvous port, and each replica's cluster spec entry is
// host:port with the replica's own port.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"

namespace trainctl::sched {

// PyTorch's host-local ranks for the replicas of one job (what torchrun sets): the replica's place
// among the job's replicas on its node by rank (LOCAL_RANK, 0-based), how many of them there are
// (LOCAL_WORLD_SIZE), and its node's place among the job's nodes ordered by the lowest rank on
// each (NODE_RANK = GROUP_RANK; the primary's node is 0), of `nodes` nodes.
struct LocalRanks {
  int32_t local_rank = 0;
  int32_t local_world_size = 0;
  int32_t node_rank = 0;
  int32_t nodes = 0;
};
LocalRanks LocalRanksOf(const Job& job, int replica_index);

// What the launches of one job's replicas share, derived from its placement at once: the
// address lists of the three cluster specs, every replica's host-local ranks and the job's hosts.
// Deriving it costs O(replicas); a launch built from it costs O(1) in the job's size, so a gang's
// launches cost O(replicas) in all instead of O(replicas^2).
struct GangView {
  // The inside of TRAINCTL_CLUSTER_SPEC's "cluster": "\"chief\":[\"h:p\"],\"worker\":[...]".
  std::string cluster;
  // The same for CLUSTER_SPEC (pools named workerpool0..N) and TF_CONFIG (chief, worker, ps).
  std::string vertex_cluster;
  std::string tf_cluster;
  // By replica index (a REMOVED replica's are zeros).
  std::vector<LocalRanks> local_ranks;
  // By replica index: its place in its pool's list of the cluster specs (task.index). The
  // replica's index while its pool runs every replica; dense when an elastic pool shrank.
  std::vector<int32_t> task_index;
  // Every host of the job once, in the order of the replicas: for the preflight `dns` item.
  std::vector<std::string> hosts;
  // The primary's host.
  std::string master_addr;
};
GangView GangViewOf(const Job& job, const std::map<std::string, Node>& nodes);

// The launch of one replica without its pool's argv and env (those are PoolLaunchOf's): what
// differs from one replica to the next, and its pool's resources, image, image_pull_always and
// mounts (image_credentials is left to the server: server/launch_secrets.h). The agent gets
// Command::Take() of the two. `view` is GangViewOf(job) for the job's placement now.
// REQUIRES: every replica of `job` has a node, and each such node is in `nodes`.
v1::LaunchReplica BuildReplicaLaunch(const Job& job, int replica_index, const GangView& view);
v1::LaunchReplica BuildReplicaLaunch(const Job& job, int replica_index,
                                     const std::map<std::string, Node>& nodes);

// The part of the launches of `pool`'s replicas that they share (its command, args and env),
// built once per job and pool and kept in job.pool_launches. Null for an unknown pool.
std::shared_ptr<const v1::LaunchReplica> PoolLaunchOf(const Job& job, const std::string& pool);

// The whole launch of one replica, as the agent gets it: BuildReplicaLaunch with PoolLaunchOf.
v1::LaunchReplica BuildLaunch(const Job& job, int replica_index,
                              const std::map<std::string, Node>& nodes);

// The command that stops a run: SIGTERM to its process group, `grace`, then SIGKILL. The agent
// gets the grace in whole milliseconds.
v1::SchedulerMessage StopMessage(const std::string& run_id, absl::Duration grace,
                                 const std::string& reason, const std::string& capture_stacks = "");

// The notice a running replica gets before it is stopped (agents write it to the file at
// TRAINCTL_PREEMPTION_NOTICE, then send `signal`; 0 sends none): `kind` is "preemption", "drain"
// or "maintenance", `by` the job it makes room for ("" for none).
v1::SchedulerMessage NoticeMessage(const std::string& run_id, const std::string& kind,
                                   absl::Time deadline, const std::string& by,
                                   const std::string& reason, int32_t signal);

// The cluster spec JSON of the job's current placement, as seen from `replica_index`.
// vertex=false: {"cluster":{"chief":["h:p"],"worker":[...]},"task":{"type":"worker","index":1},
//                "job":{"id":"j-...","attempt":1}}
// vertex=true:  pools named workerpool0..N, plus "environment":"cloud".
std::string ClusterSpecJson(const Job& job, int replica_index,
                            const std::map<std::string, Node>& nodes, bool vertex);

// TF_CONFIG as Vertex AI sets it, as seen from `replica_index`:
//   {"cluster":{"chief":["h:p"],"worker":[...],"ps":[...]},"task":{"type":"worker","index":1},
//    "environment":"cloud","job":{"id":"j-..."}}
// Pool 0 is "chief", pool 1 "worker", pool 2 "ps", pool 3 "evaluator"; a pool's own name does
// not matter. The cluster is TensorFlow's training cluster: like Vertex AI, it never lists the
// evaluators, and it lists no pool beyond the fourth either, as TensorFlow has no role for one;
// such a replica's task type is "workerpool<N>", as in CLUSTER_SPEC. "job" carries the job id
// alone, not the spec as on Vertex AI: a spec can be larger than the kernel takes for one
// environment variable (128 KiB).
std::string TfConfigJson(const Job& job, int replica_index,
                         const std::map<std::string, Node>& nodes);

}  // namespace trainctl::sched
