#include "scheduler/job_lifecycle.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/elastic.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "scheduler/straggler_replace.h"

namespace trainctl::sched {
namespace {

// "JobRunning" for JOB_STATE_RUNNING: the event type of entering a state.
std::string EventTypeOf(v1::JobState state) {
  std::string name = EnumShortName(state);
  for (size_t i = 1; i < name.size(); ++i) name[i] = static_cast<char>(tolower(name[i]));
  return "Job" + name;
}

}  // namespace

UsageKey UsageKeyOf(const Job& job, const Replica& r) {
  std::map<std::string, std::string> labels(job.spec.labels().begin(), job.spec.labels().end());
  return UsageKey{job.project, job.creator, r.node, EncodeUsageLabels(labels)};
}

std::string When(absl::Time t) { return FormatRfc3339(ToMs(t)); }

void JobLifecycle::Restore() {
  fabric_.Restore();
  for (const auto& [id, job] : jobs_->all()) {
    for (const Replica& r : job.replicas) {
      if (!HoldsResources(r.state)) continue;
      binding_.Restore(job, r);
      queue_->Hold(UsageKeyOf(job, r), r.need);
    }
    if (IsAdmitted(job.state)) queue_->Admitted(job.project);
    // An array never runs (job_arrays.h): its elements are queued, not it.
    if (job.state == v1::JOB_STATE_QUEUED && !job.array) queue_->Enqueue(job);
  }
  queue_->Wake();
}

// --- The only writers of state -----------------------------------------------------------------

void JobLifecycle::SetReplicaState(Job* job, Replica* r, v1::ReplicaState state) {
  if (r->state == v1::REPLICA_STATE_SETTLING && state != v1::REPLICA_STATE_SETTLING) {
    job->settling_reports.erase(r->name);
  }
  const bool held = HoldsResources(r->state);
  const bool holds = HoldsResources(state);
  r->state = state;
  if (held && !holds) {
    binding_.Unbind(*r);
    queue_->Release(UsageKeyOf(*job, *r), r->need);
  } else if (!held && holds) {
    binding_.Bind(*job, r);
    // A run placed from the queue (a new attempt) waited since its submission or retry.
    const absl::Duration queue_wait =
        job->queue_time && job->current() != nullptr && job->current()->start_time
            ? *job->current()->start_time - *job->queue_time
            : absl::ZeroDuration();
    queue_->Hold(UsageKeyOf(*job, *r), r->need, /*run=*/true, queue_wait);
    jobs_->MarkActive(*job);
  }
}

void JobLifecycle::SetNode(const Job& job, Replica* r, const std::string& node) {
  // The project holds the same either way; only the node changes (and the rollup's key).
  const bool moves = HoldsResources(r->state) && r->node != node;
  if (moves) queue_->Release(UsageKeyOf(job, *r), r->need);
  binding_.Rebind(job, r, node);
  if (moves) queue_->Hold(UsageKeyOf(job, *r), r->need);
}

void JobLifecycle::SetJobState(Job* job, v1::JobState state, const std::string& reason,
                               absl::Time now, Effects* fx) {
  const v1::JobState from = job->state;
  job->state = state;
  if (IsAdmitted(from) && !IsAdmitted(state)) queue_->Released(job->project);
  if (!IsAdmitted(from) && IsAdmitted(state)) queue_->Admitted(job->project);
  if (!IsTerminal(from) && IsTerminal(state)) {
    fx->tally.ends.push_back({job->project, state});
    ended_.push_back(job->id);  // its dependents learn of it (Core::SettleDependencies)
  }
  Touch(job, now, fx);
  // An array is QUEUED in the core until it ends (job_arrays.h): its event names what it showed.
  const v1::JobState shown = job->array ? job->array->LiveState() : from;
  AddEvent(fx, now, job, "", "", EventTypeOf(state),
           absl::StrCat(EnumShortName(shown), " -> ", EnumShortName(state), ": ", reason));
  jobs_->RefreshActive(*job);
}

// --- Jobs --------------------------------------------------------------------------------------

const Job* JobLifecycle::Submit(v1::JobSpec spec, const std::string& checkpoint_root,
                                absl::Time now, Effects* fx, const std::string& id) {
  Job job;
  job.create_time = jobs_->NextCreateTime(now);
  job.id = id.empty() ? jobs_->NewId(job.create_time) : id;
  job.display_name = spec.display_name();
  job.project = spec.project();
  job.priority = spec.priority();
  job.state = v1::JOB_STATE_QUEUED;
  job.update_time = now;
  job.checkpoint_dir = spec.checkpoint_dir().empty() ? absl::StrCat(checkpoint_root, "/", job.id)
                                                     : spec.checkpoint_dir();
  int rank = 0;
  for (const v1::WorkerPool& pool : spec.worker_pools()) {
    for (int i = 0; i < pool.replica_count(); ++i) {
      Replica r;
      r.name = absl::StrCat(pool.name(), "-", i);
      r.pool = pool.name();
      r.index = i;
      r.rank = rank++;
      r.need = Res::FromProto(pool.resources());
      job.replicas.push_back(std::move(r));
    }
  }
  job.queue_reason = "waiting for the scheduler to place it";
  job.policy = RetryPolicy::ForJob(spec);
  job.spec = std::move(spec);
  AddEvent(fx, now, &job, "", "", "JobQueued",
           absl::StrCat("submitted with ", job.replicas.size(), " replicas in ",
                        job.spec.worker_pools_size(), " pools, project ", job.project));
  job.queue_time = now;
  Job* stored = jobs_->Insert(std::move(job));
  queue_->Enqueue(*stored);
  fx->jobs.insert(stored->id);
  return stored;
}

void JobLifecycle::Cancel(Job* job, absl::Time now, Effects* fx) {
  if (IsTerminal(job->state) || job->state == v1::JOB_STATE_CANCELLING) return;
  JobError error;
  error.code = absl::StatusCode::kCancelled;
  error.message = "Job cancelled by request.";
  if (job->state == v1::JOB_STATE_QUEUED) {
    End(job, v1::JOB_STATE_CANCELLED, error, "cancelled by request while queued", now, fx);
    return;
  }
  job->error = error;
  SetJobState(job, v1::JOB_STATE_CANCELLING, "cancel requested: stopping every replica", now, fx);
  StopLiveReplicas(job, "job cancelled", now, fx);
  MaybeFinishCancel(job, now, fx);
}

void JobLifecycle::End(Job* job, v1::JobState state, const JobError& error,
                       const std::string& reason, absl::Time now, Effects* fx) {
  if (error.code != absl::StatusCode::kOk) job->error = error;
  if (job->root_cause && job->error.replica == job->root_cause->replica) {
    job->error.consequences = job->root_cause->consequences;
  }
  job->end_time = now;
  job->gang_restarting = false;
  if (job->state == v1::JOB_STATE_QUEUED) {
    queue_->Dequeue(*job);
    job->queue_reason.clear();
    job->next_attempt_time.reset();
  }
  if (Attempt* attempt = job->current(); attempt != nullptr && !IsTerminal(attempt->state)) {
    attempt->state = state;
    attempt->reason = reason;
    attempt->end_time = now;
    fx->attempts.insert({job->id, attempt->number});
  }
  SetJobState(job, state, reason, now, fx);
  // A failed job's last replicas may show why (the others ended it: a peer's failure, a timeout).
  StopLiveReplicas(job, absl::StrCat("job ", EnumShortName(state)), now, fx,
                   state == v1::JOB_STATE_FAILED
                       ? job->policy.StacksBefore("attempt ended", /*gang_restart=*/false)
                       : "");
  jobs_->RefreshActive(*job);
  queue_->Wake();
}

void JobLifecycle::StopLiveReplicas(Job* job, const std::string& reason, absl::Time now,
                                    Effects* fx, const std::string& capture_stacks) {
  for (Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_RESTARTING || r.state == v1::REPLICA_STATE_PENDING ||
        r.state == v1::REPLICA_STATE_SETTLING || r.state == v1::REPLICA_STATE_CHECKING) {
      // No process to stop.
      SetReplicaState(job, &r, v1::REPLICA_STATE_STOPPED);
      r.next_start_time.reset();
      continue;
    }
    if (!IsLive(r.state)) continue;
    SetReplicaState(job, &r, v1::REPLICA_STATE_STOPPING);
    r.message = reason;
    SendStop(*job, r, absl::Milliseconds(job->policy.stop_grace_ms), reason, fx, capture_stacks);
    AddEvent(fx, now, job, r.name, r.node, "ReplicaStopping", reason);
    RecordRun(*job, r, fx);
  }
  Touch(job, now, fx);
}

