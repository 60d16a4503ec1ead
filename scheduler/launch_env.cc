#include "scheduler/launch_env.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_text.h"
#include "common/time_util.h"
#include "scheduler/elastic.h"

namespace trainctl::sched {
namespace {

std::string HostOf(const std::string& node, const std::map<std::string, Node>& nodes) {
  auto it = nodes.find(node);
  return it == nodes.end() ? node : it->second.address;
}

// Vertex AI's TF_CONFIG task type of the worker pool at each position. The first three pools make
// up TensorFlow's training cluster; the evaluator is not part of it.
constexpr const char* kTfTaskType[] = {"chief", "worker", "ps", "evaluator"};
constexpr int kTfTaskTypes = 4;
constexpr int kTfClusterPools = 3;

}  // namespace

namespace {

// Every replica's host-local ranks (LocalRanksOf) at once, in O(replicas log replicas). Replicas
// are in rank order, so each node's first replica in the list has its lowest rank: nodes are
// numbered in the order their first replicas come.
std::vector<LocalRanks> AllLocalRanks(const Job& job) {
  struct OnNode {
    int32_t node_rank = 0;
    std::vector<int32_t> ranks;  // sorted below
  };
  std::map<std::string, OnNode> by_node;
  for (const Replica& r : job.replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) continue;
    auto [it, added] = by_node.try_emplace(r.node);
    if (added) it->second.node_rank = static_cast<int32_t>(by_node.size()) - 1;
    it->second.ranks.push_back(r.rank);
  }
  for (auto& [node, on] : by_node) std::sort(on.ranks.begin(), on.ranks.end());
  std::vector<LocalRanks> out;
  out.reserve(job.replicas.size());
  for (const Replica& r : job.replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) {
      out.emplace_back();
      continue;
    }
    const OnNode& on = by_node.at(r.node);
    LocalRanks l;
    l.local_rank = static_cast<int32_t>(std::lower_bound(on.ranks.begin(), on.ranks.end(), r.rank) -
                                        on.ranks.begin());
    l.local_world_size = static_cast<int32_t>(on.ranks.size());
    l.node_rank = on.node_rank;
    l.nodes = static_cast<int32_t>(by_node.size());
    out.push_back(l);
  }
  return out;
}

// The task type of the replica's pool in CLUSTER_SPEC (vertex) or TRAINCTL_CLUSTER_SPEC.
std::string TaskType(const Job& job, const Replica& self, bool vertex) {
  if (!vertex) return self.pool;
  const auto& pools = job.spec.worker_pools();
  std::string task_type = self.pool;
  for (int p = 0; p < pools.size(); ++p) {
    if (pools[p].name() == self.pool) task_type = absl::StrCat("workerpool", p);
  }
  return task_type;
}

std::string ClusterSpecJson(const Job& job, int replica_index, const GangView& view, bool vertex) {
  const Replica& self = job.replicas[replica_index];
  std::string json = absl::StrCat("{\"cluster\":{", vertex ? view.vertex_cluster : view.cluster,
                                  "},\"task\":{\"type\":", JsonQuoted(TaskType(job, self, vertex)),
                                  ",\"index\":", view.task_index[replica_index], "}");
  if (vertex) {
    absl::StrAppend(&json, ",\"environment\":\"cloud\",\"job\":{\"id\":", JsonQuoted(job.id), "}}");
  } else {
    absl::StrAppend(&json, ",\"job\":{\"id\":", JsonQuoted(job.id),
                    ",\"attempt\":", job.current_attempt(), "}}");
  }
  return json;
}

std::string TfConfigJson(const Job& job, int replica_index, const GangView& view) {
  const auto& pools = job.spec.worker_pools();
  const Replica& self = job.replicas[replica_index];
  std::string task_type = self.pool;
  for (int p = 0; p < pools.size(); ++p) {
    if (pools[p].name() == self.pool) {
      task_type = p < kTfTaskTypes ? kTfTaskType[p] : absl::StrCat("workerpool", p);
    }
  }
  return absl::StrCat("{\"cluster\":{", view.tf_cluster,
                      "},\"task\":{\"type\":", JsonQuoted(task_type),
                      ",\"index\":", view.task_index[replica_index],
                      "},\"environment\":\"cloud\",\"job\":{\"id\":", JsonQuoted(job.id), "}}");
}

}  // namespace

