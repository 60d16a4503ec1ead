// The scheduler core's model: plain value types for jobs, their attempts and replicas, nodes,
// events, and the effects of one turn.
//
// The core decides over these structs, never over the API's messages: times are absl::Time,
// failure classes, decisions and move causes are enums. `trainctl.v1` appears here only where a
// value is the user's own document (a job's spec, kept verbatim and shown back) or the agent
// protocol's (a node's check runs, commands for agents). The mapping to and from the API's
// messages lives in one file, model/model_proto.h, used by the services, the store's callers
// and tests. Nothing in scheduler/ includes gRPC or SQLite headers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/job_states.h"
#include "model/decisions.h"
#include "model/job_array.h"
#include "model/job_policy.h"
#include "model/tally.h"
#include "model/usage_ledger.h"
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

// --- Jobs ----------------------------------------------------------------------------------

// The retry budgets of a job: used (Job) or left (Attempt).
struct Budgets {
  int32_t job_retries = 0;
  int32_t internal_retries = 0;
  int32_t capacity_retries = 0;
  int32_t redispatches = 0;

  bool operator==(const Budgets& o) const {
    return job_retries == o.job_retries && internal_retries == o.internal_retries &&
           capacity_retries == o.capacity_retries && redispatches == o.redispatches;
  }
  bool operator!=(const Budgets& o) const { return !(*this == o); }
};

// Why a job ended badly. `code` is kOk while there is no error.
struct JobError {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;
  std::string replica;
  std::string node;
  FailureClass reason = FailureClass::kNone;
  // The last lines of the replica's output.
  std::string output_tail;
  // For a gang's failure: the peers' failures that followed the root cause, in words.
  std::vector<std::string> consequences;
};

// The first failure of a gang's failure episode (see RestartScope GANG), and what followed it.
struct RootCause {
  std::string replica;
  std::string node;
  absl::Time exit_time;
  FailureClass failure_class = FailureClass::kNone;
  // "exited with status 134".
  std::string summary;
  // "chief-0 exited with status 1": peers' failures not classified on their own.
  std::vector<std::string> consequences;
};

// One replica of the job's current attempt. Name, pool and index never change (R3); nor does the
// rank, except when an elastic pool shrinks or grows (elastic.h).
struct Replica {
  std::string name;  // "<pool>-<index>"
  std::string pool;
  int32_t index = 0;
  int32_t rank = 0;
  // What it holds on its node while in a holding state: its pool's resources. Derived from the
  // spec; not stored.
  Res need;
  std::string node;  // empty until placed
  // Its own port on its node (its host:port in the cluster spec) and, for the primary, the
  // rendezvous port (MASTER_PORT); 0 when it has none. Held in the node's port pool while the
  // replica holds resources; a replica that restarts on the same node takes the same ports back;
  // forgotten when it changes node (see scheduler/replica_binding.h).
  int32_t port = 0;
  int32_t rendezvous_port = 0;
  // The GPUs it owns on its node, by index, need.gpus of them (CUDA_VISIBLE_DEVICES). Held in the
  // node's device pool while it holds resources, kept like its ports (replica_binding.h).
  std::vector<int32_t> gpu_devices;
  v1::ReplicaState state = v1::REPLICA_STATE_PENDING;
  // Restarts within the attempt (moves included), and those charged to maxReplicaRestarts.
  int32_t restart_count = 0;
  int32_t charged_restarts = 0;
  int32_t moves = 0;
  std::optional<int32_t> exit_code;
  std::optional<int32_t> signal;
  bool oom_killed = false;
  int64_t pid = 0;
  std::string message;
  std::optional<absl::Time> start_time;
  std::optional<absl::Time> end_time;
  std::optional<absl::Time> last_progress_time;
  int64_t step = 0;       // the training step it last reported (ReportProgress.step); 0: none
  std::string straggler;  // why it is judged a straggler now (stragglers.h); "" otherwise
  // In memory only: when a progress report last wrote the job's row. Reports in between change
  // only memory (JobLifecycle::Progress), so a replica reporting every second costs no commit each.
  std::optional<absl::Time> progress_written;
  // While RESTARTING: when the restart is due. While SETTLING: when its failure is decided.
  std::optional<absl::Time> next_start_time;
  // While it moves: why (cause != kNone), and the reason in words.
  MoveCause move_cause = MoveCause::kNone;
  std::string move_reason;
  // Elastic pools: while PENDING for want of a node with room after it had to leave its node,
  // when its pool shrinks without it.
  std::optional<absl::Time> elastic_wait_until;