void JobLifecycle::MaybeFinishCancel(Job* job, absl::Time now, Effects* fx) {
  if (job->state != v1::JOB_STATE_CANCELLING) return;
  for (const Replica& r : job->replicas) {
    if (HoldsResources(r.state)) return;
  }
  const JobError error = job->error;
  End(job, v1::JOB_STATE_CANCELLED, error, "cancelled by request; every replica stopped", now, fx);
}

void JobLifecycle::MaybeMarkRunning(Job* job, absl::Time now, Effects* fx) {
  if (job->state != v1::JOB_STATE_PENDING) return;
  for (const Replica& r : job->replicas) {
    const v1::ReplicaState s = r.state;
    if (s != v1::REPLICA_STATE_RUNNING && s != v1::REPLICA_STATE_SUCCEEDED &&
        s != v1::REPLICA_STATE_REMOVED) {
      return;
    }
  }
  if (!job->start_time) fx->tally.first_runs.push_back({job->project, now - job->create_time});
  if (!job->start_time) job->start_time = now;
  if (Attempt* attempt = job->current()) {
    attempt->state = v1::JOB_STATE_RUNNING;
    fx->attempts.insert({job->id, attempt->number});
  }
  SetJobState(job, v1::JOB_STATE_RUNNING,
              absl::StrCat("all ", WorldSize(*job), " replicas started"), now, fx);
}

