// Plain value types of the scheduler core: resources, nodes, events and the effects of a turn.
//
// Jobs are held as the API's own `trainctl::v1::Job` message (the shared contract of proto/), so
// what the core decides is exactly what users read; everything else here is a plain struct. Nothing
// in scheduler/ includes gRPC or SQLite headers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// An amount of cpu (cores), memory (MiB) and gpus.
struct Res {
  double cpu = 0;
  int64_t memory_mb = 0;
  int64_t gpus = 0;

  Res& operator+=(const Res& o) {
    cpu += o.cpu;
    memory_mb += o.memory_mb;
    gpus += o.gpus;
    return *this;
  }
  Res& operator-=(const Res& o) {
    cpu -= o.cpu;
    memory_mb -= o.memory_mb;
    gpus -= o.gpus;
    return *this;
  }
  // True when every dimension of `need` fits in *this. A small epsilon absorbs float sums of cpu.
  bool Fits(const Res& need) const {
    return need.cpu <= cpu + 1e-9 && need.memory_mb <= memory_mb && need.gpus <= gpus;
  }
  static Res FromProto(const v1::Resources& r) { return Res{r.cpu(), r.memory_mb(), r.gpus()}; }
  static Res FromProto(const v1::NodeResources& r) { return Res{r.cpu(), r.memory_mb(), r.gpus()}; }
};

// The scheduler's view of one host and its agent.
struct Node {
  std::string name;
  // How replicas on other nodes reach this one (MASTER_ADDR, cluster spec).
  std::string address;
  Res capacity;
  Res allocatable;
  std::map<std::string, std::string> labels;
  // True while the node's agent holds a stream open.
  bool connected = false;
  // The agent process behind the current stream; changes when the agent restarts.
  std::string agent_instance;
  int64_t registered_ms = 0;
  int64_t last_heartbeat_ms = 0;
  // Availability and health: the API Node's fields from `state` on (state, health, checks,
  // operator holds, config). Everything else of it is left unset here. Persisted as one blob.
  v1::Node status;
  // Facts behind status.state (see node_health.h): no heartbeat within the lost timeout, and
  // a drain still moving replicas off.
  bool lost = false;
  bool draining = false;
  // A replica's current run on this node has been stopped by the node's agent shutting down:
  // the node is going away, so it takes no new work until it registers again.
  bool shutting_down = false;
  // Runs that were on this node when it was lost and have moved elsewhere: stopped on it when it
  // comes back. In memory only; after a scheduler restart, Register's reconciliation does it.
  std::set<std::string> stale_runs;
};

// One append-only audit row. Every state change of a job or node produces one.
struct Event {
  int64_t time_ms = 0;
  std::string job_id;
  int32_t attempt = 0;
  std::string replica;
  std::string node;
  // Short machine-readable kind, e.g. "JobQueued", "ReplicaExited", "NodeRegistered".
  std::string type;
  // What happened and why, in words.
  std::string reason;
};

// One launched process of a replica: the history behind Job.replicas.
struct ReplicaRun {
  std::string run_id;
  std::string job_id;
  int32_t attempt = 0;
  std::string replica;
  int32_t restart = 0;
  std::string node;
  v1::ReplicaState state = v1::REPLICA_STATE_UNSPECIFIED;
  int64_t pid = 0;
  std::optional<int32_t> exit_code;
  std::optional<int32_t> signal;
  bool oom_killed = false;
  std::string message;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
};

// What one turn of the core decided, beyond its own in-memory state: rows to persist and
// messages for agents. The shell commits the rows in one transaction before any message leaves.
struct Effects {
  // Jobs whose row (state, replicas, error) changed.
  std::set<std::string> jobs;
  // Attempts (job id, number) whose row changed.
  std::set<std::pair<std::string, int32_t>> attempts;
  std::vector<ReplicaRun> runs;
  // Nodes whose row changed.
  std::set<std::string> nodes;
  std::vector<Event> events;
  // (node, message) pairs to send after the commit.
  std::vector<std::pair<std::string, v1::SchedulerMessage>> commands;
  // Projects whose quota row changed.
  std::set<std::string> quotas;

  bool empty() const {
    return jobs.empty() && attempts.empty() && runs.empty() && nodes.empty() && events.empty() &&
           commands.empty() && quotas.empty();
  }
};

// "<job id>/<attempt>/<replica name>/<restart>": the identity of one launched process.
std::string MakeRunId(const std::string& job_id, int32_t attempt, const std::string& replica,
                      int32_t restart);

// Splits a run id; false when it is malformed.
bool ParseRunId(const std::string& run_id, std::string* job_id, int32_t* attempt,
                std::string* replica, int32_t* restart);

bool IsTerminal(v1::JobState state);
bool IsTerminal(v1::ReplicaState state);

// "RUNNING" for JOB_STATE_RUNNING; "STOPPING" for REPLICA_STATE_STOPPING.
std::string ShortName(v1::JobState state);
std::string ShortName(v1::ReplicaState state);

}  // namespace trainctl::sched