  bool moving() const { return move_cause != MoveCause::kNone; }
  // A new run starts with no progress: no time, no step.
  void ForgetProgress() {
    last_progress_time.reset();
    step = 0;
    progress_written.reset();
  }
};

// One restart of a GANG job's whole gang.
struct GangRestart {
  int32_t generation = 0;
  absl::Time time;
  RootCause cause;
  std::string matched_rule;
  bool charged = false;
};

// One change of an elastic pool's size (see v1::Resize).
struct Resize {
  absl::Time time;
  int32_t generation = 0;
  std::string pool;
  int32_t from_replicas = 0;
  int32_t to_replicas = 0;
  std::vector<std::string> replicas;
  std::string reason;
  int32_t world_size = 0;
};

// One try of the whole job.
struct Attempt {
  int32_t number = 0;
  v1::JobState state = v1::JOB_STATE_PENDING;
  std::string reason;
  std::optional<absl::Time> start_time;
  std::optional<absl::Time> end_time;
  std::vector<std::string> nodes;
  // How it ended, for an attempt ended by a failure.
  FailureClass failure_class = FailureClass::kNone;
  std::string matched_rule;
  std::string replica;
  std::string node;
  Decision decision = Decision::kNone;
  std::optional<Budgets> budgets_left;
  // The peers' failures that followed the root cause (replica, node, class above).
  std::vector<std::string> consequences;
  // GANG jobs: every restart of the whole gang in this attempt.
  std::vector<GangRestart> gang_restarts;
  // Elastic pools: every change of a pool's size in this attempt.
  std::vector<Resize> resizes;
  // The fabric check before its replicas started, when one ran (fabric_checks.h): kept as the
  // API shows it.
  std::optional<v1::FabricCheck> fabric_check;
};

// A preemption of a job (v1::Preemption): who takes its replicas back, why, until when its
// replicas may checkpoint.
struct Preemption {
  // The waiting job it makes room for.
  std::string by;
  // "job j-2 (priority 10) of project team-a needs 8 gpus: project team-a reclaims ..."
  std::string reason;
  absl::Time decided;
  // The end of the notice's grace period (scheduling.preemptionGracePeriod).
  absl::Time deadline;
  // The attempt it ends: while that attempt is the job's current one and the job is PENDING or
  // RUNNING, the preemption is under way (JobLifecycle::Preempting).
  int32_t attempt = 0;
};

