// Core: node availability and health — checks, cordon and drain, lost nodes, replica moves and
// re-dispatch (R11-R19).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/core_internal.h"
#include "scheduler/job_validation.h"
#include "scheduler/node_health.h"

namespace trainctl::sched {

using namespace internal;

namespace {

constexpr size_t kMaxReasonLength = 1024;
// JobError.code of a host fault: UNAVAILABLE.
constexpr int kHostFaultCode = 14;

std::string DescribeNeed(const Res& need) {
  return absl::StrCat(need.cpu, " cpu, ", need.memory_mb, " MiB, ", need.gpus, " gpus");
}

}  // namespace

// --- Views -----------------------------------------------------------------------------------

v1::Node Core::NodeView(const Node& n, const NodeUsage& usage) const {
  v1::Node out = n.status;
  out.set_name(n.name);
  out.set_address(n.address);
  out.set_connected(n.connected);
  *out.mutable_capacity() = ToProto(n.capacity);
  *out.mutable_allocatable() = ToProto(n.allocatable);
  Res free = n.allocatable;
  free -= usage.used;
  *out.mutable_free() = ToProto(free);
  out.set_replicas(usage.replicas);
  out.mutable_labels()->insert(n.labels.begin(), n.labels.end());
  *out.mutable_last_heartbeat_time() = MsToTimestamp(n.last_heartbeat_ms);
  *out.mutable_register_time() = MsToTimestamp(n.registered_ms);
  return out;
}

absl::StatusOr<v1::Node> Core::GetNode(const std::string& name) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
  std::map<std::string, NodeUsage> usage = Usage();
  return NodeView(it->second, usage[name]);
}

std::vector<v1::Node> Core::ListNodes() const {
  std::map<std::string, NodeUsage> usage = Usage();
  std::vector<v1::Node> out;
  for (const auto& [name, n] : nodes_) out.push_back(NodeView(n, usage[name]));
  return out;
}

// --- State -----------------------------------------------------------------------------------

void Core::RefreshNode(Node* node, const std::string& reason, int64_t now, Effects* fx) {
  const v1::NodeState state = DeriveState(*node);
  const v1::NodeHealth health = DeriveHealth(*node);
  fx->nodes.insert(node->name);
  if (health != node->status.health()) node->status.set_health(health);
  if (state == node->status.state()) return;
  node->status.set_state(state);
  node->status.set_state_reason(reason);
  *node->status.mutable_state_time() = MsToTimestamp(now);
  schedule_needed_ = true;
}

void Core::NodeReturned(Node* node, const std::string& how, int64_t now, Effects* fx) {
  node->lost = false;
  node->status.set_health_description(
      absl::StrCat("The host rejoined at ", FormatRfc3339(now), " after it was lost"));
  AddEvent(fx, now, nullptr, "", node->name, "NodeReturned",
           absl::StrCat(how,
                        " after the node was lost; runs moved elsewhere meanwhile are "
                        "stopped on it"));
  for (const std::string& run_id : node->stale_runs) {
    v1::SchedulerMessage msg;
    msg.mutable_stop()->set_run_id(run_id);
    msg.mutable_stop()->set_grace_period_ms(kDefaultStopGraceMs);
    msg.mutable_stop()->set_reason("moved to another node while this node was lost");
    fx->commands.push_back({node->name, std::move(msg)});
  }
  node->stale_runs.clear();
  RefreshNode(node, how, now, fx);
}

