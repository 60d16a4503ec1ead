#include "scheduler/core.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/time_util.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "scheduler/placement.h"

namespace trainctl::sched {
namespace {

// A replica in one of these states holds its node's resources.
bool HoldsResources(v1::ReplicaState s) {
  return s == v1::REPLICA_STATE_STARTING || s == v1::REPLICA_STATE_RUNNING ||
         s == v1::REPLICA_STATE_STOPPING;
}

// A replica in one of these states has (or may have) a live process.
bool IsLive(v1::ReplicaState s) {
  return s == v1::REPLICA_STATE_STARTING || s == v1::REPLICA_STATE_RUNNING;
}

const v1::WorkerPool* PoolOf(const v1::Job& job, const v1::Replica& r) {
  for (const v1::WorkerPool& p : job.spec().worker_pools()) {
    if (p.name() == r.pool()) return &p;
  }
  return nullptr;
}

Res NeedOf(const v1::Job& job, const v1::Replica& r) {
  const v1::WorkerPool* p = PoolOf(job, r);
  return p == nullptr ? Res{} : Res::FromProto(p->resources());
}

v1::Attempt* CurrentAttemptOf(v1::Job* job) {
  return job->attempts().empty() ? nullptr : job->mutable_attempts(job->attempts_size() - 1);
}

}  // namespace

Core::Core(CoreOptions options) : options_(std::move(options)) {
  rng_.seed(options_.id_seed != 0 ? options_.id_seed : std::random_device{}());
}

Core::QueueKey Core::KeyOf(const v1::Job& job) {
  return {-job.priority(), TimestampToMs(job.create_time()), job.id()};
}

void Core::Restore(std::vector<v1::Job> jobs, std::vector<Node> nodes,
                   const std::vector<ReplicaRun>& runs) {
  for (Node& n : nodes) {
    n.connected = false;
    nodes_[n.name] = std::move(n);
  }
  for (v1::Job& job : jobs) {
    std::string id = job.id();
    by_age_.insert({-TimestampToMs(job.create_time()), id});
    if (job.state() == v1::JOB_STATE_QUEUED) queue_.insert(KeyOf(job));
    RefreshActive(job);
    jobs_[id] = std::move(job);
  }
  for (const ReplicaRun& run : runs) run_nodes_[run.run_id] = run.node;
  schedule_needed_ = true;
}

std::string Core::NewJobId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (;;) {
    std::string id = "j-";
    for (int i = 0; i < 10; ++i) id += kAlphabet[rng_() % 36];
    if (jobs_.find(id) == jobs_.end()) return id;
  }
}

// --- API inputs ------------------------------------------------------------------------------

absl::StatusOr<v1::Job> Core::SubmitJob(const v1::JobSpec& spec_in, int64_t now, Effects* fx) {
  absl::Status valid = ValidateJobSpec(spec_in);
  if (!valid.ok()) return valid;
  v1::JobSpec spec = spec_in;
  ApplyDefaults(&spec);
  std::vector<Node> known;
  for (const auto& [name, node] : nodes_) known.push_back(node);
  for (int p = 0; p < spec.worker_pools_size(); ++p) {
    absl::Status fits =
        CheckFitsLargestNode(absl::StrCat("workerPools[", p, "].resources"),
                             Res::FromProto(spec.worker_pools(p).resources()), known);
    if (!fits.ok()) return fits;
  }

  v1::Job job;
  job.set_id(NewJobId());
  job.set_display_name(spec.display_name());
  job.set_project(spec.project());
  job.set_priority(spec.priority());
  job.set_state(v1::JOB_STATE_QUEUED);
  *job.mutable_create_time() = MsToTimestamp(now);
  *job.mutable_update_time() = MsToTimestamp(now);
  job.set_checkpoint_dir(spec.checkpoint_dir().empty()
                             ? absl::StrCat(options_.checkpoint_root, "/", job.id())
                             : spec.checkpoint_dir());
  int rank = 0;
  for (const v1::WorkerPool& pool : spec.worker_pools()) {
    for (int i = 0; i < pool.replica_count(); ++i) {
      v1::Replica* r = job.add_replicas();
      r->set_name(absl::StrCat(pool.name(), "-", i));
      r->set_pool(pool.name());
      r->set_index(i);
      r->set_rank(rank++);
      r->set_state(v1::REPLICA_STATE_PENDING);
    }
  }
  job.set_queue_reason("waiting for the scheduler to place it");
  *job.mutable_spec() = std::move(spec);

  const std::string id = job.id();
  AddEvent(fx, now, &job, "", "", "JobQueued",
           absl::StrCat("submitted with ", job.replicas_size(), " replicas in ",
                        job.spec().worker_pools_size(), " pools, project ", job.project()));
  queue_.insert(KeyOf(job));
  by_age_.insert({-now, id});
  jobs_[id] = std::move(job);
  fx->jobs.insert(id);
  schedule_needed_ = true;
  return jobs_[id];
}

