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
         s == v1::REPLICA_STATE_STOPPING || s == v1::REPLICA_STATE_RESTARTING;
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

// "JobRunning" for JOB_STATE_RUNNING: the event type of entering a state.
std::string EventTypeOf(v1::JobState state) {
  std::string name = ShortName(state);
  for (size_t i = 1; i < name.size(); ++i) name[i] = static_cast<char>(tolower(name[i]));
  return "Job" + name;
}

v1::Attempt* CurrentAttemptOf(v1::Job* job) {
  return job->attempts().empty() ? nullptr : job->mutable_attempts(job->attempts_size() - 1);
}

}  // namespace

Core::Core(CoreOptions options) : options_(std::move(options)) {
  rng_.seed(options_.id_seed != 0 ? options_.id_seed : std::random_device{}());
}

Core::QueueKey Core::KeyOf(const v1::Job& job) {
  return {job.attempts().empty() ? 1 : 0, -job.priority(), TimestampToMs(job.create_time()),
          job.id()};
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
      } else if (r->state() == v1::REPLICA_STATE_RUNNING) {
        r->set_pid(0);
        *r->mutable_end_time() = MsToTimestamp(now);
        Failure lost;
        lost.kind = Failure::Kind::kLost;
        HandleRunEnd(job, r, lost, now, fx);
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
  r->set_oom_killed(exited.oom_killed());
  *r->mutable_end_time() = MsToTimestamp(exited.end_time_ms() > 0 ? exited.end_time_ms() : now);
  Touch(job, now, fx);

  const bool job_live =
      job->state() == v1::JOB_STATE_PENDING || job->state() == v1::JOB_STATE_RUNNING;
  if (r->state() == v1::REPLICA_STATE_STOPPING && job_live) {
    // The only stop of a replica of a live job is the hang detector's: restart it as hung.
    Failure hung;
    hung.kind = Failure::Kind::kHung;
    hung.report = exited;
    HandleRunEnd(job, r, hung, now, fx);
    return;
  }
  if (r->state() == v1::REPLICA_STATE_STOPPING || exited.stopped_by_request() || !job_live) {
    // trainctl asked for this stop (cancel, job end, retry): not a failure of the replica.
    r->set_state(v1::REPLICA_STATE_STOPPED);
    r->set_message(absl::StrCat("stopped (", r->message(), ")"));
    AddEvent(fx, now, job, r->name(), node, "ReplicaStopped", "process stopped by trainctl");
    RecordRun(*job, *r, fx);
    MaybeFinishCancel(job, now, fx);
    RefreshActive(*job);
    schedule_needed_ = true;
    return;
  }
  Failure failure;
  failure.report = exited;
  HandleRunEnd(job, r, failure, now, fx);
}

void Core::HandleRunEnd(v1::Job* job, v1::Replica* r, const Failure& failure, int64_t now,
                        Effects* fx) {
  RetryDecision d =
      DecideOnFailure(RetryPolicy::FromSpec(job->spec().scheduling()), *job, *r, failure, now);
  const bool ok = d.action == RetryAction::kSucceedJob || d.action == RetryAction::kNothing;
  r->set_state(ok ? v1::REPLICA_STATE_SUCCEEDED : v1::REPLICA_STATE_FAILED);
  r->set_message(d.failure_class.empty() ? d.summary
                                         : absl::StrCat(d.summary, " (", d.failure_class, ")"));
  const char* type = failure.kind == Failure::Kind::kExit   ? "ReplicaExited"
                     : failure.kind == Failure::Kind::kHung ? "ReplicaHung"
                     : failure.kind == Failure::Kind::kLost ? "ReplicaLost"
                                                            : "LaunchTimedOut";
  AddEvent(fx, now, job, r->name(), r->node(), type, d.explanation);
  RecordRun(*job, *r, fx);
  schedule_needed_ = true;
  switch (d.action) {
    case RetryAction::kNothing:
      MaybeMarkRunning(job, now, fx);
      break;
    case RetryAction::kSucceedJob:
      EndJob(job, v1::JOB_STATE_SUCCEEDED, v1::JobError(),
             absl::StrCat("primary replica ", r->name(), " exited with status 0"), now, fx);
      break;
    case RetryAction::kRestartReplica:
      RestartReplica(job, r, d, now, fx);
      break;
    case RetryAction::kRetryJob:
      RetryJob(job, d, now, fx);
      break;
    case RetryAction::kFailJob:
      RecordAttemptEnd(job, d, "FAIL_JOB", now, fx);
      EndJob(job, v1::JOB_STATE_FAILED, d.error, d.error.message(), now, fx);
      break;
  }
}