void Core::ApplyCheckRun(const std::string& name, const v1::CheckRun& run_in, int64_t now,
                         Effects* fx) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  Node& node = it->second;
  v1::CheckRun run = run_in;
  if (!run.has_time()) *run.mutable_time() = MsToTimestamp(now);
  const CheckOutcome out = RecordCheckRun(options_.nodes, run, now, &node);
  const std::string when = FormatRfc3339(TimestampToMs(run.time()));
  std::string reason;
  if (!run.passed()) {
    reason = absl::StrCat(run.phase(), " check failed: ", FailedItems(run));
    node.status.set_health_description(absl::StrCat("The host failed its ", run.phase(),
                                                    " check at ", when, ": ", FailedItems(run)));
    if (out.isolated) {
      AddEvent(fx, now, nullptr, "", name, "NodeIsolated",
               absl::StrCat(reason, "; no new work until its checks pass again"));
    } else {
      AddEvent(fx, now, nullptr, "", name, "NodeCheckFailed", reason);
    }
    if (out.became_flapping) {
      AddEvent(
          fx, now, nullptr, "", name, "NodeFlapping",
          absl::StrCat("isolated ", node.status.isolation_times_size(), " times within ",
                       FormatDuration(options_.nodes.flap_window_ms),
                       ": stays out until an operator runs `trainctl node uncordon ", name, "`"));
      reason =
          absl::StrCat("flapping (isolated ", node.status.isolation_times_size(), " times within ",
                       FormatDuration(options_.nodes.flap_window_ms), "); last: ", reason);
    }
  } else if (out.recovered) {
    node.status.set_health_description(
        absl::StrCat("The host passed its ", run.phase(), " check again at ", when));
    if (node.status.flapping()) {
      reason = absl::StrCat(
          "flapping: its checks pass again, but it stays out until an operator "
          "runs `trainctl node uncordon ",
          name, "`");
      node.status.set_state_reason(reason);  // still ISOLATED: RefreshNode keeps the old one
    } else {
      reason = absl::StrCat("its ", run.phase(), " check passed again");
    }
    AddEvent(fx, now, nullptr, "", name, "NodeHealthy", reason);
  }
  RefreshNode(&node, reason, now, fx);
}

void Core::CheckReported(const std::string& node, const v1::CheckRun& run, int64_t now,
                         Effects* fx) {
  ApplyCheckRun(node, run, now, fx);
  auto it = nodes_.find(node);
  if (it == nodes_.end() || run.passed() || run.phase() != "periodic") return;
  if (DeriveState(it->second) != v1::NODE_STATE_ISOLATED) return;
  MoveReplicasOff(node,
                  absl::StrCat("node ", node, " failed its periodic check: ", FailedItems(run)), -1,
                  /*node_gone=*/false, now, fx);
}

// --- Operators -------------------------------------------------------------------------------

absl::StatusOr<v1::Node> Core::CordonNode(const std::string& name, const std::string& reason,
                                          int64_t now, Effects* fx) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
  if (reason.size() > kMaxReasonLength) {
    return absl::InvalidArgumentError(absl::StrCat("reason must be at most ", kMaxReasonLength,
                                                   " characters, got ", reason.size()));
  }
  Node& node = it->second;
  if (!node.status.cordoned()) {
    node.status.set_cordoned(true);
    const std::string why = reason.empty() ? "cordoned by an operator"
                                           : absl::StrCat("cordoned by an operator: ", reason);
    AddEvent(fx, now, nullptr, "", name, "NodeCordoned", why);
    RefreshNode(&node, why, now, fx);
  }
  return GetNode(name);
}

absl::StatusOr<v1::Node> Core::UncordonNode(const std::string& name, int64_t now, Effects* fx) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
  Node& node = it->second;
  const bool held = node.status.cordoned() || node.draining || node.status.flapping();
  node.status.set_cordoned(false);
  node.status.set_flapping(false);
  node.status.clear_isolation_times();
  node.status.clear_drain_deadline();
  node.draining = false;
  std::string why = "uncordoned by an operator";
  if (FailingChecks(node.status)) {
    why = absl::StrCat("uncordoned by an operator; stays out until its checks pass");
    if (node.connected) {
      v1::SchedulerMessage msg;
      msg.mutable_run_checks();
      fx->commands.push_back({name, std::move(msg)});
    }
  }
  if (held || FailingChecks(node.status)) {
    AddEvent(fx, now, nullptr, "", name, "NodeUncordoned", why);
  }
  RefreshNode(&node, why, now, fx);
  return GetNode(name);
}