struct Job {
  std::string id;
  std::string display_name;
  std::string project;
  // The owner of the token that submitted it; "" without authentication.
  std::string creator;
  // The CreateJobRequest.request_id it was created with ("" for none) and the SHA-256 (hex) of
  // that request's spec: a retried create finds the job by them (RequestIndex).
  std::string request_id;
  std::string request_hash;
  int32_t priority = 0;
  v1::JobState state = v1::JOB_STATE_QUEUED;
  JobError error;
  absl::Time create_time;
  std::optional<absl::Time> start_time;  // first RUNNING
  std::optional<absl::Time> end_time;    // terminal
  absl::Time update_time;
  std::vector<Replica> replicas;  // rank order
  std::vector<Attempt> attempts;  // oldest first
  // The spec as submitted, defaults filled in. Never changes after submit.
  v1::JobSpec spec;
  // The spec's policy, resolved. Derived; not stored.
  RetryPolicy policy;
  std::string queue_reason;
  std::string checkpoint_dir;
  // The allowed root checkpoint_dir lies strictly under (CheckpointRootOf); sent with each launch.
  // Empty for a job stored by an older trainctld whose directory matches no root now.
  std::string checkpoint_root;
  Budgets budgets_used;
  // While QUEUED for a retry: when the next attempt may start.
  std::optional<absl::Time> next_attempt_time;
  // When it last entered QUEUED (cleared when placed).
  std::optional<absl::Time> queue_time;
  // GANG jobs: restarts of the current attempt's whole gang (TRAINCTL_GANG_GENERATION).
  int32_t gang_generation = 0;
  // The failure the gang is restarting from, while its episode lasts.
  std::optional<RootCause> root_cause;
  // A gang restart is stopping the survivors, or waiting to start every replica again.
  bool gang_restarting = false;
  // The reports of SETTLING replicas, for deciding them later. In memory only: after a restart a
  // settling replica's report is rebuilt from its fields, without its output.
  std::map<std::string, v1::ReplicaExited> settling_reports;
  // Each pool's part of its launch messages (its argv and env), by pool name, built at the first
  // launch and shared by every launch of the job (PoolLaunchOf). Derived from the spec.
  mutable std::map<std::string, std::shared_ptr<const v1::LaunchReplica>> pool_launches;
  // How many times it was preempted, over all attempts.
  int32_t preemptions = 0;
  // The latest preemption. While the job is PENDING or RUNNING, the preemption is under way.
  std::optional<Preemption> preemption;
  // The last checkpoint a replica reported (ReportProgress.checkpoint, the progress file).
  std::optional<absl::Time> last_checkpoint;
  // How long it waited in the queue after its preemptions: scheduling.timeout does not count it.
  absl::Duration preempted_wait;
  // In memory only: of the stacks captured in attempt `first`, how many kept their texts
  // (Core::StacksCaptured keeps at most kStackTextsPerAttempt, then summaries only).
  std::pair<int32_t, int32_t> stacks_kept{0, 0};
  // Nodes it no longer uses (scheduling.stragglerAction REPLACE), in the order excluded.
  std::vector<std::string> excluded_nodes;
  // Held out of admission (HoldJob) by whom, why and since when; not admitted until released.
  bool held = false;
  std::string held_by;
  std::string hold_reason;
  std::optional<absl::Time> hold_time;
  // Each of spec.depends_on as it stands (dependencies.h), kept as the API shows it.
  std::vector<v1::DependencyStatus> dependencies;
  // A job array (spec.array set): never runs; its elements are jobs of their own (job_array.h).
  std::optional<JobArray> array;
  // An element of a job array.
  std::optional<ArrayMember> element;

  // The current attempt's number; 0 before the first placement.
  int32_t current_attempt() const { return attempts.empty() ? 0 : attempts.back().number; }
  Attempt* current() { return attempts.empty() ? nullptr : &attempts.back(); }
  const Replica* FindReplica(const std::string& name) const;
  Replica* FindReplica(const std::string& name);
  // The run id of `r`'s current run.
  std::string RunIdOf(const Replica& r) const;
};

// The whole demand of a job, every replica at once.
Res DemandOf(const Job& job);

// How many ports a replica of rank `rank` holds on its node: its own, and for the primary (rank
// 0) the rendezvous port too.
inline int32_t PortsNeeded(int32_t rank) { return rank == 0 ? 2 : 1; }

// The replica's pool, or nullptr.
const v1::WorkerPool* PoolOf(const Job& job, const Replica& r);

// A replica in one of these states holds its node's resources.
bool HoldsResources(v1::ReplicaState s);
// A replica in one of these states has (or may have) a live process.
bool IsLive(v1::ReplicaState s);
// A job in one of these states is admitted: it counts toward its project's running jobs.
bool IsAdmitted(v1::JobState s);
// PENDING or RUNNING: its replicas run, restart and move.
bool IsLive(v1::JobState s);

// --- Nodes, runs and events ------------------------------------------------------------------

