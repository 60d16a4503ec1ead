// GangEpisodes (gang_episodes.h): a restartable failure or a move of one replica of a GANG job
// restarts every replica together, charged once to the root cause; the peers' failures that
// follow it are its consequences, never classified on their own.
#include "scheduler/gang_episodes.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/elastic.h"
#include "scheduler/launch_env.h"
#include "scheduler/placement.h"
#include "scheduler/straggler_replace.h"

namespace trainctl::sched {
namespace {

// A settling replica's report, kept in memory or rebuilt from its fields after a restart.
v1::ReplicaExited ReportOf(const Job& job, const Replica& r) {
  auto it = job.settling_reports.find(r.name);
  if (it != job.settling_reports.end()) return it->second;
  v1::ReplicaExited x;
  x.set_run_id(job.RunIdOf(r));
  if (r.exit_code) x.set_exit_code(*r.exit_code);
  if (r.signal) x.set_signal(*r.signal);
  x.set_oom_killed(r.oom_killed);
  if (r.end_time) x.set_end_time_ms(ToMs(*r.end_time));
  return x;
}

}  // namespace

bool GangEpisodes::IsGang(const Job& job) { return job.policy.gang && job.replicas.size() > 1; }

void GangEpisodes::RunEnd(Job* job, Replica* r, const Failure& failure, absl::Time now,
                          Effects* fx) {
  if (job->gang_restarting) {
    // The gang is restarting already: this failure followed its root cause.
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_FAILED);
    AddConsequence(job, *r, Classify(job->policy, *r, failure).summary, now, fx);
    RecordRun(*job, *r, fx);
    r->restart_count++;
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_RESTARTING);
    r->next_start_time = now;
    MaybeRelaunch(job, now, fx);
    return;
  }
  if (Settles(job->policy, *job, *r, failure)) {
    // A user error may be the consequence of a peer's failure whose report is still on its way.
    const absl::Duration window = absl::Milliseconds(job->policy.settle_window_ms);
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_SETTLING);
    r->next_start_time = now + window;
    job->settling_reports[r->name] = failure.report;
    const std::string summary = DescribeExit(failure.report);
    r->message = absl::StrCat(summary, " (settling: waiting for an earlier failure of a peer)");
    AddEvent(fx, now, job, r->name, r->node, "ReplicaExited",
             absl::StrCat("Replica ", r->name, " on ", r->node, " ", summary,
                          "; waiting the settle window (", FormatDuration(ToMs(window)),
                          ") for an earlier failure of a peer before deciding"));
    Touch(job, now, fx);
    RecordRun(*job, *r, fx);
    timers_->WakeAt(*r->next_start_time);
    return;
  }
  DecideRoot(job, r, failure, now, fx);
}

void GangEpisodes::DecideSettled(Job* job, absl::Time now, Effects* fx) {
  // A settled failure is decided as one episode.
  bool settled = false;
  for (const Replica& r : job->replicas) {
    if (r.state != v1::REPLICA_STATE_SETTLING || !r.next_start_time) continue;
    if (now >= *r.next_start_time) {
      settled = true;
    } else {
      timers_->WakeAt(*r.next_start_time);
    }
  }
  if (settled) DecideRoot(job, nullptr, Failure(), now, fx);
}

void GangEpisodes::DecideRoot(Job* job, Replica* r, const Failure& failure, absl::Time now,
                              Effects* fx) {
  // The candidates: this failure, and every failure waiting its settle window.
  std::vector<Replica*> replicas;
  std::vector<Failure> failures;
  std::vector<FailureCandidate> candidates;
  if (r != nullptr) {
    replicas.push_back(r);
    failures.push_back(failure);
    candidates.push_back(
        {r->end_time.value_or(now),
         Classify(job->policy, *r, failure).failure_class == FailureClass::kUserError});
  }
  for (Replica& s : job->replicas) {
    if (s.state != v1::REPLICA_STATE_SETTLING) continue;
    Failure settled;
    settled.report = ReportOf(*job, s);
    replicas.push_back(&s);
    failures.push_back(settled);
    candidates.push_back({s.end_time.value_or(now), /*user_error=*/true});
  }
  if (candidates.empty()) return;
  const size_t root = ChooseRootCause(candidates, skew_);
  Replica* cause = replicas[root];
  const RetryDecision d = DecideOnFailure(job->policy, *job, *cause, failures[root], now);
  RootCause rc;
  rc.replica = cause->name;
  rc.node = cause->node;
  rc.exit_time = cause->end_time.value_or(now);
  rc.failure_class = d.failure_class;
  rc.summary = d.summary;
  // The others followed it: their processes are gone, and they are not classified on their own.
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (i == root) continue;
    Replica* other = replicas[i];
    const std::string summary = DescribeExit(failures[i].report);
    other->message = absl::StrCat(summary, " (a consequence of ", cause->name, ")");
    if (other == r) {
      life_->SetReplicaState(job, r, v1::REPLICA_STATE_FAILED);
      RecordRun(*job, *r, fx);
    }
    rc.consequences.push_back(absl::StrCat(other->name, " ", summary));
    ConsequenceEvent(*job, *other, summary, rc, now, fx);
  }
  // Apply records the consequences with the cause: in the gang restart, or the attempt's end.
  if (d.action != Decision::kContinue && d.action != Decision::kSucceedJob) {
    job->root_cause = std::move(rc);
  }
  life_->Apply(job, cause, d, now, fx);
}