void Core::RestartReplica(v1::Job* job, v1::Replica* r, const RetryDecision& d, int64_t now,
                          Effects* fx) {
  r->set_restart_count(r->restart_count() + 1);
  r->set_charged_restarts(d.charged_restarts);
  r->clear_last_progress_time();
  if (d.delay_ms > 0) {
    r->set_state(v1::REPLICA_STATE_RESTARTING);
    *r->mutable_next_start_time() = MsToTimestamp(now + d.delay_ms);
    next_wakeup_ms_ =
        next_wakeup_ms_ == 0 ? now + d.delay_ms : std::min(next_wakeup_ms_, now + d.delay_ms);
    return;
  }
  for (int i = 0; i < job->replicas_size(); ++i) {
    if (job->mutable_replicas(i) == r) LaunchOnItsNode(job, i, now, fx);
  }
}

void Core::LaunchOnItsNode(v1::Job* job, int replica_index, int64_t now, Effects* fx) {
  v1::Replica* r = job->mutable_replicas(replica_index);
  r->set_state(v1::REPLICA_STATE_STARTING);
  r->clear_next_start_time();
  // Until the agent confirms, start_time is when the launch was sent (see launchTimeout).
  *r->mutable_start_time() = MsToTimestamp(now);
  r->set_message(absl::StrCat("launching on ", r->node()));
  Touch(job, now, fx);
  RecordRun(*job, *r, fx);
  SendLaunch(*job, replica_index, fx);
}

void Core::RecordAttemptEnd(v1::Job* job, const RetryDecision& d, const std::string& decision,
                            int64_t now, Effects* fx) {
  v1::Attempt* a = CurrentAttemptOf(job);
  if (a == nullptr) return;
  const v1::Scheduling& s = job->spec().scheduling();
  a->set_state(v1::JOB_STATE_FAILED);
  a->set_reason(d.error.message());
  a->set_failure_class(d.failure_class);
  a->set_matched_rule(d.rule);
  a->set_replica(d.error.replica());
  a->set_node(d.error.node());
  a->set_decision(decision);
  const v1::Budgets& used = decision == "RETRY_JOB" ? d.budgets_used : job->budgets_used();
  a->mutable_budgets_left()->set_job_retries(s.max_job_retries() - used.job_retries());
  a->mutable_budgets_left()->set_internal_retries(s.max_internal_retries() -
                                                  used.internal_retries());
  a->mutable_budgets_left()->set_capacity_retries(s.max_capacity_retries() -
                                                  used.capacity_retries());
  *a->mutable_end_time() = MsToTimestamp(now);
  fx->attempts.insert({job->id(), a->number()});
}

void Core::RetryJob(v1::Job* job, const RetryDecision& d, int64_t now, Effects* fx) {
  RecordAttemptEnd(job, d, "RETRY_JOB", now, fx);
  *job->mutable_budgets_used() = d.budgets_used;
  StopLiveReplicas(job, "job retrying", now, fx);
  *job->mutable_next_attempt_time() = MsToTimestamp(now + d.delay_ms);
  *job->mutable_queue_time() = MsToTimestamp(now);
  job->set_queue_reason(absl::StrCat(
      "RETRY: attempt ", job->attempts_size() + 1, " starts once attempt ", job->attempts_size(),
      "'s replicas have stopped and its backoff ends at ", FormatRfc3339(now + d.delay_ms)));
  SetJobState(job, v1::JOB_STATE_QUEUED,
              absl::StrCat("attempt ", job->attempts_size(), " failed (", d.failure_class,
                           "): retrying as attempt ", job->attempts_size() + 1),
              now, fx);
  queue_.insert(KeyOf(*job));
  next_wakeup_ms_ =
      next_wakeup_ms_ == 0 ? now + d.delay_ms : std::min(next_wakeup_ms_, now + d.delay_ms);
  RefreshActive(*job);
}

void Core::ReplicaProgress(const std::string& node, const v1::ReplicaProgress& progress,
                           int64_t now, Effects* fx) {
  auto [job, r] = CurrentRun(progress.run_id());
  if (job == nullptr || r->node() != node || r->state() != v1::REPLICA_STATE_RUNNING) return;
  const int64_t t = std::min(progress.time_ms() > 0 ? progress.time_ms() : now, now);
  if (t <= TimestampToMs(r->last_progress_time())) return;
  *r->mutable_last_progress_time() = MsToTimestamp(t);
  Touch(job, now, fx);
}