void JobLifecycle::StartAttempt(Job* job, const std::vector<std::string>& placed, absl::Time now,
                                Effects* fx) {
  queue_->Dequeue(*job);
  // The time it waited after a preemption does not count toward scheduling.timeout.
  if (!job->attempts.empty() && job->attempts.back().decision == Decision::kPreempt &&
      job->queue_time) {
    job->preempted_wait += now - *job->queue_time;
  }
  Attempt attempt;
  attempt.number = static_cast<int32_t>(job->attempts.size()) + 1;
  attempt.state = v1::JOB_STATE_PENDING;
  attempt.start_time = now;
  const std::set<std::string> used_nodes(placed.begin(), placed.end());
  attempt.nodes.assign(used_nodes.begin(), used_nodes.end());
  job->attempts.push_back(std::move(attempt));
  fx->attempts.insert({job->id, job->attempts.back().number});
  // A gang over two or more nodes waits CHECKING for the fabric check first (fabric_checks.h).
  std::string unchecked;
  const bool check = fabric_.Wanted(*job, job->attempts.back().nodes, &unchecked);
  if (!unchecked.empty()) AddEvent(fx, now, job, "", "", "FabricCheckSkipped", unchecked);
  for (size_t i = 0; i < job->replicas.size(); ++i) {
    Replica* r = &job->replicas[i];
    SetNode(*job, r, placed[i]);
    SetReplicaState(job, r, check ? v1::REPLICA_STATE_CHECKING : v1::REPLICA_STATE_STARTING);
    r->restart_count = 0;
    r->charged_restarts = 0;
    r->exit_code.reset();
    r->signal.reset();
    r->oom_killed = false;
    r->pid = 0;
    r->start_time = now;  // the launch time until confirmed
    r->end_time.reset();
    r->ForgetProgress();
    r->next_start_time.reset();
    r->moves = 0;
    r->move_cause = MoveCause::kNone;
    r->move_reason.clear();
    r->message = check ? absl::StrCat("placed on ", r->node, "; waiting for the fabric check")
                       : absl::StrCat("launching on ", r->node);
  }
  // Fresh ports for the attempt, every replica's before any launch: each cluster spec lists all.
  binding_.RenewPorts(job);
  job->queue_reason.clear();
  job->next_attempt_time.reset();
  job->queue_time.reset();
  job->gang_generation = 0;
  job->gang_restarting = false;
  job->root_cause.reset();
  SetJobState(job, v1::JOB_STATE_PENDING,
              absl::StrCat("attempt ", job->attempts.back().number, " placed on ",
                           absl::StrJoin(used_nodes, ", "),
                           check ? "; checking the fabric between them before " : "; launching ",
                           job->replicas.size(), " replicas", check ? " start" : " in parallel"),
              now, fx);
  if (check) return fabric_.Start(job, job->attempts.back().nodes, now, fx);
  const GangView view = GangViewOf(*job, nodes_->nodes());
  for (const Replica& r : job->replicas) {
    RecordRun(*job, r, fx);
    SendLaunch(*job, r, view, fx);
  }
}