absl::StatusOr<v1::Job> Core::CancelJob(const std::string& id, int64_t now, Effects* fx) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  v1::Job* job = &it->second;
  if (IsTerminal(job->state()) || job->state() == v1::JOB_STATE_CANCELLING) return *job;
  v1::JobError error;
  error.set_code(1);  // CANCELLED
  error.set_message("Job cancelled by request.");
  if (job->state() == v1::JOB_STATE_QUEUED) {
    EndJob(job, v1::JOB_STATE_CANCELLED, error, "cancelled by request while queued", now, fx);
    return *job;
  }
  *job->mutable_error() = error;
  SetJobState(job, v1::JOB_STATE_CANCELLING, "cancel requested: stopping every replica", now, fx);
  StopLiveReplicas(job, "job cancelled", now, fx);
  MaybeFinishCancel(job, now, fx);
  return *job;
}

// --- Agent inputs ----------------------------------------------------------------------------

v1::RegisterAck Core::AgentRegistered(const v1::Register& reg, int64_t now, Effects* fx) {
  Node& node = nodes_[reg.node()];
  const bool known_before = !node.name.empty();
  const bool same_agent = known_before && node.agent_instance == reg.agent_instance();
  node.name = reg.node();
  node.address = reg.address();
  node.capacity = Res::FromProto(reg.capacity());
  node.allocatable = Res::FromProto(reg.allocatable());
  node.labels = {reg.labels().begin(), reg.labels().end()};
  node.connected = true;
  node.agent_instance = reg.agent_instance();
  node.registered_ms = now;
  node.last_heartbeat_ms = now;
  fx->nodes.insert(node.name);
  AddEvent(fx, now, nullptr, "", node.name, known_before ? "NodeReconnected" : "NodeRegistered",
           absl::StrCat(same_agent ? "agent reconnected" : "agent registered", " with ",
                        reg.allocatable().cpu(), " cpu, ", reg.allocatable().memory_mb(), " MiB, ",
                        reg.allocatable().gpus(), " gpus allocatable; reports ", reg.runs_size(),
                        " runs"));

  // Runs the agent knows: adopt the wanted ones, stop the rest.
  std::set<std::string> known_runs;
  for (const v1::KnownRun& run : reg.runs()) {
    known_runs.insert(run.run_id());
    auto [job, r] = CurrentRun(run.run_id());
    if (job == nullptr || r->node() != node.name || IsTerminal(r->state())) {
      if (run.running()) {
        v1::SchedulerMessage msg;
        msg.mutable_stop()->set_run_id(run.run_id());
        msg.mutable_stop()->set_grace_period_ms(kDefaultStopGraceMs);
        msg.mutable_stop()->set_reason("the scheduler no longer wants this run");
        fx->commands.push_back({node.name, std::move(msg)});
        AddEvent(fx, now, nullptr, "", node.name, "OrphanStopped",
                 absl::StrCat("run ", run.run_id(), " is not wanted any more; stopping it"));
      }
      continue;
    }
    if (r->state() == v1::REPLICA_STATE_STARTING && run.running()) {
      r->set_state(v1::REPLICA_STATE_RUNNING);
      r->set_pid(run.pid());
      r->set_message(absl::StrCat("re-adopted on ", node.name));
      Touch(job, now, fx);
      RecordRun(*job, *r, fx);
      MaybeMarkRunning(job, now, fx);
    } else if (r->state() == v1::REPLICA_STATE_STOPPING && run.running()) {
      SendStop(*job, *r, r->message(), fx);
    }
  }

  // Runs the scheduler placed here that the agent does not know.
  for (const std::string& id : std::vector<std::string>(active_.begin(), active_.end())) {
    v1::Job* job = &jobs_[id];
    for (int i = 0; i < job->replicas_size(); ++i) {
      v1::Replica* r = job->mutable_replicas(i);
      if (r->node() != node.name || !HoldsResources(r->state())) continue;
      if (known_runs.count(RunIdOf(*job, *r)) > 0) continue;
      if (r->state() == v1::REPLICA_STATE_STARTING) {
        SendLaunch(*job, i, fx);  // the launch never reached the agent
      } else if (r->state() == v1::REPLICA_STATE_STOPPING) {
        r->set_state(v1::REPLICA_STATE_STOPPED);
        *r->mutable_end_time() = MsToTimestamp(now);
        r->set_pid(0);
        Touch(job, now, fx);
        RecordRun(*job, *r, fx);
        MaybeFinishCancel(job, now, fx);
      } else {
        ExitOutcome out = DecideOnLostReplica(*job, *r, node.name);
        r->set_state(v1::REPLICA_STATE_FAILED);
        r->set_pid(0);
        r->set_message(out.summary);
        *r->mutable_end_time() = MsToTimestamp(now);
        AddEvent(fx, now, job, r->name(), node.name, "ReplicaLost", out.summary);
        RecordRun(*job, *r, fx);
        ApplyExitOutcome(job, r, out, now, fx);
      }
    }
  }
  schedule_needed_ = true;
  v1::RegisterAck ack;
  ack.set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  return ack;
}

