// Core: inputs from agents, and what happens when a replica's run ends.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/core_internal.h"
#include "scheduler/job_validation.h"

namespace trainctl::sched {

using namespace internal;

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
  node.shutting_down = false;
  node.agent_instance = reg.agent_instance();
  node.registered_ms = now;
  node.last_heartbeat_ms = now;
  node.status.set_agent_version(reg.agent_version());
  node.status.mutable_config()->clear();
  node.status.mutable_config()->insert(reg.config().begin(), reg.config().end());
  fx->nodes.insert(node.name);
  AddEvent(fx, now, nullptr, "", node.name, known_before ? "NodeReconnected" : "NodeRegistered",
           absl::StrCat(same_agent ? "agent reconnected" : "agent registered", " with ",
                        reg.allocatable().cpu(), " cpu, ", reg.allocatable().memory_mb(), " MiB, ",
                        reg.allocatable().gpus(), " gpus allocatable; reports ", reg.runs_size(),
                        " runs"));
  // The runs it reports are reconciled below; stale ones it does not report are gone.
  node.stale_runs.clear();
  if (node.lost) {
    NodeReturned(&node, "its agent registered again", now, fx);
  } else {
    RefreshNode(&node, known_before ? "its agent reconnected" : "its agent registered", now, fx);
  }
  if (reg.has_startup()) ApplyCheckRun(node.name, reg.startup(), now, fx);

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
  for (const std::string& id : ActiveIds()) {
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

void Core::Heartbeat(const std::string& name, int64_t now, Effects* fx) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  it->second.last_heartbeat_ms = now;
  if (it->second.lost && it->second.connected) {
    NodeReturned(&it->second, "its agent is heard from again", now, fx);
  }
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
  // The host's verdict counts even for a stale run: every host that failed is isolated (R16).
  if (exited.has_checks()) ApplyCheckRun(node, exited.checks(), now, fx);
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
  if (r->state() == v1::REPLICA_STATE_STOPPING && job_live && !r->move_reason().empty()) {
    // A move's graceful stop has finished: start it elsewhere.
    r->set_state(v1::REPLICA_STATE_STOPPED);
    AddEvent(fx, now, job, r->name(), node, "ReplicaStopped",
             absl::StrCat("process stopped to move (", r->move_reason(), ")"));
    RecordRun(*job, *r, fx);
    PlaceMovedReplica(job, IndexOf(*job, *r), now, fx);
    return;
  }
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
  if (exited.node_shutdown()) {
    // The agent is going away (systemd stop, host maintenance): move the replica at once rather
    // than after the lost timeout, and place nothing new on the node until it registers again.
    auto n = nodes_.find(node);
    if (n != nodes_.end() && !n->second.shutting_down) {
      n->second.shutting_down = true;
      n->second.status.set_health_description(absl::StrCat(
          "The host had a maintenance event at ", FormatRfc3339(now), ": its agent shut down"));
      AddEvent(fx, now, nullptr, "", node, "NodeShutdown",
               "its agent is shutting down; moving its replicas to other nodes");
      RefreshNode(&n->second, "its agent is shutting down", now, fx);
    }
    r->set_state(v1::REPLICA_STATE_FAILED);
    r->set_move_reason(absl::StrCat("node ", node, "'s agent shut down"));
    r->set_message(absl::StrCat("stopped by its node's shutdown; moving"));
    AddEvent(fx, now, job, r->name(), node, "ReplicaExited",
             absl::StrCat(DescribeExit(exited), " because node ", node,
                          "'s agent shut down: moving it (not charged)"));
    RecordRun(*job, *r, fx);
    PlaceMovedReplica(job, IndexOf(*job, *r), now, fx);
    return;
  }
  const bool host_fault =
      exited.preflight_failed() || (exited.has_checks() && !exited.checks().passed() &&
                                    !exited.stopped_by_request() && !IsCleanExit(exited));
  if (host_fault) {
    // R16 scenarios 1-3: the host failed its checks; the user's code is not to blame.
    r->set_state(v1::REPLICA_STATE_FAILED);
    v1::JobError cause;
    cause.set_code(14);  // UNAVAILABLE
    cause.set_reason("HOST_FAULT");
    cause.set_replica(r->name());
    cause.set_node(node);
    cause.set_output_tail(exited.output_tail());
    if (exited.preflight_failed()) {
      r->set_message(absl::StrCat("node ", node, " failed its preflight check (HOST_FAULT)"));
      cause.set_message(absl::StrCat("Replica ", r->name(), " could not start: node ", node,
                                     " failed its preflight check: ", FailedItems(exited.checks()),
                                     "."));
    } else {
      r->set_message(absl::StrCat(DescribeExit(exited), " on a failing host (HOST_FAULT)"));
      cause.set_message(
          absl::StrCat("Replica ", r->name(), " ", DescribeExit(exited), " while node ", node,
                       " failed its health check: ", FailedItems(exited.checks()), "."));
    }
    AddEvent(fx, now, job, r->name(), node, "ReplicaExited",
             absl::StrCat(cause.message(), " Classed as a host fault: isolating the node"));
    RecordRun(*job, *r, fx);
    Redispatch(job, cause, /*charged=*/true, now, fx);
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
      RetryJob(job, d, "RETRY_JOB", now, fx);
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
  LaunchOnItsNode(job, IndexOf(*job, *r), now, fx);
}

void Core::LaunchOnItsNode(v1::Job* job, int replica_index, int64_t now, Effects* fx) {
  v1::Replica* r = job->mutable_replicas(replica_index);
  auto node = nodes_.find(r->node());
  if (node == nodes_.end() || !KeepsReplicas(node->second)) {
    // An in-place restart keeps its node only while that node keeps its replicas.
    r->set_move_reason(absl::StrCat(
        "node ", r->node(), " is ",
        node == nodes_.end() ? std::string("unknown") : ShortName(DeriveState(node->second)),
        node != nodes_.end() && !node->second.connected ? " and disconnected" : ""));
    PlaceMovedReplica(job, replica_index, now, fx, /*new_run=*/false);
    return;
  }
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
  const v1::Budgets& used = decision == "FAIL_JOB" ? job->budgets_used() : d.budgets_used;
  a->mutable_budgets_left()->set_job_retries(s.max_job_retries() - used.job_retries());
  a->mutable_budgets_left()->set_internal_retries(s.max_internal_retries() -
                                                  used.internal_retries());
  a->mutable_budgets_left()->set_capacity_retries(s.max_capacity_retries() -
                                                  used.capacity_retries());
  a->mutable_budgets_left()->set_redispatches(job->spec().fault_tolerance().job_retry_num() -
                                              used.redispatches());
  *a->mutable_end_time() = MsToTimestamp(now);
  fx->attempts.insert({job->id(), a->number()});
}

void Core::RetryJob(v1::Job* job, const RetryDecision& d, const std::string& decision, int64_t now,
                    Effects* fx) {
  RecordAttemptEnd(job, d, decision, now, fx);
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
  Enqueue(*job);
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

}  // namespace trainctl::sched