absl::StatusOr<v1::Node> Core::DrainNode(const std::string& name, const std::string& reason,
                                         int64_t deadline_ms, int64_t now, Effects* fx) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
  if (reason.empty()) {
    return absl::InvalidArgumentError(
        "reason is required: say why the node is drained, e.g. \"kernel upgrade\"");
  }
  if (reason.size() > kMaxReasonLength) {
    return absl::InvalidArgumentError(absl::StrCat("reason must be at most ", kMaxReasonLength,
                                                   " characters, got ", reason.size()));
  }
  if (deadline_ms < 0 || deadline_ms > 24 * 3'600'000LL) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline must be 0s..24h, got ", FormatDuration(deadline_ms)));
  }
  Node& node = it->second;
  node.status.set_cordoned(true);
  node.draining = true;
  if (deadline_ms > 0) {
    *node.status.mutable_drain_deadline() = MsToDuration(deadline_ms);
  } else {
    node.status.clear_drain_deadline();
  }
  node.status.set_health_description(
      absl::StrCat("The host had a maintenance event at ", FormatRfc3339(now), ": ", reason));
  const std::string why = absl::StrCat("drained by an operator: ", reason);
  AddEvent(fx, now, nullptr, "", name, "NodeDrainStarted",
           absl::StrCat(why, "; moving its replicas to other nodes",
                        deadline_ms > 0
                            ? absl::StrCat(" (each gets ", FormatDuration(deadline_ms), " to stop)")
                            : std::string(" (each gets its job's stopGracePeriod)")));
  RefreshNode(&node, why, now, fx);
  MoveReplicasOff(name, absl::StrCat("node ", name, " is draining: ", reason),
                  deadline_ms > 0 ? deadline_ms : -1, /*node_gone=*/false, now, fx);
  CheckNodes(now, fx);  // an empty node is drained at once
  return GetNode(name);
}

// --- Lost nodes and finished drains ----------------------------------------------------------

void Core::CheckNodes(int64_t now, Effects* fx) {
  if (first_tick_ms_ == 0 && restored_) first_tick_ms_ = now;
  std::map<std::string, NodeUsage> usage;
  bool usage_known = false;
  for (auto& [name, node] : nodes_) {
    const int64_t heard = std::max(node.last_heartbeat_ms, first_tick_ms_);
    if (!node.lost && now - heard >= options_.nodes.lost_timeout_ms) {
      node.lost = true;
      node.draining = false;
      const std::string why =
          absl::StrCat("no heartbeat for ", FormatDuration(now - heard), " (lost timeout ",
                       FormatDuration(options_.nodes.lost_timeout_ms), ")");
      node.status.set_health_description(
          absl::StrCat("The host stopped responding at ", FormatRfc3339(heard), ": ", why));
      AddEvent(fx, now, nullptr, "", name, "NodeLost",
               absl::StrCat(why, "; moving its replicas to other nodes"));
      RefreshNode(&node, why, now, fx);
      MoveReplicasOff(name, absl::StrCat("node ", name, " was lost: ", why), -1,
                      /*node_gone=*/true, now, fx);
      usage_known = false;
    }
    if (node.draining) {
      if (!usage_known) {
        usage = Usage();
        usage_known = true;
      }
      if (usage[name].replicas == 0) {
        node.draining = false;
        node.status.clear_drain_deadline();
        AddEvent(fx, now, nullptr, "", name, "NodeDrained",
                 "every replica has moved off; the node stays cordoned until `trainctl node "
                 "uncordon`");
        RefreshNode(&node, "drained: every replica moved off; cordoned until uncordoned", now, fx);
      }
    }
  }
}

// --- Moves and re-dispatch -------------------------------------------------------------------