void Core::AgentDisconnected(const std::string& name, int64_t now, Effects* fx) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() || !it->second.connected) return;
  it->second.connected = false;
  fx->nodes.insert(name);
  AddEvent(fx, now, nullptr, "", name, "NodeDisconnected",
           "the agent's stream closed; its replicas keep running until it reconnects");
}

void Core::Heartbeat(const std::string& name, int64_t now) {
  auto it = nodes_.find(name);
  if (it != nodes_.end()) it->second.last_heartbeat_ms = now;
}

void Core::ReplicaStarted(const std::string& node, const v1::ReplicaStarted& started, int64_t now,
                          Effects* fx) {
  auto [job, r] = CurrentRun(started.run_id());
  if (job == nullptr || r->node() != node) return;  // stale or duplicate report
  if (r->state() != v1::REPLICA_STATE_STARTING && r->state() != v1::REPLICA_STATE_STOPPING) return;
  r->set_pid(started.pid());
  *r->mutable_start_time() =
      MsToTimestamp(started.start_time_ms() > 0 ? started.start_time_ms() : now);
  if (r->state() == v1::REPLICA_STATE_STARTING) {
    r->set_state(v1::REPLICA_STATE_RUNNING);
    r->set_message(absl::StrCat("running on ", node));
  }
  AddEvent(fx, now, job, r->name(), node, "ReplicaStarted",
           absl::StrCat("process ", started.pid(), " started on ", node));
  Touch(job, now, fx);
  RecordRun(*job, *r, fx);
  MaybeMarkRunning(job, now, fx);
}