LocalRanks LocalRanksOf(const Job& job, int replica_index) {
  return AllLocalRanks(job)[replica_index];
}

GangView GangViewOf(const Job& job, const std::map<std::string, Node>& nodes) {
  GangView view;
  const auto& pools = job.spec.worker_pools();
  // Each pool's addresses, in replica order.
  std::map<std::string, std::vector<std::string>> addrs;
  std::set<std::string> hosts;
  view.task_index.reserve(job.replicas.size());
  for (const Replica& r : job.replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) {
      view.task_index.push_back(-1);
      continue;
    }
    const std::string host = HostOf(r.node, nodes);
    std::vector<std::string>& pool = addrs[r.pool];
    view.task_index.push_back(static_cast<int32_t>(pool.size()));
    pool.push_back(JsonQuoted(absl::StrCat(host, ":", r.port)));
    if (!host.empty() && hosts.insert(host).second) view.hosts.push_back(host);
  }
  std::vector<std::string> plain, vertex, tf;
  for (int p = 0; p < pools.size(); ++p) {
    auto it = addrs.find(pools[p].name());
    const std::string list =
        absl::StrCat(":[", it == addrs.end() ? "" : absl::StrJoin(it->second, ","), "]");
    plain.push_back(absl::StrCat(JsonQuoted(pools[p].name()), list));
    vertex.push_back(absl::StrCat(JsonQuoted(absl::StrCat("workerpool", p)), list));
    if (p < kTfClusterPools) tf.push_back(absl::StrCat(JsonQuoted(kTfTaskType[p]), list));
  }
  view.cluster = absl::StrJoin(plain, ",");
  view.vertex_cluster = absl::StrJoin(vertex, ",");
  view.tf_cluster = absl::StrJoin(tf, ",");
  view.local_ranks = AllLocalRanks(job);
  if (!job.replicas.empty()) view.master_addr = HostOf(job.replicas[0].node, nodes);
  return view;
}

std::string ClusterSpecJson(const Job& job, int replica_index,
                            const std::map<std::string, Node>& nodes, bool vertex) {
  return ClusterSpecJson(job, replica_index, GangViewOf(job, nodes), vertex);
}

std::string TfConfigJson(const Job& job, int replica_index,
                         const std::map<std::string, Node>& nodes) {
  return TfConfigJson(job, replica_index, GangViewOf(job, nodes));
}

std::shared_ptr<const v1::LaunchReplica> PoolLaunchOf(const Job& job, const std::string& pool) {
  auto cached = job.pool_launches.find(pool);
  if (cached != job.pool_launches.end()) return cached->second;
  for (const v1::WorkerPool& p : job.spec.worker_pools()) {
    if (p.name() != pool) continue;
    auto part = std::make_shared<v1::LaunchReplica>();
    for (const std::string& a : p.command()) part->add_argv(a);
    for (const std::string& a : p.args()) part->add_argv(a);
    part->mutable_env()->insert(p.env().begin(), p.env().end());
    job.pool_launches[pool] = part;
    return part;
  }
  return nullptr;
}

v1::LaunchReplica BuildLaunch(const Job& job, int replica_index,
                              const std::map<std::string, Node>& nodes) {
  Command whole{"", v1::SchedulerMessage(), PoolLaunchOf(job, job.replicas[replica_index].pool)};
  *whole.message.mutable_launch() = BuildReplicaLaunch(job, replica_index, nodes);
  return std::move(whole).Take().launch();
}

