#include "scheduler/core.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/time_util.h"
#include "scheduler/core_internal.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "scheduler/placement.h"

namespace trainctl::sched {

using namespace internal;

Core::Core(CoreOptions options) : options_(std::move(options)) {
  rng_.seed(options_.id_seed != 0 ? options_.id_seed : std::random_device{}());
}

Core::QueueKey Core::KeyOf(const v1::Job& job) {
  return {job.attempts().empty() ? 1 : 0, -job.priority(), TimestampToMs(job.create_time()),
          job.id()};
}

void Core::Restore(std::vector<v1::Job> jobs, std::vector<Node> nodes,
                   const std::vector<ReplicaRun>& runs, std::vector<v1::Quota> quotas) {
  for (v1::Quota& q : quotas) quotas_[q.project()] = std::move(q);
  for (Node& n : nodes) {
    n.connected = false;
    n.lost = n.status.state() == v1::NODE_STATE_LOST;
    n.draining = n.status.state() == v1::NODE_STATE_DRAINING;
    nodes_[n.name] = std::move(n);
  }
  for (v1::Job& job : jobs) {
    std::string id = job.id();
    by_age_.insert({-TimestampToMs(job.create_time()), id});
    last_create_ms_ = std::max(last_create_ms_, TimestampToMs(job.create_time()));
    v1::Job& stored = jobs_[id] = std::move(job);
    if (stored.state() == v1::JOB_STATE_QUEUED) Enqueue(stored);
    RefreshActive(stored);
  }
  for (const ReplicaRun& run : runs) run_nodes_[run.run_id] = run.node;
  schedule_needed_ = true;
  restored_ = true;
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
  // Creation times are unique and increasing, so submission order is exact even for jobs
  // submitted within one millisecond.
  const int64_t created = std::max(now, last_create_ms_ + 1);
  last_create_ms_ = created;
  *job.mutable_create_time() = MsToTimestamp(created);
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
  *job.mutable_queue_time() = MsToTimestamp(now);
  Enqueue(job);
  by_age_.insert({-created, id});
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
    Dequeue(*job);
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

std::vector<std::string> Core::ActiveIds() const {
  std::vector<std::string> ids;
  ids.reserve(active_.size());
  for (const auto& [id, job] : active_) ids.push_back(id);
  return ids;
}

void Core::RefreshActive(const v1::Job& job) {
  bool holds = job.state() == v1::JOB_STATE_PENDING || job.state() == v1::JOB_STATE_RUNNING ||
               job.state() == v1::JOB_STATE_CANCELLING;
  for (const v1::Replica& r : job.replicas()) holds |= HoldsResources(r.state());
  if (holds) {
    active_[job.id()] = &jobs_.at(job.id());
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