void Core::ReplicaExited(const std::string& node, const v1::ReplicaExited& exited, int64_t now,
                         Effects* fx) {
  auto [job, r] = CurrentRun(exited.run_id());
  if (job == nullptr || r->node() != node || IsTerminal(r->state())) return;  // duplicate
  r->set_pid(0);
  r->clear_exit_code();
  r->clear_signal();
  if (exited.has_exit_code()) r->set_exit_code(exited.exit_code());
  if (exited.has_signal()) r->set_signal(exited.signal());
  *r->mutable_end_time() = MsToTimestamp(exited.end_time_ms() > 0 ? exited.end_time_ms() : now);
  Touch(job, now, fx);

  if (r->state() == v1::REPLICA_STATE_STOPPING || exited.stopped_by_request() ||
      IsTerminal(job->state())) {
    // trainctl asked for this stop (or the job already ended): not a failure of the replica.
    r->set_state(v1::REPLICA_STATE_STOPPED);
    r->set_message(absl::StrCat("stopped (", r->message(), ")"));
    AddEvent(fx, now, job, r->name(), node, "ReplicaStopped", "process stopped by trainctl");
    RecordRun(*job, *r, fx);
    MaybeFinishCancel(job, now, fx);
    RefreshActive(*job);
    schedule_needed_ = true;
    return;
  }
  ExitOutcome out = DecideOnExit(*job, *r, exited);
  const bool ok = exited.has_exit_code() && exited.exit_code() == 0 && !exited.launch_failed();
  r->set_state(ok ? v1::REPLICA_STATE_SUCCEEDED : v1::REPLICA_STATE_FAILED);
  r->set_message(out.summary);
  AddEvent(fx, now, job, r->name(), node, "ReplicaExited", out.summary);
  RecordRun(*job, *r, fx);
  ApplyExitOutcome(job, r, out, now, fx);
  schedule_needed_ = true;
}

void Core::ApplyExitOutcome(v1::Job* job, v1::Replica* r, const ExitOutcome& out, int64_t now,
                            Effects* fx) {
  switch (out.decision) {
    case ExitDecision::kNothing:
      MaybeMarkRunning(job, now, fx);
      break;
    case ExitDecision::kSucceedJob:
      EndJob(job, v1::JOB_STATE_SUCCEEDED, v1::JobError(),
             absl::StrCat("primary replica ", r->name(), " exited with status 0"), now, fx);
      break;
    case ExitDecision::kFailJob:
      EndJob(job, v1::JOB_STATE_FAILED, out.error, out.error.message(), now, fx);
      break;
  }
}

// --- Time and placement ----------------------------------------------------------------------

void Core::Tick(int64_t now, Effects* fx) {
  for (const std::string& id : std::vector<std::string>(active_.begin(), active_.end())) {
    v1::Job* job = &jobs_[id];
    if (job->state() != v1::JOB_STATE_RUNNING && job->state() != v1::JOB_STATE_PENDING) continue;
    const int64_t limit = DurationToMs(job->spec().scheduling().timeout());
    const int64_t started = TimestampToMs(job->start_time());
    if (limit <= 0 || started <= 0 || now < started + limit) continue;
    v1::JobError error;
    error.set_code(4);  // DEADLINE_EXCEEDED
    error.set_message(absl::StrCat("Job exceeded its timeout of ", limit / 1000,
                                   "s (scheduling.timeout) and was stopped."));
    EndJob(job, v1::JOB_STATE_FAILED, error, error.message(), now, fx);
  }
}

void Core::Schedule(int64_t now, Effects* fx) {
  if (!schedule_needed_) return;
  schedule_needed_ = false;
  for (const QueueKey& key : std::vector<QueueKey>(queue_.begin(), queue_.end())) {
    v1::Job* job = &jobs_[std::get<2>(key)];
    if (StartAttempt(job, now, fx)) queue_.erase(key);
  }
}

std::map<std::string, Core::NodeUsage> Core::Usage() const {
  std::map<std::string, NodeUsage> usage;
  for (const std::string& id : active_) {
    const v1::Job& job = jobs_.at(id);
    for (const v1::Replica& r : job.replicas()) {
      if (!HoldsResources(r.state())) continue;
      NodeUsage& u = usage[r.node()];
      u.used += NeedOf(job, r);
      u.replicas++;
    }
  }
  return usage;
}