void JobLifecycle::ApplyStockout(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) {
  if (d.action == Decision::kFailJob) {
    AddEvent(fx, now, job, "", "", d.job_event_type, d.job_event);
    End(job, v1::JOB_STATE_FAILED, d.error, d.error.message, now, fx);
    return;
  }
  job->budgets_used = d.budgets_used;
  job->next_attempt_time = now + d.delay;
  timers_->WakeAt(*job->next_attempt_time);
  AddEvent(fx, now, job, "", "", d.job_event_type, d.job_event);
  Touch(job, now, fx);
}

void JobLifecycle::SetQueueReason(Job* job, const std::string& reason, absl::Time now,
                                  Effects* fx) {
  if (IsTerminal(job->state) || job->queue_reason == reason) return;
  job->queue_reason = reason;
  Touch(job, now, fx);
}

// --- Replicas ----------------------------------------------------------------------------------

void JobLifecycle::Started(Job* job, Replica* r, const v1::ReplicaStarted& started, absl::Time now,
                           Effects* fx) {
  if (r->state != v1::REPLICA_STATE_STARTING && r->state != v1::REPLICA_STATE_STOPPING) return;
  r->pid = started.pid();
  r->start_time = started.start_time_ms() > 0 ? FromMs(started.start_time_ms()) : now;
  if (r->state == v1::REPLICA_STATE_STARTING) {
    SetReplicaState(job, r, v1::REPLICA_STATE_RUNNING);
    r->message = absl::StrCat("running on ", r->node);
  }
  AddEvent(fx, now, job, r->name, r->node, "ReplicaStarted",
           absl::StrCat("process ", started.pid(), " started on ", r->node));
  Touch(job, now, fx);
  RecordRun(*job, *r, fx);
  MaybeMarkRunning(job, now, fx);
}

void JobLifecycle::RecordExit(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                              Effects* fx) {
  r->pid = 0;
  r->exit_code.reset();
  r->signal.reset();
  if (exited.has_exit_code()) r->exit_code = exited.exit_code();
  if (exited.has_signal()) r->signal = exited.signal();
  r->oom_killed = exited.oom_killed();
  r->end_time = exited.end_time_ms() > 0 ? FromMs(exited.end_time_ms()) : now;
  Touch(job, now, fx);
}

JobLifecycle::StopKind JobLifecycle::StopKindOf(const Job& job, const Replica& r,
                                                const v1::ReplicaExited& exited) const {
  if (Preempting(job)) return StopKind::kForPreemption;
  const bool live = IsLive(job.state);
  const bool stopping = r.state == v1::REPLICA_STATE_STOPPING;
  if (stopping && live && r.moving()) return StopKind::kForMove;
  if (stopping && live && job.gang_restarting) return StopKind::kForGang;
  // The only other stop of a replica of a live job is the hang detector's.
  if (stopping && live) return StopKind::kForHang;
  if (stopping || exited.stopped_by_request() || !live) return StopKind::kStopped;
  return StopKind::kNone;
}

bool JobLifecycle::FinishStop(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                              Effects* fx) {
  switch (StopKindOf(*job, *r, exited)) {
    case StopKind::kForMove:
      moves_.ContinueMove(job, r, now, fx);
      return true;
    case StopKind::kForGang:
      gang_.ConfirmStop(job, r, exited, now, fx);
      return true;
    case StopKind::kStopped:
      ConfirmStop(job, r, exited, now, fx);
      return true;
    case StopKind::kForPreemption:
      PreemptedExit(job, r, exited, now, fx);
      return true;
    case StopKind::kForHang:
    case StopKind::kNone:
      break;
  }
  return false;
}