void GangEpisodes::Restart(Job* job, Replica* cause, const RetryDecision& d, absl::Time now,
                           Effects* fx) {
  const absl::Time due = now + d.delay;
  const bool failed = d.action == Decision::kRestartGang;
  RootCause rc;
  rc.replica = cause->name;
  rc.node = cause->node;
  rc.exit_time = failed ? cause->end_time.value_or(now) : now;
  rc.failure_class = d.failure_class;
  rc.summary = failed ? d.summary : absl::StrCat(d.summary, " (", d.move_reason, ")");
  if (job->root_cause && job->root_cause->replica == cause->name) {
    rc.consequences = job->root_cause->consequences;
  }
  job->root_cause = rc;
  job->gang_restarting = true;
  if (Attempt* a = job->current()) {
    a->gang_restarts.push_back({job->gang_generation + 1, now, rc, d.rule, failed && d.charged});
    fx->attempts.insert({job->id, a->number});
  }
  if (failed) {
    cause->restart_count++;
    cause->charged_restarts = d.charged_restarts;
    cause->ForgetProgress();
    life_->SetReplicaState(job, cause, v1::REPLICA_STATE_RESTARTING);
    cause->next_start_time = due;
  }
  const std::string why = absl::StrCat("restarting the gang: ", cause->name, " ", rc.summary);
  const std::vector<Replica*> placed_elsewhere = Stop(job, cause, why, due, now, fx);
  AddEvent(
      fx, now, job, cause->name, cause->node, "GangRestarting",
      absl::StrCat("restarting all ", WorldSize(*job), " replicas together as gang ", "generation ",
                   job->gang_generation + 1, " after ", cause->name, " ", rc.summary,
                   failed ? absl::StrCat(" (", FailureClassName(d.failure_class), "; ", d.rule, ")")
                          : std::string(" (a move: not charged)"),
                   "; the others are stopped first, then every replica starts at once"));
  Touch(job, now, fx);
  timers_->WakeAt(due);
  for (Replica* o : placed_elsewhere) {
    // A move that finds no room re-dispatches the job or fails it: the others stay as they are.
    if (!IsLive(job->state)) return;
    life_->PlaceMoved(job, o, now, fx, /*new_run=*/false);
  }
  MaybeRelaunch(job, now, fx);
}

std::vector<Replica*> GangEpisodes::Stop(Job* job, const Replica* skip, const std::string& why,
                                         absl::Time due, absl::Time now, Effects* fx) {
  std::vector<Replica*> placed_elsewhere;
  for (Replica& o : job->replicas) {
    if (&o == skip || o.moving() || o.state == v1::REPLICA_STATE_REMOVED) continue;
    if (IsLive(o.state)) {
      life_->SetReplicaState(job, &o, v1::REPLICA_STATE_STOPPING);
      o.message = why;
      life_->SendStop(*job, o, absl::Milliseconds(job->policy.stop_grace_ms), why, fx,
                      job->policy.StacksBefore("gang restart", /*gang_restart=*/true));
      AddEvent(fx, now, job, o.name, o.node, "ReplicaStopping",
               absl::StrCat(why, ": stopping it to start every replica together"));
      RecordRun(*job, o, fx);
    } else if (o.state != v1::REPLICA_STATE_STOPPING && o.state != v1::REPLICA_STATE_RESTARTING) {
      // No process: it waits on its node to start with the others. One that had ended holds
      // nothing there any more; when its place was taken meanwhile, or the node keeps no
      // replicas, it is placed elsewhere once the others are set.
      o.restart_count++;
      std::string why_not;
      if (!HoldsResources(o.state) && (!nodes_->KeepsReplicas(o.node, &why_not) ||
                                       !nodes_->HasRoom(o.node, ReplicaDemandOf(o)))) {
        o.move_cause = MoveCause::kNodeUnavailable;
        o.move_reason = why_not.empty() ? absl::StrCat("its place on node ", o.node,
                                                       " was taken after it ended")
                                        : why_not;
        placed_elsewhere.push_back(&o);
        continue;
      }
      life_->SetReplicaState(job, &o, v1::REPLICA_STATE_RESTARTING);
      o.next_start_time = due;
    }
  }
  return placed_elsewhere;
}

