// Dependencies: jobs that wait for others (JobSpec.depends_on; Slurm's afterok / afternotok /
// afterany).
//
// A job names the jobs it waits for and how each must end: SUCCEEDED, FAILED or ENDED (any
// end). Every named job must exist when the job is submitted: one the core holds, or one that
// ended long ago and only the store remembers (its end comes in `stored_ends`). A job can only
// name jobs that exist before it, so no cycle can form.
//
// Each dependency's standing is kept in the waiting job (Job::dependencies, persisted with its
// row): the dependency's end once known, whether its condition holds, and whether it never can.
// A dependency that ends writes its end into every job waiting on it in the same turn, so after
// a restart nothing needs the ended job itself: a dependency that ended before the restart has
// resolved already.
//
// While any condition does not hold, the job stays QUEUED with a DEPENDENCY blocker ("waiting
// for j-1 to succeed (RUNNING)") and holds back nobody (admission_queue.cc). When a condition
// can no longer hold (a job it needs SUCCEEDED ended FAILED): with dependencyPolicy FAIL the
// waiting job ends FAILED at once, naming the dependency and its end; with KEEP_WAITING it stays
// QUEUED, its blocker saying the condition can never be met.
//
//   TC_ASSIGN_OR_RETURN(job.dependencies, ResolveDependencies(spec, jobs, stored_ends));
//   std::string why;
//   if (WaitsOnDependency(job.dependencies, &why)) ...   // "DEPENDENCY: waiting for ..."
//
// Thread-safety: none; the functions keep no state, the index is owned by the core.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model.h"
#include "scheduler/job_table.h"
#include "scheduler/placement_kind.h"

namespace trainctl::sched {

// At most this many dependencies per job.
inline constexpr int kMaxDependencies = 64;

// The standing of each of spec.depends_on at submit. INVALID_ARGUMENT naming
// spec.dependsOn[i].job for an empty id, a job in neither `jobs` nor `stored_ends`, or the same
// job twice.
absl::StatusOr<std::vector<v1::DependencyStatus>> ResolveDependencies(
    const v1::JobSpec& spec, const JobTable& jobs,
    const std::map<std::string, v1::JobState>& stored_ends);

// Records that the dependency `d` ended as `state`: met, or unmet for ever.
void RecordEnd(v1::DependencyStatus* d, v1::JobState state);

// "succeed", "fail", "end": the condition as a verb.
std::string ConditionVerb(v1::DependencyCondition c);

// True while some condition does not hold; `why` (may be null) then names each: "waiting for
// j-1 to succeed; j-2 ended CANCELLED and can never fail".
template <typename List>
bool WaitsOnDependency(const List& dependencies, std::string* why);

// The first dependency whose condition can never hold, or nullptr.
template <typename List>
const v1::DependencyStatus* NeverMet(const List& dependencies);

// Why a queued job waits without holding back the jobs behind it: held (HELD: "held by alice
// since ...: <reason>; `trainctl release j-1` lets it run"), or waiting on a dependency
// (DEPENDENCY: "waiting for j-1 to succeed"). `text` is "" when neither, else "KIND: ...".
struct QuietWait {
  BlockerKind kind = BlockerKind::kHeld;
  std::string text;
};
QuietWait WaitsWithoutBlocking(const Job& job);
QuietWait WaitsWithoutBlocking(const v1::Job& job);

// Which jobs wait on which (in memory; rebuilt at restore from the waiting jobs' standings).
class DependencyIndex {
 public:
  // `job` waits on the dependencies it has not seen end.
  void Add(const Job& job);
  // The jobs waiting on `id`, which ended: forgotten here.
  std::set<std::string> Take(const std::string& id);
  size_t size() const { return waiters_.size(); }

 private:
  std::map<std::string, std::set<std::string>> waiters_;
};

// --- Templates ---------------------------------------------------------------------------------

std::string DependencyText(const v1::DependencyStatus& d);

template <typename List>
bool WaitsOnDependency(const List& dependencies, std::string* why) {
  std::string out;
  bool waits = false;
  for (const v1::DependencyStatus& d : dependencies) {
    if (d.met()) continue;
    if (waits) out += "; ";
    out += DependencyText(d);
    waits = true;
  }
  if (why != nullptr) *why = out;
  return waits;
}

template <typename List>
const v1::DependencyStatus* NeverMet(const List& dependencies) {
  for (const v1::DependencyStatus& d : dependencies) {
    if (d.unmet_forever()) return &d;
  }
  return nullptr;
}

}  // namespace trainctl::sched