void JobLifecycle::ConfirmStop(Job* job, Replica* r, const v1::ReplicaExited& exited,
                               absl::Time now, Effects* fx) {
  // trainctl asked for this stop (cancel, job end, retry): not a failure of the replica. One that
  // failed on its own before the stop reached it followed the failure being handled.
  if (job->root_cause && !IsCleanExit(exited) && !exited.stopped_by_request()) {
    gang_.AddConsequence(job, *r, DescribeExit(exited), now, fx);
  }
  SetReplicaState(job, r, v1::REPLICA_STATE_STOPPED);
  r->message = absl::StrCat("stopped (", r->message, ")");
  AddEvent(fx, now, job, r->name, r->node, "ReplicaStopped", "process stopped by trainctl");
  RecordRun(*job, *r, fx);
  MaybeFinishCancel(job, now, fx);
  jobs_->RefreshActive(*job);
  queue_->Wake();
}

void JobLifecycle::EndRun(Job* job, Replica* r, const Failure& failure, absl::Time now,
                          Effects* fx) {
  if (GangEpisodes::IsGang(*job)) {
    gang_.RunEnd(job, r, failure, now, fx);
    return;
  }
  Apply(job, r, DecideOnFailure(job->policy, *job, *r, failure, now), now, fx);
}

void JobLifecycle::Apply(Job* job, Replica* r, const RetryDecision& d, absl::Time now,
                         Effects* fx) {
  const bool ok = d.action == Decision::kSucceedJob || d.action == Decision::kContinue;
  SetReplicaState(job, r, ok ? v1::REPLICA_STATE_SUCCEEDED : v1::REPLICA_STATE_FAILED);
  if (!ok && d.action != Decision::kNone) fx->tally.failures.push_back({d.failure_class, d.action});
  r->message = d.replica_message;
  if (d.action == Decision::kMoveReplica) {
    r->move_cause = d.move_cause;
    r->move_reason = d.move_reason;
  }
  AddEvent(fx, now, job, r->name, r->node, d.event_type, d.explanation);
  RecordRun(*job, *r, fx);
  queue_->Wake();
  switch (d.action) {
    case Decision::kNone:
    case Decision::kContinue:
      MaybeMarkRunning(job, now, fx);
      break;
    case Decision::kSucceedJob:
      End(job, v1::JOB_STATE_SUCCEEDED, JobError(),
          absl::StrCat("primary replica ", r->name, " exited with status 0"), now, fx);
      break;
    case Decision::kRestartReplica:
      Restart(job, r, d, now, fx);
      break;
    case Decision::kRestartGang:
      gang_.Restart(job, r, d, now, fx);
      break;
    case Decision::kMoveReplica:
      if (GangEpisodes::IsGang(*job) && !job->gang_restarting) gang_.Restart(job, r, d, now, fx);
      // The restart may have ended the attempt: a peer that had to move found no room.
      if (IsLive(job->state)) PlaceMoved(job, r, now, fx, /*new_run=*/true);
      break;
    case Decision::kRetryJob:
    case Decision::kRedispatch:
      Retry(job, d, now, fx);
      break;
    case Decision::kFailJob:
      Fail(job, d, now, fx);
      break;
    case Decision::kPreempt:  // never the retry engine's: EndPreemptedAttempt decides it
      break;
  }
}

void JobLifecycle::Restart(Job* job, Replica* r, const RetryDecision& d, absl::Time now,
                           Effects* fx) {
  r->restart_count++;
  r->charged_restarts = d.charged_restarts;
  r->ForgetProgress();
  if (d.delay > absl::ZeroDuration()) {
    SetReplicaState(job, r, v1::REPLICA_STATE_RESTARTING);
    r->next_start_time = now + d.delay;
    timers_->WakeAt(*r->next_start_time);
    return;
  }
  LaunchOnItsNode(job, r, now, fx);
}

void JobLifecycle::LaunchOnItsNode(Job* job, Replica* r, absl::Time now, Effects* fx) {
  std::string why_not;
  if (!nodes_->KeepsReplicas(r->node, &why_not)) {
    // An in-place restart keeps its node only while that node keeps its replicas.
    r->move_cause = MoveCause::kNodeUnavailable;
    r->move_reason = why_not;
    PlaceMoved(job, r, now, fx, /*new_run=*/false);
    return;
  }
  if (ExcludedFor(*job, r->node, &why_not)) {  // nor one its job excluded: charged to nothing
    MarkExcludedMove(r, why_not);
    return PlaceMoved(job, r, now, fx, /*new_run=*/false);
  }
  SetReplicaState(job, r, v1::REPLICA_STATE_STARTING);
  if (r->port == 0) binding_.AllocatePorts(r);  // moved here, or its old ports were taken meanwhile
  r->next_start_time.reset();
  // Until the agent confirms, start_time is when the launch was sent (see launchTimeout).
  r->start_time = now;
  r->message = absl::StrCat("launching on ", r->node);
  Touch(job, now, fx);
  RecordRun(*job, *r, fx);
  SendLaunch(*job, *r, fx);
}