bool Core::StartAttempt(v1::Job* job, int64_t now, Effects* fx) {
  std::vector<ReplicaDemand> demands;
  for (const v1::Replica& r : job->replicas()) demands.push_back({r.name(), NeedOf(*job, r)});
  std::map<std::string, NodeUsage> usage = Usage();
  std::vector<NodeFree> free;
  for (const auto& [name, node] : nodes_) {
    if (!node.connected) continue;
    Res f = node.allocatable;
    f -= usage[name].used;
    free.push_back({name, f});
  }
  absl::StatusOr<std::vector<std::string>> placed = PlaceGang(demands, free);
  if (!placed.ok()) {
    std::string reason = free.empty() ? "CAPACITY: no node is connected"
                                      : absl::StrCat("CAPACITY: ", placed.status().message());
    if (job->queue_reason() != reason) {
      job->set_queue_reason(reason);
      Touch(job, now, fx);
    }
    return false;
  }
  v1::Attempt* attempt = job->add_attempts();
  attempt->set_number(job->attempts_size());
  attempt->set_state(v1::JOB_STATE_PENDING);
  *attempt->mutable_start_time() = MsToTimestamp(now);
  std::set<std::string> used_nodes(placed->begin(), placed->end());
  for (const std::string& n : used_nodes) attempt->add_nodes(n);
  fx->attempts.insert({job->id(), attempt->number()});
  for (int i = 0; i < job->replicas_size(); ++i) {
    v1::Replica* r = job->mutable_replicas(i);
    r->set_node((*placed)[i]);
    r->set_state(v1::REPLICA_STATE_STARTING);
    r->set_restart_count(0);
    r->clear_exit_code();
    r->clear_signal();
    r->set_pid(0);
    r->clear_start_time();
    r->clear_end_time();
    r->set_message(absl::StrCat("launching on ", r->node()));
  }
  job->clear_queue_reason();
  active_.insert(job->id());
  SetJobState(
      job, v1::JOB_STATE_PENDING,
      absl::StrCat("attempt ", attempt->number(), " placed on ", absl::StrJoin(used_nodes, ", "),
                   "; launching ", job->replicas_size(), " replicas in parallel"),
      now, fx);
  for (int i = 0; i < job->replicas_size(); ++i) {
    RecordRun(*job, job->replicas(i), fx);
    SendLaunch(*job, i, fx);
  }
  return true;
}

// --- Job state helpers -----------------------------------------------------------------------

void Core::SetJobState(v1::Job* job, v1::JobState state, const std::string& reason, int64_t now,
                       Effects* fx) {
  const v1::JobState from = job->state();
  job->set_state(state);
  Touch(job, now, fx);
  AddEvent(fx, now, job, "", "", absl::StrCat("Job", ShortName(state)),
           absl::StrCat(ShortName(from), " -> ", ShortName(state), ": ", reason));
}

void Core::EndJob(v1::Job* job, v1::JobState state, const v1::JobError& error,
                  const std::string& reason, int64_t now, Effects* fx) {
  if (error.code() != 0) *job->mutable_error() = error;
  *job->mutable_end_time() = MsToTimestamp(now);
  if (job->state() == v1::JOB_STATE_QUEUED) {
    queue_.erase(KeyOf(*job));
    job->clear_queue_reason();
  }
  if (v1::Attempt* attempt = CurrentAttemptOf(job)) {
    if (!IsTerminal(attempt->state())) {
      attempt->set_state(state);
      attempt->set_reason(reason);
      *attempt->mutable_end_time() = MsToTimestamp(now);
      fx->attempts.insert({job->id(), attempt->number()});
    }
  }
  SetJobState(job, state, reason, now, fx);
  StopLiveReplicas(job, absl::StrCat("job ", ShortName(state)), now, fx);
  for (v1::Replica& r : *job->mutable_replicas()) {
    if (r.state() == v1::REPLICA_STATE_PENDING) r.set_state(v1::REPLICA_STATE_STOPPED);
  }
  RefreshActive(*job);
  schedule_needed_ = true;
}

void Core::StopLiveReplicas(v1::Job* job, const std::string& reason, int64_t now, Effects* fx) {
  for (v1::Replica& r : *job->mutable_replicas()) {
    if (!IsLive(r.state())) continue;
    r.set_state(v1::REPLICA_STATE_STOPPING);
    r.set_message(reason);
    SendStop(*job, r, reason, fx);
    AddEvent(fx, now, job, r.name(), r.node(), "ReplicaStopping", reason);
    RecordRun(*job, r, fx);
  }
  Touch(job, now, fx);
}

