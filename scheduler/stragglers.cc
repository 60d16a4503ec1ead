// Stragglers (stragglers.h).
#include "scheduler/stragglers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace trainctl::sched {
namespace {

std::string Rate(double steps_per_second) { return absl::StrFormat("%.3g", steps_per_second); }

}  // namespace

std::string FirstToStop(const Job& job) {
  const Replica* first = nullptr;
  int64_t highest = 0;
  for (const Replica& r : job.replicas) {
    if (r.step <= 0 ||
        (r.state != v1::REPLICA_STATE_RUNNING && r.state != v1::REPLICA_STATE_STOPPING)) {
      continue;
    }
    highest = std::max(highest, r.step);
    if (first == nullptr || r.step < first->step) first = &r;
  }
  if (first == nullptr || first->step == highest) return "";
  return absl::StrCat(first->name, " on ", first->node, " stopped advancing first, at step ",
                      first->step, "; the others reached up to ", highest);
}

void Stragglers::Step(const Job& job, const Replica& r, int64_t step, absl::Time t) {
  if (job.replicas.size() < 2 || job.state != v1::JOB_STATE_RUNNING || job.attempts.empty() ||
      r.state != v1::REPLICA_STATE_RUNNING) {
    return;
  }
  auto [it, fresh] = jobs_.try_emplace(job.id, options_);
  if (!fresh && (it->second.attempt != job.attempts.back().number ||
                 it->second.generation != job.gang_generation)) {
    it->second = Watched(options_);  // a new attempt or gang: its ranks start afresh
  }
  it->second.attempt = job.attempts.back().number;
  it->second.generation = job.gang_generation;
  it->second.watch.Report(r.name, step, t);
}

void Stragglers::Check(JobTable* jobs, absl::Time now, Effects* fx, const ReplaceFn& replace) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job* job = jobs->Find(it->first);
    if (job == nullptr || job->state != v1::JOB_STATE_RUNNING || job->attempts.empty() ||
        job->attempts.back().number != it->second.attempt ||
        job->gang_generation != it->second.generation) {
      if (job != nullptr) ClearNotes(job, now, fx);
      it = jobs_.erase(it);
      continue;
    }
    Watched& w = it->second;
    ++it;
    // A replica that is not running (restarting in place, moving) is not judged until it
    // reports again.
    for (Replica& r : job->replicas) {
      if (r.state == v1::REPLICA_STATE_RUNNING) continue;
      w.watch.Forget(r.name);
      if (!r.straggler.empty()) {
        r.straggler.clear();
        Touch(job, now, fx);
      }
    }
    if (now < w.next_check) continue;
    w.next_check = now + options_.window / 30;
    for (const StragglerWatch::Verdict& v : w.watch.Evaluate(now)) {
      Replica* r = job->FindReplica(v.replica);
      if (r == nullptr) continue;
      const std::string where =
          absl::StrCat(r->name, " on ", r->node,
                       r->gpu_devices.empty()
                           ? std::string()
                           : absl::StrCat(" (GPUs ", absl::StrJoin(r->gpu_devices, ","), ")"));
      w.ratio.erase(r->name);
      w.told_no_room.erase(r->name);
      if (v.straggling) {
        w.ratio[r->name] = v.median > 0 ? v.rate / v.median : 0;
        r->straggler = absl::StrCat(
            v.rate == 0 ? "stopped advancing" : absl::StrCat(Rate(v.rate), " steps/s"),
            " over the last ", absl::FormatDuration(options_.window), ", the gang's median ",
            Rate(v.median), " steps/s (below ", options_.ratio, " of it)");
        AddEvent(fx, now, job, r->name, r->node, "StragglerDetected",
                 absl::StrCat(where, ": ", r->straggler));
      } else if (!r->straggler.empty()) {
        r->straggler.clear();
        AddEvent(fx, now, job, r->name, r->node, "StragglerRecovered",
                 absl::StrCat(where, " keeps up with the gang again"));
      }
      Touch(job, now, fx);
    }
    if (replace && job->spec.scheduling().straggler_action() == v1::STRAGGLER_ACTION_REPLACE) {
      Replace(job, &w, replace);
    }
  }
}

void Stragglers::Replace(Job* job, Watched* w, const ReplaceFn& replace) {
  for (const auto& [name, straggling] : w->watch.straggling()) {
    Replica* r = job->FindReplica(name);
    if (!straggling || r == nullptr || r->state != v1::REPLICA_STATE_RUNNING) continue;
    const auto ratio = w->ratio.find(name);
    const bool tell = w->told_no_room.count(name) == 0;
    const ReplaceOutcome done = replace(job, r, ratio == w->ratio.end() ? 0 : ratio->second, tell);
    if (done == ReplaceOutcome::kReplaced) return;  // the job restarts or moves: judged afresh
    if (done == ReplaceOutcome::kNoRoom) w->told_no_room.insert(name);
  }
}

void Stragglers::ClearNotes(Job* job, absl::Time now, Effects* fx) {
  bool changed = false;
  for (Replica& r : job->replicas) {
    changed = changed || !r.straggler.empty();
    r.straggler.clear();
  }
  if (changed) Touch(job, now, fx);
}

std::map<std::string, int> Stragglers::CountByProject(const JobTable& jobs) const {
  std::map<std::string, int> out;
  for (const auto& [id, w] : jobs_) {
    const Job* job = jobs.Find(id);
    if (job == nullptr) continue;
    out[job->spec.project()] += static_cast<int>(w.watch.straggling().size());
  }
  return out;
}

}  // namespace trainctl::sched
