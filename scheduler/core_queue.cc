// Core: time limits, the queue, admission and placement.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/core_internal.h"
#include "scheduler/placement.h"

namespace trainctl::sched {

using namespace internal;

// --- Time and placement ----------------------------------------------------------------------

void Core::Tick(int64_t now, Effects* fx) {
  CheckNodes(now, fx);
  if (next_wakeup_ms_ != 0 && now >= next_wakeup_ms_) {
    next_wakeup_ms_ = 0;
    schedule_needed_ = true;
  }
  while (!queue_deadlines_.empty() && queue_deadlines_.begin()->first <= now) {
    v1::Job* job = &jobs_[queue_deadlines_.begin()->second];
    const int64_t waited = now - TimestampToMs(job->queue_time());
    std::vector<std::string> why;
    for (const v1::Blocker& b : BlockersOf(*job, ProjectUsages(), FreeNodes(), now)) {
      why.push_back(b.message());
    }
    v1::JobError error;
    error.set_code(4);  // DEADLINE_EXCEEDED
    error.set_reason("DEADLINE");
    error.set_message(absl::StrCat(
        "Job waited ", FormatDuration(waited), " in the queue (queueTimeout ",
        FormatDuration(QueueDeadline(*job) - TimestampToMs(job->queue_time())),
        job->attempts().empty() ? "" : ", for a retry", ") and gave up; it was waiting for: ",
        why.empty() ? std::string("its turn") : absl::StrJoin(why, "; "), "."));
    if (!job->attempts().empty()) {
      AddEvent(fx, now, job, "", "", "JobQueueTimeout", "error,exiting: " + error.message());
    }
    EndJob(job, v1::JOB_STATE_FAILED, error, error.message(), now, fx);  // dequeues it
  }
  for (const std::string& id : ActiveIds()) {
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
  std::map<std::string, ProjectUsage> usages = ProjectUsages();
  std::vector<NodeFree> free = FreeNodes();
  // Each project offers its jobs in order; the best next job across projects goes first. A
  // project leaves the round when its next job is blocked (STRICT_FIFO), or when a blocked job of
  // it has been overtaken for its starvation limit (BEST_EFFORT_FIFO).
  using Cursor = std::pair<QueueKey, std::string>;  // (next job's key, project)
  std::set<Cursor> round;
  for (const auto& [project, q] : project_queues_) {
    if (!q.empty()) round.insert({*q.begin(), project});
  }
  auto advance = [&](const std::string& project, const QueueKey& after) {
    const std::set<QueueKey>& q = project_queues_[project];
    auto next = q.upper_bound(after);
    if (next != q.end()) round.insert({*next, project});
  };
  while (!round.empty()) {
    auto [key, project] = *round.begin();
    round.erase(round.begin());
    v1::Job* job = &jobs_[std::get<3>(key)];
    // A retry waits for its backoff and for the last attempt's replicas to be gone; it holds
    // back nobody meanwhile.
    const int64_t not_before = TimestampToMs(job->next_attempt_time());
    if (not_before > now) {
      next_wakeup_ms_ = next_wakeup_ms_ == 0 ? not_before : std::min(next_wakeup_ms_, not_before);
      advance(project, key);
      continue;
    }
    bool stopping = false;
    for (const v1::Replica& r : job->replicas()) {
      auto node = nodes_.find(r.node());
      stopping |= HoldsResources(r.state()) && node != nodes_.end() && node->second.connected;
    }
    if (stopping) {
      advance(project, key);
      continue;
    }
    const v1::Quota quota = QuotaOf(project);
    const Res demand = DemandOf(*job);
    QuotaEval qe =
        EvaluateQuota(project, quota, usages[project], demand, Borrowable(project, quota, usages));
    if (!qe.fits_ever) {  // can never run under this quota: waits without blocking others
      if (job->queue_reason() != qe.blockers[0].message()) {
        job->set_queue_reason(qe.blockers[0].message());
        Touch(job, now, fx);
      }
      advance(project, key);
      continue;
    }
    std::string reason;
    if (qe.fits_now) {
      std::vector<ReplicaDemand> demands = DemandsOf(*job);
      absl::StatusOr<std::vector<std::string>> placed = PlaceGang(demands, free);
      if (placed.ok()) {
        stockout_since_.erase(job->id());
        StartAttemptOn(job, *placed, now, fx);
        usages[project].used += demand;
        usages[project].running_jobs++;
        for (size_t i = 0; i < demands.size(); ++i) {
          for (NodeFree& n : free) {
            if (n.name == (*placed)[i]) n.free -= demands[i].need;
          }
        }
        advance(project, key);
        continue;
      }
      std::string missing(placed.status().message());
      if (CheckCapacity(job, demands, missing, now, fx) != CapacityCheck::kBusy) {
        // Too large for the healthy cluster even when idle (a stockout, being timed or just
        // retried): waiting for other jobs would not help, so it holds back nobody.
        if (!IsTerminal(job->state())) {
          std::string reason =
              free.empty() ? "NO_NODES: no node is connected and READY"
                           : absl::StrCat("CAPACITY: ", missing, " (even with the cluster idle)");
          if (job->queue_reason() != reason) {
            job->set_queue_reason(reason);
            Touch(job, now, fx);
          }
        }
        advance(project, key);
        continue;
      }
      reason = free.empty() ? "NO_NODES: no node is connected and READY"
                            : absl::StrCat("CAPACITY: ", missing);
    } else {
      reason = qe.blockers[0].message();
    }
    if (job->queue_reason() != reason) {
      job->set_queue_reason(reason);
      Touch(job, now, fx);
    }
    if (quota.queueing_strategy() == v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO) {
      auto [since, inserted] = blocked_since_.insert({job->id(), now});
      const int64_t limit =
          quota.has_starvation_limit() ? DurationToMs(quota.starvation_limit()) : 10 * 60'000;
      if (now - since->second < limit) {
        next_wakeup_ms_ = next_wakeup_ms_ == 0 ? since->second + limit
                                               : std::min(next_wakeup_ms_, since->second + limit);
        advance(project, key);  // later jobs may go past it, for now
      }
    }
  }
}

Core::CapacityCheck Core::CheckCapacity(v1::Job* job, const std::vector<ReplicaDemand>& demands,
                                        const std::string& missing, int64_t now, Effects* fx) {
  // Only a cluster too small even when idle is a stockout; waiting behind running jobs is not.
  std::vector<NodeFree> idle;
  for (const auto& [name, node] : nodes_) {
    if (Schedulable(node)) idle.push_back({name, node.allocatable});
  }
  absl::StatusOr<std::vector<std::string>> fits = PlaceGang(demands, idle);
  if (fits.ok()) {
    stockout_since_.erase(job->id());
    return CapacityCheck::kBusy;
  }
  auto [it, inserted] = stockout_since_.insert({job->id(), now});
  const RetryPolicy policy = RetryPolicy::FromSpec(job->spec().scheduling());
  const int64_t deadline = it->second + policy.placement_timeout_ms;
  if (now < deadline) {
    next_wakeup_ms_ = next_wakeup_ms_ == 0 ? deadline : std::min(next_wakeup_ms_, deadline);
    return CapacityCheck::kStockout;
  }
  stockout_since_.erase(it);
  const int used = job->budgets_used().capacity_retries();
  const std::string what = idle.empty() ? "no node is connected and READY" : missing;
  if (used >= policy.max_capacity_retries) {
    v1::JobError error = CapacityError(what);
    AddEvent(fx, now, job, "", "", "CapacityExhausted",
             absl::StrCat("no healthy capacity within placementTimeout after ", used,
                          " capacity retries (maxCapacityRetries ", policy.max_capacity_retries,
                          "): ", what));
    EndJob(job, v1::JOB_STATE_FAILED, error, error.message(), now, fx);
    return CapacityCheck::kActed;
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
  return CapacityCheck::kActed;
}

std::map<std::string, Core::NodeUsage> Core::Usage() const {
  std::map<std::string, NodeUsage> usage;
  for (const auto& [id, job_ptr] : active_) {
    const v1::Job& job = *job_ptr;
    for (const v1::Replica& r : job.replicas()) {
      if (!HoldsResources(r.state())) continue;
      NodeUsage& u = usage[r.node()];
      u.used += NeedOf(job, r);
      u.replicas++;
    }
  }
  return usage;
}

void Core::StartAttemptOn(v1::Job* job, const std::vector<std::string>& placed_nodes, int64_t now,
                          Effects* fx) {
  const std::vector<std::string>* placed = &placed_nodes;
  Dequeue(*job);
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
    r->set_moves(0);
    r->clear_move_reason();
    r->set_message(absl::StrCat("launching on ", r->node()));
  }
  job->clear_queue_reason();
  job->clear_next_attempt_time();
  job->clear_queue_time();
  active_[job->id()] = job;
  SetJobState(
      job, v1::JOB_STATE_PENDING,
      absl::StrCat("attempt ", attempt->number(), " placed on ", absl::StrJoin(used_nodes, ", "),
                   "; launching ", job->replicas_size(), " replicas in parallel"),
      now, fx);
  for (int i = 0; i < job->replicas_size(); ++i) {
    RecordRun(*job, job->replicas(i), fx);
    SendLaunch(*job, i, fx);
  }
}

}  // namespace trainctl::sched