void Core::MaybeFinishCancel(v1::Job* job, int64_t now, Effects* fx) {
  if (job->state() != v1::JOB_STATE_CANCELLING) return;
  for (const v1::Replica& r : job->replicas()) {
    if (HoldsResources(r.state())) return;
  }
  v1::JobError error = job->error();
  EndJob(job, v1::JOB_STATE_CANCELLED, error, "cancelled by request; every replica stopped", now,
         fx);
}

void Core::MaybeMarkRunning(v1::Job* job, int64_t now, Effects* fx) {
  if (job->state() != v1::JOB_STATE_PENDING) return;
  for (const v1::Replica& r : job->replicas()) {
    const bool started =
        r.state() == v1::REPLICA_STATE_RUNNING || r.state() == v1::REPLICA_STATE_SUCCEEDED;
    if (!started) return;
  }
  if (!job->has_start_time()) *job->mutable_start_time() = MsToTimestamp(now);
  if (v1::Attempt* attempt = CurrentAttemptOf(job)) {
    attempt->set_state(v1::JOB_STATE_RUNNING);
    fx->attempts.insert({job->id(), attempt->number()});
  }
  SetJobState(job, v1::JOB_STATE_RUNNING,
              absl::StrCat("all ", job->replicas_size(), " replicas started"), now, fx);
}

void Core::SendLaunch(const v1::Job& job, int replica_index, Effects* fx) {
  v1::SchedulerMessage msg;
  *msg.mutable_launch() = BuildLaunch(job, replica_index, nodes_);
  run_nodes_[msg.launch().run_id()] = job.replicas(replica_index).node();
  fx->commands.push_back({job.replicas(replica_index).node(), std::move(msg)});
}

void Core::SendStop(const v1::Job& job, const v1::Replica& r, const std::string& reason,
                    Effects* fx) {
  v1::SchedulerMessage msg;
  msg.mutable_stop()->set_run_id(RunIdOf(job, r));
  msg.mutable_stop()->set_grace_period_ms(
      static_cast<int32_t>(DurationToMs(job.spec().scheduling().stop_grace_period())));
  msg.mutable_stop()->set_reason(reason);
  fx->commands.push_back({r.node(), std::move(msg)});
}

void Core::RecordRun(const v1::Job& job, const v1::Replica& r, Effects* fx) {
  ReplicaRun run;
  run.run_id = RunIdOf(job, r);
  run.job_id = job.id();
  run.attempt = CurrentAttempt(job);
  run.replica = r.name();
  run.restart = r.restart_count();
  run.node = r.node();
  run.state = r.state();
  run.pid = r.pid();
  if (r.has_exit_code()) run.exit_code = r.exit_code();
  if (r.has_signal()) run.signal = r.signal();
  run.message = r.message();
  run.start_ms = TimestampToMs(r.start_time());
  run.end_ms = TimestampToMs(r.end_time());
  fx->runs.push_back(std::move(run));
}

void Core::AddEvent(Effects* fx, int64_t now, const v1::Job* job, const std::string& replica,
                    const std::string& node, const std::string& type, const std::string& reason) {
  Event e;
  e.time_ms = now;
  if (job != nullptr) {
    e.job_id = job->id();
    e.attempt = CurrentAttempt(*job);
  }
  e.replica = replica;
  e.node = node;
  e.type = type;
  e.reason = reason;
  fx->events.push_back(std::move(e));
}

void Core::RefreshActive(const v1::Job& job) {
  bool holds = job.state() == v1::JOB_STATE_PENDING || job.state() == v1::JOB_STATE_RUNNING ||
               job.state() == v1::JOB_STATE_CANCELLING;
  for (const v1::Replica& r : job.replicas()) holds |= HoldsResources(r.state());
  if (holds) {
    active_.insert(job.id());
  } else {
    active_.erase(job.id());
  }
}

void Core::Touch(v1::Job* job, int64_t now, Effects* fx) {
  *job->mutable_update_time() = MsToTimestamp(now);
  fx->jobs.insert(job->id());
}