void JobLifecycle::RecordAttemptEnd(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) {
  Attempt* a = job->current();
  if (a == nullptr) return;
  const RetryPolicy& p = job->policy;
  a->state = v1::JOB_STATE_FAILED;
  a->reason = d.error.message;
  a->failure_class = d.failure_class;
  a->matched_rule = d.rule;
  a->replica = d.error.replica;
  a->node = d.error.node;
  a->decision = d.action;
  if (job->root_cause && job->root_cause->replica == d.error.replica) {
    a->consequences = job->root_cause->consequences;
  }
  const Budgets& used = d.budgets_used;
  a->budgets_left = Budgets{
      p.max_job_retries - used.job_retries, p.max_internal_retries - used.internal_retries,
      p.max_capacity_retries - used.capacity_retries, p.max_redispatches - used.redispatches};
  a->end_time = now;
  fx->attempts.insert({job->id, a->number});
}

void JobLifecycle::Retry(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) {
  if (!d.job_event_type.empty()) {
    AddEvent(fx, now, job, d.error.replica, d.error.node, d.job_event_type, d.job_event);
  }
  RecordAttemptEnd(job, d, now, fx);
  job->budgets_used = d.budgets_used;
  job->gang_restarting = false;
  StopLiveReplicas(job, "job retrying", now, fx,
                   job->policy.StacksBefore("attempt ended", /*gang_restart=*/false));
  elastic_.RestoreWorld(job);
  const absl::Time next = now + d.delay;
  job->next_attempt_time = next;
  job->queue_time = now;
  const size_t n = job->attempts.size();
  job->queue_reason = absl::StrCat("RETRY: attempt ", n + 1, " starts once attempt ", n,
                                   "'s replicas have stopped and its backoff ends at ", When(next));
  SetJobState(job, v1::JOB_STATE_QUEUED,
              absl::StrCat("attempt ", n, " failed (", FailureClassName(d.failure_class),
                           "): retrying as attempt ", n + 1),
              now, fx);
  queue_->Enqueue(*job);
  timers_->WakeAt(next);
  jobs_->RefreshActive(*job);
}

void JobLifecycle::Fail(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) {
  if (!d.job_event_type.empty()) {
    AddEvent(fx, now, job, d.error.replica, d.error.node, d.job_event_type, d.job_event);
  }
  RecordAttemptEnd(job, d, now, fx);
  End(job, v1::JOB_STATE_FAILED, d.error, d.error.message, now, fx);
}

void JobLifecycle::Redispatch(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) {
  if (d.action == Decision::kRedispatch) {
    Retry(job, d, now, fx);
  } else {
    Fail(job, d, now, fx);
  }
}

void JobLifecycle::PlaceMoved(Job* job, Replica* r, absl::Time now, Effects* fx, bool new_run) {
  moves_.PlaceMoved(job, r, now, fx, new_run);
}

bool JobLifecycle::WaitForRoom(Job* job, Replica* r, const std::string& room, bool new_run,
                               absl::Time now, Effects* fx) {
  return elastic_.WaitForRoom(job, r, room, new_run, now, fx);
}

void JobLifecycle::GrowBack(Job* job, absl::Time now, Effects* fx) {
  elastic_.GrowBack(job, now, fx);
}

absl::Status JobLifecycle::RequestGrow(Job* job, const std::string& actor, absl::Time now,
                                       Effects* fx) {
  return elastic_.RequestGrow(job, actor, now, fx);
}

void JobLifecycle::MoveReplicasOff(const std::string& node, MoveCause cause, const std::string& why,
                                   std::optional<absl::Duration> grace, bool node_gone,
                                   absl::Time now, Effects* fx) {
  moves_.MoveReplicasOff(node, cause, why, grace, node_gone, now, fx);
  // Moves free room on the node and may queue jobs again.
  queue_->Wake();
}

}  // namespace trainctl::sched