absl::Status Core::ReportProgress(const std::string& job_id, const std::string& replica,
                                  int64_t now, Effects* fx) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  v1::Replica* r = FindReplica(&it->second, replica);
  if (r == nullptr) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no replica \"", replica, "\""));
  }
  if (r->state() != v1::REPLICA_STATE_RUNNING) {
    return absl::FailedPreconditionError(
        absl::StrCat("replica ", replica, " is ", ShortName(r->state()), ", not RUNNING"));
  }
  *r->mutable_last_progress_time() = MsToTimestamp(now);
  Touch(&it->second, now, fx);
  return absl::OkStatus();
}

// --- Time and placement ----------------------------------------------------------------------

void Core::Tick(int64_t now, Effects* fx) {
  if (next_wakeup_ms_ != 0 && now >= next_wakeup_ms_) {
    next_wakeup_ms_ = 0;
    schedule_needed_ = true;
  }
  for (const std::string& id : std::vector<std::string>(active_.begin(), active_.end())) {
    v1::Job* job = &jobs_[id];
    if (job->state() != v1::JOB_STATE_RUNNING && job->state() != v1::JOB_STATE_PENDING) continue;
    const RetryPolicy policy = RetryPolicy::FromSpec(job->spec().scheduling());
    const int64_t limit = DurationToMs(job->spec().scheduling().timeout());
    const int64_t started = TimestampToMs(job->start_time());
    if (limit > 0 && started > 0 && now >= started + limit) {
      v1::JobError error;
      error.set_code(4);  // DEADLINE_EXCEEDED
      error.set_reason("DEADLINE");
      error.set_message(absl::StrCat("Job exceeded its timeout of ", limit / 1000,
                                     "s (scheduling.timeout) and was stopped."));
      EndJob(job, v1::JOB_STATE_FAILED, error, error.message(), now, fx);
      continue;
    }
    for (int i = 0; i < job->replicas_size() && !IsTerminal(job->state()) &&
                    job->state() != v1::JOB_STATE_QUEUED;
         ++i) {
      v1::Replica* r = job->mutable_replicas(i);
      const int64_t run_start = TimestampToMs(r->start_time());
      if (r->state() == v1::REPLICA_STATE_RESTARTING) {
        const int64_t due = TimestampToMs(r->next_start_time());
        if (now >= due) {
          LaunchOnItsNode(job, i, now, fx);
        } else {
          next_wakeup_ms_ = next_wakeup_ms_ == 0 ? due : std::min(next_wakeup_ms_, due);
        }
      } else if (r->state() == v1::REPLICA_STATE_STARTING && policy.launch_timeout_ms > 0 &&
                 run_start > 0 && now - run_start >= policy.launch_timeout_ms) {
        Failure f;
        f.kind = Failure::Kind::kLaunchTimeout;
        HandleRunEnd(job, r, f, now, fx);
      } else if (r->state() == v1::REPLICA_STATE_RUNNING && policy.hang_timeout_ms > 0) {
        const int64_t last = std::max(run_start, TimestampToMs(r->last_progress_time()));
        if (last > 0 && now - last >= policy.hang_timeout_ms) {
          r->set_state(v1::REPLICA_STATE_STOPPING);
          r->set_message(absl::StrCat("hung: no progress since ", FormatRfc3339(last)));
          SendStop(*job, *r, "hung: no progress within hangTimeout", fx);
          AddEvent(fx, now, job, r->name(), r->node(), "ReplicaStopping",
                   absl::StrCat("no progress since ", FormatRfc3339(last),
                                " (hangTimeout): stopping it to restart it"));
          Touch(job, now, fx);
        }
      }
    }
  }
}

void Core::Schedule(int64_t now, Effects* fx) {
  if (!schedule_needed_) return;
  schedule_needed_ = false;
  for (const QueueKey& key : std::vector<QueueKey>(queue_.begin(), queue_.end())) {
    v1::Job* job = &jobs_[std::get<3>(key)];
    // A retry waits for its backoff and for the last attempt's replicas to be gone.
    const int64_t not_before = TimestampToMs(job->next_attempt_time());
    if (not_before > now) {
      next_wakeup_ms_ = next_wakeup_ms_ == 0 ? not_before : std::min(next_wakeup_ms_, not_before);
      continue;
    }
    bool stopping = false;
    for (const v1::Replica& r : job->replicas()) {
      auto node = nodes_.find(r.node());
      stopping |= HoldsResources(r.state()) && node != nodes_.end() && node->second.connected;
    }
    if (stopping) continue;  // their exits will schedule again
    if (StartAttempt(job, now, fx)) queue_.erase(key);
  }
}