// --- Lookups ---------------------------------------------------------------------------------

v1::Replica* Core::FindReplica(v1::Job* job, const std::string& name) {
  for (v1::Replica& r : *job->mutable_replicas()) {
    if (r.name() == name) return &r;
  }
  return nullptr;
}

int32_t Core::CurrentAttempt(const v1::Job& job) const {
  return job.attempts().empty() ? 0 : job.attempts(job.attempts_size() - 1).number();
}

std::string Core::RunIdOf(const v1::Job& job, const v1::Replica& r) const {
  return MakeRunId(job.id(), CurrentAttempt(job), r.name(), r.restart_count());
}

std::pair<v1::Job*, v1::Replica*> Core::CurrentRun(const std::string& run_id) {
  std::string job_id, replica;
  int32_t attempt = 0, restart = 0;
  if (!ParseRunId(run_id, &job_id, &attempt, &replica, &restart)) return {nullptr, nullptr};
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || CurrentAttempt(it->second) != attempt) return {nullptr, nullptr};
  v1::Replica* r = FindReplica(&it->second, replica);
  if (r == nullptr || r->restart_count() != restart) return {nullptr, nullptr};
  return {&it->second, r};
}

const v1::Job* Core::FindJob(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Node* Core::FindNode(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

absl::StatusOr<std::vector<const v1::Job*>> Core::ListJobs(const ListJobsQuery& q,
                                                           std::string* next_page_token) const {
  int32_t size = q.page_size == 0 ? 100 : q.page_size;
  if (size < 1 || size > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("pageSize must be 1..1000, got ", size));
  }
  auto it = by_age_.begin();
  if (!q.page_token.empty()) {
    std::pair<std::string, std::string> parts =
        absl::StrSplit(q.page_token, absl::MaxSplits(':', 1));
    int64_t neg_ms = 0;
    if (!absl::SimpleAtoi(parts.first, &neg_ms) || parts.second.empty()) {
      return absl::InvalidArgumentError("pageToken is not one this server returned");
    }
    it = by_age_.upper_bound({neg_ms, parts.second});
  }
  std::vector<const v1::Job*> out;
  next_page_token->clear();
  for (; it != by_age_.end(); ++it) {
    const v1::Job& job = jobs_.at(it->second);
    if (!q.states.empty() && q.states.count(job.state()) == 0) continue;
    if (!q.project.empty() && job.project() != q.project) continue;
    if (static_cast<int32_t>(out.size()) == size) {
      // There is more: the token names the last job returned.
      const v1::Job& last = *out.back();
      *next_page_token = absl::StrCat(-TimestampToMs(last.create_time()), ":", last.id());
      break;
    }
    out.push_back(&job);
  }
  return out;
}

absl::Status Core::LocateRun(const std::string& job_id, const std::string& replica, int32_t attempt,
                             int32_t restart, std::string* node, std::string* run_id,
                             bool* finished) const {
  const v1::Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  const v1::Replica* r = nullptr;
  for (const v1::Replica& x : job->replicas()) {
    if (x.name() == replica) r = &x;
  }
  if (r == nullptr) {
    std::vector<std::string> names;
    for (const v1::Replica& x : job->replicas()) names.push_back(x.name());
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no replica \"", replica,
                                            "\"; its replicas are ", absl::StrJoin(names, ", ")));
  }
  const int32_t current = CurrentAttempt(*job);
  if (current == 0) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has not started yet (",
                                                      ShortName(job->state()), "): no logs"));
  }
  const int32_t a = attempt == 0 ? current : attempt;
  const int32_t n = restart >= 0 ? restart : (a == current ? r->restart_count() : 0);
  *run_id = MakeRunId(job_id, a, replica, n);
  auto it = run_nodes_.find(*run_id);
  if (it == run_nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("no run ", *run_id, " (attempt ", a, ", restart ", n,
                                            ") of replica ", replica));
  }
  *node = it->second;
  *finished = !(a == current && n == r->restart_count() && !IsTerminal(r->state()));
  return absl::OkStatus();
}

}  // namespace trainctl::sched