// A node's availability and health as the core keeps it: the API Node's fields from `state` on
// (proto/trainctl/v1/job.proto, message Node), typed. What agents and operators report stays in
// its API message, kept as reported and shown as it is: the check runs (v1::CheckRun), the GPU
// inventory (v1::GpuDevice) and the maintenance windows (v1::MaintenanceWindow). Mapped to and
// from v1::Node only in model/model_proto.{h,cc}; persisted as that message's blob, so stored
// rows read the same as before.
struct NodeStatus {
  // Derived from the facts in Node and the fields below (node_health.h), with why and since when.
  v1::NodeState state = v1::NODE_STATE_UNSPECIFIED;
  v1::NodeHealth health = v1::NODE_HEALTH_UNSPECIFIED;
  // The last health or maintenance event, in words with its time.
  std::string health_description;
  std::string state_reason;
  // The epoch: never set.
  absl::Time state_time = absl::UnixEpoch();
  // An operator's (or a maintenance window's) hold: cordon or drain.
  bool cordoned = false;
  // Isolated too often within the flapping window: out until an operator uncordons it.
  bool flapping = false;
  // When it was isolated, within the flapping window, oldest first.
  std::vector<absl::Time> isolation_times;
  // The latest run of each check phase, as its agent reported it.
  std::vector<v1::CheckRun> checks;
  // The agent's check configuration and version, as it registered.
  std::map<std::string, std::string> config;
  std::string agent_version;
  // While DRAINING: the longest a replica gets to stop. Zero: its job's stopGracePeriod.
  absl::Duration drain_deadline = absl::ZeroDuration();
  // Its GPUs by index, as its agent reported them (holders are the book's, node_book.h).
  std::vector<v1::GpuDevice> gpu_devices;
  // The client certificate its agent last registered with; the epoch: no expiry known.
  std::string certificate_fingerprint;
  absl::Time certificate_expire_time = absl::UnixEpoch();
  // Fingerprints of its certificates an operator revoked.
  std::vector<std::string> revoked_certificates;
  // Reports its agent sent about other nodes' runs, ignored and counted.
  int64_t ignored_reports = 0;
  // Its upcoming (or current) maintenance window, and the one its agent reported last
  // (maintenance.h). nullopt: none.
  std::optional<v1::MaintenanceWindow> maintenance;
  std::optional<v1::MaintenanceWindow> agent_maintenance;
};

// The scheduler's view of one host and its agent.
struct Node {
  std::string name;
  // How replicas on other nodes reach this one (MASTER_ADDR, cluster spec).
  std::string address;
  // The port of its agent's fabric check listener on that host (Register.fabric_port); 0: none.
  // In memory only: each registration says it again.
  int32_t fabric_port = 0;
  Res capacity;
  Res allocatable;
  std::map<std::string, std::string> labels;
  // True while the node's agent holds a stream open.
  bool connected = false;
  // The agent process behind the current stream; changes when the agent restarts.
  std::string agent_instance;
  // When its agent last registered, and when it was last heard from (a heartbeat or any report).
  absl::Time registered = absl::UnixEpoch();
  absl::Time last_heartbeat = absl::UnixEpoch();
  // Availability and health: state, health, checks, operator holds, config, maintenance windows,
  // certificates (NodeStatus, above). Persisted as one v1::Node blob (model_proto.h).
  NodeStatus status;
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
  // LOST with its replicas not moved yet: when they move, once its agent has fenced them
  // (node_health.h). nullopt: no move pending. absl::InfiniteFuture(): a move is pending but its
  // time is not known yet (a node restored LOST: set at the first lost-timeout check). In memory
  // only (NodeRegistry::Restore).
  std::optional<absl::Time> move_at;
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
  // Who caused it through the API (a token's owner); "" for trainctl's own decisions.
  std::string actor;
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

// A message for one node's agent, sent after the commit. A launch leaves out its pool's argv and
// env: `pool` holds them once for every replica of the job (PoolLaunchOf), and Take() puts them
// back as the message is written, so a job's commands hold one copy of its spec, however many
// replicas it has.
struct Command {
  std::string node;
  v1::SchedulerMessage message;
  std::shared_ptr<const v1::LaunchReplica> pool = nullptr;

