// The agents' reports that feed the core's side parts rather than the lifecycle's decisions
// (core.h): progress (hang timers, straggler rates: stragglers.h), stacks captured before stops
// (kept with their job), and image pulls (image_pulls.h). Each is checked against the node that
// ran the run; stale and unknown runs are ignored.
#include "absl/strings/str_cat.h"
#include "common/run_id.h"
#include "common/time_util.h"
#include "scheduler/core.h"

namespace trainctl::sched {

void Core::ReplicaProgress(const std::string& node, const v1::ReplicaProgress& progress,
                           absl::Time now, Effects* fx) {
  auto [job, r] = jobs_.CurrentRun(progress.run_id());
  if (job == nullptr) return;
  if (r->node != node) {
    return nodes_.IgnoredReport(node, progress.run_id(), r->node, now, fx);
  }
  // The agent's report carries its time in ms since the epoch.
  const absl::Time t = progress.time_ms() > 0 ? FromMs(progress.time_ms()) : now;
  lifecycle_.Progress(job, r, t, progress.step(), now, fx);
  if (progress.step() > 0) stragglers_.Step(*job, *r, progress.step(), t);
  if (progress.checkpoint()) lifecycle_.Checkpointed(job, t, now, fx);
}

void Core::StacksCaptured(const std::string& node, const v1::ReplicaStacks& stacks, absl::Time now,
                          Effects* fx) {
  const std::optional<RunIdParts> run = SplitRunId(stacks.run_id());
  const std::string* ran_on = run ? jobs_.NodeOfRun(stacks.run_id()) : nullptr;
  Job* job = run ? jobs_.Find(run->job_id) : nullptr;
  if (ran_on == nullptr || job == nullptr) return;
  if (*ran_on != node) return nodes_.IgnoredReport(node, stacks.run_id(), *ran_on, now, fx);
  v1::ReplicaStacks& kept = fx->stacks.emplace_back(stacks);
  if (job->stacks_kept.first != run->attempt) job->stacks_kept = {run->attempt, 0};
  std::string dropped;
  if (job->stacks_kept.second >= kStackTextsPerAttempt) {
    for (v1::ProcessStacks& p : *kept.mutable_processes()) p.clear_text();
    kept.set_truncated(true);
    dropped = absl::StrCat("; texts dropped: ", kStackTextsPerAttempt, " captures of attempt ",
                           run->attempt, " kept theirs, the summaries stay");
  } else {
    ++job->stacks_kept.second;
  }
  kept.set_job_id(run->job_id);
  kept.set_attempt(run->attempt);
  kept.set_replica(run->replica_name);
  kept.set_restart(run->restart);
  kept.set_node(node);
  const std::string what = !kept.error().empty()    ? absl::StrCat("none: ", kept.error())
                           : kept.summary().empty() ? "captured"
                                                    : absl::StrCat("in ", kept.summary());
  fx->events.push_back(
      {absl::ToUnixMillis(now), run->job_id, run->attempt, run->replica_name, node,
       "StacksCaptured",
       absl::StrCat("stacks before the stop (", kept.reason(), "): ", what, dropped,
                    " (`trainctl stacks ", run->job_id, " --replica ", run->replica_name, "`)"),
       ""});
}

void Core::ImagePull(const std::string& node, const v1::ImagePull& pull, absl::Time now,
                     Effects* fx) {
  auto [job, r] = jobs_.CurrentRun(pull.run_id());
  if (job == nullptr) return;
  if (r->node != node) return nodes_.IgnoredReport(node, pull.run_id(), r->node, now, fx);
  pulls_.Report(job, r, pull, now, fx);
}

}  // namespace trainctl::sched