v1::LaunchReplica BuildReplicaLaunch(const Job& job, int replica_index, const GangView& view) {
  const Replica& r = job.replicas[replica_index];
  const v1::WorkerPool* pool = PoolOf(job, r);
  const int attempt = job.attempts.empty() ? 1 : job.current_attempt();
  v1::LaunchReplica launch;
  launch.set_run_id(MakeRunId(job.id, attempt, r.name, r.restart_count));
  launch.set_job_id(job.id);
  launch.set_project(job.project);
  launch.set_attempt(attempt);
  launch.set_replica_name(r.name);
  launch.set_restart(r.restart_count);
  launch.set_checkpoint_dir(job.checkpoint_dir);
  launch.set_checkpoint_root(job.checkpoint_root);
  launch.set_workdir_digest(job.spec.workdir());
  launch.set_progress_pattern(job.spec.scheduling().progress_pattern());
  if (pool != nullptr) {
    *launch.mutable_resources() = pool->resources();
    // Its image, if any; the pull secret's value is added just before the launch is sent
    // (server/launch_secrets.h), never here.
    launch.set_image(pool->image());
    launch.set_image_pull_always(!pool->image().empty() &&
                                 pool->image_pull_policy() == v1::IMAGE_PULL_POLICY_ALWAYS);
    *launch.mutable_mounts() = pool->mounts();
  }
  auto& env = *launch.mutable_env();
  env["TRAINCTL_JOB_ID"] = job.id;
  env["TRAINCTL_ATTEMPT"] = absl::StrCat(attempt);
  env["TRAINCTL_REPLICA_NAME"] = r.name;
  env["TRAINCTL_RESTART_COUNT"] = absl::StrCat(r.restart_count);
  env["TRAINCTL_GANG_GENERATION"] = absl::StrCat(job.gang_generation);
  env["TRAINCTL_NODE"] = r.node;
  if (job.element) {  // an element of a job array (job_arrays.h)
    env["TRAINCTL_ARRAY_ID"] = job.element->array;
    env["TRAINCTL_ARRAY_INDEX"] = absl::StrCat(job.element->index);
    env["TRAINCTL_ARRAY_COUNT"] = absl::StrCat(job.element->count);
  }
  env["RANK"] = absl::StrCat(r.rank);
  env["WORLD_SIZE"] = absl::StrCat(WorldSize(job));
  env["MASTER_ADDR"] = view.master_addr;
  env["MASTER_PORT"] = absl::StrCat(job.replicas[0].rendezvous_port);
  env["TRAINCTL_CLUSTER_SPEC"] = ClusterSpecJson(job, replica_index, view, /*vertex=*/false);
  env["CLUSTER_SPEC"] = ClusterSpecJson(job, replica_index, view, /*vertex=*/true);
  env["TF_CONFIG"] = TfConfigJson(job, replica_index, view);
  const LocalRanks& local = view.local_ranks[replica_index];
  env["LOCAL_RANK"] = absl::StrCat(local.local_rank);
  env["LOCAL_WORLD_SIZE"] = absl::StrCat(local.local_world_size);
  env["NODE_RANK"] = absl::StrCat(local.node_rank);
  env["GROUP_RANK"] = absl::StrCat(local.node_rank);
  // Its own GPUs only; none at all for a replica that asked for none. Indices are nvidia-smi's,
  // which CUDA follows only in PCI bus order.
  launch.mutable_gpu_devices()->Add(r.gpu_devices.begin(), r.gpu_devices.end());
  const std::string gpus = absl::StrJoin(r.gpu_devices, ",");
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["NVIDIA_VISIBLE_DEVICES"] = gpus.empty() ? "void" : gpus;
  env["TRAINCTL_GPUS"] = gpus;
  env["TRAINCTL_CHECKPOINT_DIR"] = job.checkpoint_dir;
  env["AIP_CHECKPOINT_DIR"] = job.checkpoint_dir;
  // Every host of the job, once each, for the preflight `dns` item.
  for (const std::string& host : view.hosts) launch.add_hostnames(host);
  return launch;
}

v1::LaunchReplica BuildReplicaLaunch(const Job& job, int replica_index,
                                     const std::map<std::string, Node>& nodes) {
  return BuildReplicaLaunch(job, replica_index, GangViewOf(job, nodes));
}

v1::SchedulerMessage NoticeMessage(const std::string& run_id, const std::string& kind,
                                   absl::Time deadline, const std::string& by,
                                   const std::string& reason, int32_t signal) {
  v1::SchedulerMessage msg;
  v1::NoticeReplica* n = msg.mutable_notice();
  n->set_run_id(run_id);
  n->set_deadline_ms(absl::ToUnixMillis(deadline));
  n->set_kind(kind);
  n->set_reason(reason);
  n->set_preempting_job(by);
  n->set_signal(signal);
  return msg;
}

v1::SchedulerMessage StopMessage(const std::string& run_id, absl::Duration grace,
                                 const std::string& reason, const std::string& capture_stacks) {
  v1::SchedulerMessage msg;
  msg.mutable_stop()->set_capture_stacks(capture_stacks);
  msg.mutable_stop()->set_run_id(run_id);
  msg.mutable_stop()->set_grace_period_ms(static_cast<int32_t>(absl::ToInt64Milliseconds(grace)));
  msg.mutable_stop()->set_reason(reason);
  return msg;
}

}  // namespace trainctl::sched