  // The message as the agent gets it. Leaves this command empty.
  v1::SchedulerMessage Take() &&;
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
  // Nodes deleted, with the certificate fingerprints revoked for each (they stay revoked).
  std::map<std::string, std::vector<std::string>> deleted_nodes;
  std::vector<Event> events;
  // Messages to send after the commit.
  std::vector<Command> commands;
  std::vector<v1::ReplicaStacks> stacks;  // captured before stops, to keep (Core::StacksCaptured)
  // Projects whose quota row changed.
  std::set<std::string> quotas;
  // Projects given their replica uid (project_uids.h) this turn.
  std::set<std::string> project_uids;
  // Projects' fair-share ledgers to write (fair_share.h: at most once a minute each).
  std::vector<UsageLedger> usage_ledgers;
  // Hourly accounting rows to write (usage_rollup.h: at most once a minute each, when a run of
  // theirs ends, and when their hour closes).
  std::vector<UsageHour> usage_hours;
  // Jobs deleted, with their attempts, runs and events.
  std::vector<std::string> deleted_jobs;
  // For metrics only; not part of empty(): nothing in it is persisted or sent.
  Tally tally;

  bool empty() const {
    return jobs.empty() && attempts.empty() && runs.empty() && nodes.empty() &&
           deleted_nodes.empty() && events.empty() && commands.empty() && quotas.empty() &&
           project_uids.empty() && usage_ledgers.empty() && usage_hours.empty() &&
           deleted_jobs.empty() && stacks.empty();
  }
};

// Appends an event to `fx`, of `job`'s current attempt; `job` is null for node and quota events.
void AddEvent(Effects* fx, absl::Time now, const Job* job, const std::string& replica,
              const std::string& node, const std::string& type, const std::string& reason);

// "<job id>/<attempt>/<replica name>/<restart>": the identity of one launched process.
std::string MakeRunId(const std::string& job_id, int32_t attempt, const std::string& replica,
                      int32_t restart);

// Splits a run id; false when it is malformed.
bool ParseRunId(const std::string& run_id, std::string* job_id, int32_t* attempt,
                std::string* replica, int32_t* restart);

// Milliseconds since the epoch, for events, runs and messages.
inline int64_t ToMs(absl::Time t) { return absl::ToUnixMillis(t); }
inline int64_t ToMs(absl::Duration d) { return absl::ToInt64Milliseconds(d); }
inline absl::Time FromMs(int64_t ms) { return absl::FromUnixMillis(ms); }

// --- Quotas ----------------------------------------------------------------------------------

// A project's quota: what its admitted jobs may hold at once, and how its queue is ordered. An
// unset limit is unlimited. The API's v1::Quota maps to it in model_proto.h (QuotaFromProto,
// QuotaToProto), which keeps what is unset apart from zero, so a stored row maps back the same.
struct Quota {
  std::string project;
  std::optional<int32_t> gpus;
  std::optional<double> cpu;
  std::optional<int64_t> memory_mb;
  std::optional<int32_t> max_running_jobs;
  // Projects with the same cohort may borrow each other's unused quota.
  std::string cohort;
  // The most this project may borrow beyond its own quota, per resource (unset: nothing, all
  // zero). `has_borrowing_limit` says whether the API set it, for mapping back only.
  Res borrowing_limit;
  bool has_borrowing_limit = false;
  v1::QueueingStrategy queueing_strategy = v1::QUEUEING_STRATEGY_UNSPECIFIED;
  // For BEST_EFFORT_FIFO: how long a blocked job may be overtaken; unset means the admission
  // queue's default (10m, admission_queue.cc).
  std::optional<absl::Duration> starvation_limit;
  // The user the project's replicas run as (see v1::Quota.run_as_user); "" for none.
  std::string run_as_user;
  // Preemption (v1::Quota.reclaim, preempt_within_project; victims.h): UNSPECIFIED is NEVER.
  v1::ReclaimPolicy reclaim = v1::RECLAIM_POLICY_UNSPECIFIED;
  v1::WithinProjectPreemption preempt_within_project = v1::WITHIN_PROJECT_PREEMPTION_UNSPECIFIED;
  // Fair share (v1::Quota.weight; fair_share.h): its share is its usage divided by this. Unset: 1.
  std::optional<double> weight;

  double WeightOr1() const { return weight.value_or(1.0); }
};

}  // namespace trainctl::sched