void Core::MoveReplicasOff(const std::string& node, const std::string& why, int64_t grace_ms,
                           bool node_gone, int64_t now, Effects* fx) {
  for (const std::string& id : ActiveIds()) {
    v1::Job* job = &jobs_[id];
    for (int i = 0; i < job->replicas_size(); ++i) {
      v1::Replica* r = job->mutable_replicas(i);
      if (r->node() != node || !HoldsResources(r->state())) continue;
      if (node_gone && r->state() != v1::REPLICA_STATE_RESTARTING) {
        nodes_[node].stale_runs.insert(RunIdOf(*job, *r));
      }
      // Re-evaluated per replica: a move may turn into a re-dispatch, which ends the attempt.
      const bool live =
          job->state() == v1::JOB_STATE_PENDING || job->state() == v1::JOB_STATE_RUNNING;
      if (live && r->move_reason().empty() && r->state() != v1::REPLICA_STATE_STOPPING) {
        if (node_gone) r->set_state(v1::REPLICA_STATE_FAILED);
        MoveReplica(job, i, why, grace_ms, now, fx);
      } else if (node_gone) {
        // A stop in flight on a node that is gone: the process is out of reach, so the replica
        // is done here. A move waiting for its stop goes on now.
        r->set_state(v1::REPLICA_STATE_STOPPED);
        r->set_pid(0);
        *r->mutable_end_time() = MsToTimestamp(now);
        r->set_message(absl::StrCat("gone with node ", node));
        Touch(job, now, fx);
        RecordRun(*job, *r, fx);
        if (live && !r->move_reason().empty()) {
          PlaceMovedReplica(job, i, now, fx);
        } else {
          MaybeFinishCancel(job, now, fx);
          RefreshActive(*job);
        }
      }
    }
  }
  schedule_needed_ = true;
}

void Core::MoveReplica(v1::Job* job, int index, const std::string& why, int64_t grace_ms,
                       int64_t now, Effects* fx) {
  v1::Replica* r = job->mutable_replicas(index);
  r->set_move_reason(why);
  if (IsLive(r->state())) {
    // Its process can still be reached: a graceful stop first (SIGTERM, a last checkpoint).
    r->set_state(v1::REPLICA_STATE_STOPPING);
    r->set_message(absl::StrCat("moving: ", why));
    v1::SchedulerMessage msg;
    msg.mutable_stop()->set_run_id(RunIdOf(*job, *r));
    msg.mutable_stop()->set_grace_period_ms(static_cast<int32_t>(
        grace_ms >= 0 ? grace_ms : DurationToMs(job->spec().scheduling().stop_grace_period())));
    msg.mutable_stop()->set_reason(why);
    fx->commands.push_back({r->node(), std::move(msg)});
    AddEvent(fx, now, job, r->name(), r->node(), "ReplicaStopping",
             absl::StrCat(why, ": stopping it gracefully to move it to another node"));
    Touch(job, now, fx);
    RecordRun(*job, *r, fx);
    return;
  }
  // No process to stop (restarting, or its node is gone).
  if (r->state() != v1::REPLICA_STATE_FAILED) r->set_state(v1::REPLICA_STATE_STOPPED);
  r->set_pid(0);
  r->clear_next_start_time();
  *r->mutable_end_time() = MsToTimestamp(now);
  r->set_message(absl::StrCat("moving: ", why));
  RecordRun(*job, *r, fx);
  PlaceMovedReplica(job, index, now, fx);
}