bool Core::CheckCapacity(v1::Job* job, const std::vector<ReplicaDemand>& demands,
                         const std::string& missing, int64_t now, Effects* fx) {
  // Only a cluster too small even when idle is a stockout; waiting behind running jobs is not.
  std::vector<NodeFree> idle;
  for (const auto& [name, node] : nodes_) {
    if (node.connected) idle.push_back({name, node.allocatable});
  }
  absl::StatusOr<std::vector<std::string>> fits = PlaceGang(demands, idle);
  if (fits.ok()) {
    stockout_since_.erase(job->id());
    return false;
  }
  auto [it, inserted] = stockout_since_.insert({job->id(), now});
  const RetryPolicy policy = RetryPolicy::FromSpec(job->spec().scheduling());
  const int64_t deadline = it->second + policy.placement_timeout_ms;
  if (now < deadline) {
    next_wakeup_ms_ = next_wakeup_ms_ == 0 ? deadline : std::min(next_wakeup_ms_, deadline);
    return false;
  }
  stockout_since_.erase(it);
  const int used = job->budgets_used().capacity_retries();
  const std::string what = idle.empty() ? "no node is connected" : missing;
  if (used >= policy.max_capacity_retries) {
    v1::JobError error = CapacityError(what);
    AddEvent(fx, now, job, "", "", "CapacityExhausted",
             absl::StrCat("no healthy capacity within placementTimeout after ", used,
                          " capacity retries (maxCapacityRetries ", policy.max_capacity_retries,
                          "): ", what));
    EndJob(job, v1::JOB_STATE_FAILED, error, error.message(), now, fx);
    return true;
  }
  job->mutable_budgets_used()->set_capacity_retries(used + 1);
  const int64_t delay = BackoffDelayMs(policy.retry_backoff, used + 1);
  *job->mutable_next_attempt_time() = MsToTimestamp(now + delay);
  next_wakeup_ms_ = next_wakeup_ms_ == 0 ? now + delay : std::min(next_wakeup_ms_, now + delay);
  AddEvent(
      fx, now, job, "", "", "CapacityRetry",
      absl::StrCat("no healthy capacity within placementTimeout: ", what, "; capacity retry ",
                   used + 1, " of ", policy.max_capacity_retries, " in ", delay / 1000.0, "s"));
  Touch(job, now, fx);
  return true;
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
    std::string missing(placed.status().message());
    if (CheckCapacity(job, demands, missing, now, fx)) return IsTerminal(job->state());
    std::string reason =
        free.empty() ? "CAPACITY: no node is connected" : absl::StrCat("CAPACITY: ", missing);
    if (job->queue_reason() != reason) {
      job->set_queue_reason(reason);
      Touch(job, now, fx);
    }
    return false;
  }
  stockout_since_.erase(job->id());
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
    r->set_charged_restarts(0);
    r->clear_exit_code();
    r->clear_signal();
    r->set_oom_killed(false);
    r->set_pid(0);
    *r->mutable_start_time() = MsToTimestamp(now);  // the launch time until confirmed
    r->clear_end_time();
    r->clear_last_progress_time();
    r->clear_next_start_time();
    r->set_message(absl::StrCat("launching on ", r->node()));
  }
  job->clear_queue_reason();
  job->clear_next_attempt_time();
  job->clear_queue_time();
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
  AddEvent(fx, now, job, "", "", EventTypeOf(state),
           absl::StrCat(ShortName(from), " -> ", ShortName(state), ": ", reason));
}

void Core::EndJob(v1::Job* job, v1::JobState state, const v1::JobError& error,
                  const std::string& reason, int64_t now, Effects* fx) {
  if (error.code() != 0) *job->mutable_error() = error;
  *job->mutable_end_time() = MsToTimestamp(now);
  if (job->state() == v1::JOB_STATE_QUEUED) {
    queue_.erase(KeyOf(*job));
    job->clear_queue_reason();
    job->clear_next_attempt_time();
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
  stockout_since_.erase(job->id());
  RefreshActive(*job);
  schedule_needed_ = true;
}

void Core::StopLiveReplicas(v1::Job* job, const std::string& reason, int64_t now, Effects* fx) {
  for (v1::Replica& r : *job->mutable_replicas()) {
    if (r.state() == v1::REPLICA_STATE_RESTARTING || r.state() == v1::REPLICA_STATE_PENDING) {
      // No process to stop.
      r.set_state(v1::REPLICA_STATE_STOPPED);
      r.clear_next_start_time();
      continue;
    }
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