void GangEpisodes::ConfirmStop(Job* job, Replica* r, const v1::ReplicaExited& exited,
                               absl::Time now, Effects* fx) {
  if (!IsCleanExit(exited) && !exited.stopped_by_request()) {
    AddConsequence(job, *r, DescribeExit(exited), now, fx);
  }
  life_->SetReplicaState(job, r, v1::REPLICA_STATE_STOPPED);
  AddEvent(fx, now, job, r->name, r->node, "ReplicaStopped",
           "process stopped for the gang restart");
  RecordRun(*job, *r, fx);
  r->restart_count++;
  life_->SetReplicaState(job, r, v1::REPLICA_STATE_RESTARTING);
  r->next_start_time = now;
  MaybeRelaunch(job, now, fx);
}

void GangEpisodes::MaybeRelaunch(Job* job, absl::Time now, Effects* fx) {
  if (!job->gang_restarting || !IsLive(job->state)) return;
  absl::Time due = absl::InfinitePast();
  for (const Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) continue;
    if (r.state != v1::REPLICA_STATE_RESTARTING) return;  // some are still stopping or waiting
    if (r.next_start_time) due = std::max(due, *r.next_start_time);
  }
  if (now < due) {
    timers_->WakeAt(due);
    return;
  }
  // A replica whose node no longer keeps replicas (it failed a check or went away while the gang
  // stopped), or whose node the job excluded (a straggler's, straggler_replace.h), moves first,
  // while the gang still restarts: the move starts the gang again once it is placed, an elastic
  // pool's replica may wait for room, and a replica that finds none ends the attempt before
  // anything launches.
  for (Replica& r : job->replicas) {
    std::string why_not;
    if (r.state != v1::REPLICA_STATE_RESTARTING) continue;
    if (ExcludedFor(*job, r.node, &why_not)) {
      MarkExcludedMove(&r, why_not);
    } else if (!nodes_->KeepsReplicas(r.node, &why_not)) {
      r.move_cause = MoveCause::kNodeUnavailable;
      r.move_reason = why_not;
    } else {
      continue;
    }
    life_->PlaceMoved(job, &r, now, fx, /*new_run=*/false);
    return;
  }
  // A restart point: removed replicas of elastic pools come back where there is room.
  life_->GrowBack(job, now, fx);
  job->gang_restarting = false;
  job->gang_generation++;
  const std::string cause = job->root_cause && !job->root_cause->replica.empty()
                                ? absl::StrCat(" after ", job->root_cause->replica)
                                : std::string();
  job->root_cause.reset();
  // Fresh ports for the new generation: a dying process may still hold the old rendezvous port.
  binding_->RenewPorts(job);
  AddEvent(fx, now, job, "", "", "GangStarting",
           absl::StrCat("every replica stopped", cause, ": starting all ", WorldSize(*job),
                        " together as gang generation ", job->gang_generation));
  // On nodes other than those last checked, the fabric check comes first; it launches them.
  if (life_->CheckFabricFirst(job, now, fx)) return Touch(job, now, fx);
  for (Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) continue;
    if (!IsLive(job->state)) break;
    r.ForgetProgress();
    life_->LaunchOnItsNode(job, &r, now, fx);
  }
  Touch(job, now, fx);
}

void GangEpisodes::AddConsequence(Job* job, const Replica& r, const std::string& summary,
                                  absl::Time now, Effects* fx) {
  if (!job->root_cause) return;
  const RootCause& root = *job->root_cause;
  const std::string text = absl::StrCat(r.name, " ", summary);
  job->root_cause->consequences.push_back(text);
  if (Attempt* a = job->current()) {
    if (job->gang_restarting && !a->gang_restarts.empty()) {
      a->gang_restarts.back().cause.consequences.push_back(text);
    } else if (a->decision != Decision::kNone && a->replica == root.replica) {
      a->consequences.push_back(text);
    }
    fx->attempts.insert({job->id, a->number});
  }
  if (job->error.code != absl::StatusCode::kOk && job->error.replica == root.replica) {
    job->error.consequences.push_back(text);
  }
  ConsequenceEvent(*job, r, summary, root, now, fx);
  Touch(job, now, fx);
}

void GangEpisodes::ConsequenceEvent(const Job& job, const Replica& r, const std::string& summary,
                                    const RootCause& root, absl::Time now, Effects* fx) {
  AddEvent(
      fx, now, &job, r.name, r.node, "ReplicaExited",
      absl::StrCat("Replica ", r.name, " on ", r.node, " ", summary, ": a consequence of ",
                   root.replica, "'s failure (", root.summary, "), not classified on its own"));
}

}  // namespace trainctl::sched