void Core::PlaceMovedReplica(v1::Job* job, int index, int64_t now, Effects* fx, bool new_run) {
  v1::Replica* r = job->mutable_replicas(index);
  const std::string from = r->node();
  const std::string why = r->move_reason();
  const Res need = NeedOf(*job, *r);
  // The schedulable node other than `from` with the most room, like placement's spread.
  std::vector<NodeFree> candidates;
  for (const NodeFree& n : FreeNodes()) {
    if (n.name != from && n.free.Fits(need)) candidates.push_back(n);
  }
  if (candidates.empty()) {
    v1::JobError cause;
    cause.set_code(kHostFaultCode);
    cause.set_reason("HOST_FAULT");
    cause.set_replica(r->name());
    cause.set_node(from);
    cause.set_message(absl::StrCat("Replica ", r->name(), " had to leave node ", from, " (", why,
                                   ") but no other healthy node has room for it (needs ",
                                   DescribeNeed(need), ")."));
    // A drain moves for maintenance: re-dispatching it charges nothing.
    const bool maintenance = why.find(" is draining: ") != std::string::npos;
    r->clear_move_reason();
    Redispatch(job, cause, /*charged=*/!maintenance, now, fx);
    return;
  }
  std::sort(candidates.begin(), candidates.end(), [](const NodeFree& a, const NodeFree& b) {
    if (a.free.gpus != b.free.gpus) return a.free.gpus > b.free.gpus;
    if (a.free.memory_mb != b.free.memory_mb) return a.free.memory_mb > b.free.memory_mb;
    if (a.free.cpu != b.free.cpu) return a.free.cpu > b.free.cpu;
    return a.name < b.name;
  });
  const std::string to = candidates.front().name;
  r->set_node(to);
  if (new_run) r->set_restart_count(r->restart_count() + 1);
  r->set_moves(r->moves() + 1);
  r->clear_move_reason();
  r->clear_exit_code();
  r->clear_signal();
  r->set_oom_killed(false);
  r->clear_end_time();
  r->clear_last_progress_time();
  if (v1::Attempt* a = CurrentAttemptOf(job)) {
    if (std::find(a->nodes().begin(), a->nodes().end(), to) == a->nodes().end()) {
      a->add_nodes(to);
      fx->attempts.insert({job->id(), a->number()});
    }
  }
  AddEvent(fx, now, job, r->name(), to, "ReplicaMoved",
           absl::StrCat("moved from ", from, " to ", to, " (", why, "); same name and rank ",
                        r->rank(), ", not charged to its restart budget"));
  LaunchOnItsNode(job, index, now, fx);
  RefreshActive(*job);
}

void Core::Redispatch(v1::Job* job, const v1::JobError& cause, bool charged, int64_t now,
                      Effects* fx) {
  const int allowed = job->spec().fault_tolerance().job_retry_num();
  const int used = job->budgets_used().redispatches();
  RetryDecision d;
  d.failure_class = charged ? "HOST_FAULT" : "MAINTENANCE";
  d.rule = charged ? "faultTolerance.jobRetryNum" : "drain";
  d.error = cause;
  d.budgets_used = job->budgets_used();
  if (!charged || used < allowed) {
    d.action = RetryAction::kRetryJob;
    if (charged) d.budgets_used.set_redispatches(used + 1);
    AddEvent(fx, now, job, cause.replica(), cause.node(), "JobRedispatched",
             absl::StrCat(cause.message(), " Re-dispatching the job on other hosts",
                          charged ? absl::StrCat(" (re-dispatch ", used + 1, " of ", allowed,
                                                 ", faultTolerance.jobRetryNum)")
                                  : std::string(" (maintenance: not charged)"),
                          "; it queues ahead of other jobs and gives up after 30m."));
    RetryJob(job, d, "REDISPATCH", now, fx);
    return;
  }
  d.action = RetryAction::kFailJob;
  v1::JobError error = cause;
  error.set_message(absl::StrCat(
      "error,exiting: ", cause.message(),
      allowed == 0 ? " Re-dispatch is off (faultTolerance.jobRetryNum is 0)."
                   : absl::StrCat(" Re-dispatch is exhausted: ", used, " of ", allowed,
                                  " re-dispatches (faultTolerance.jobRetryNum) used.")));
  d.error = error;
  AddEvent(fx, now, job, cause.replica(), cause.node(), "JobExiting", error.message());
  RecordAttemptEnd(job, d, "FAIL_JOB", now, fx);
  EndJob(job, v1::JOB_STATE_FAILED, error, error.message(), now, fx);
}

}  // namespace trainctl::sched
