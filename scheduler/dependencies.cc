// Jobs that wait for others (dependencies.h).
#include "scheduler/dependencies.h"

#include "absl/strings/str_cat.h"
#include "common/array_ids.h"
#include "common/enum_names.h"
#include "common/job_states.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "model/model_proto.h"

namespace trainctl::sched {
namespace {

v1::DependencyCondition ConditionOf(const v1::DependencyStatus& d) {
  return d.condition() == v1::DEPENDENCY_CONDITION_UNSPECIFIED ? v1::DEPENDENCY_CONDITION_SUCCEEDED
                                                               : d.condition();
}

// The array `id` names an element of, when that element has not started yet.
const Job* ArrayOfUnstarted(const JobTable& jobs, const std::string& id) {
  const std::optional<ElementId> e = ParseElementId(id);
  if (!e) return nullptr;
  const Job* array = jobs.Find(e->array);
  if (array == nullptr || !array->array || !array->array->Contains(e->index)) return nullptr;
  return array;
}

}  // namespace

std::string ConditionVerb(v1::DependencyCondition c) {
  switch (c) {
    case v1::DEPENDENCY_CONDITION_FAILED:
      return "fail";
    case v1::DEPENDENCY_CONDITION_ENDED:
      return "end";
    default:
      return "succeed";
  }
}

absl::StatusOr<std::vector<v1::DependencyStatus>> ResolveDependencies(
    const v1::JobSpec& spec, const JobTable& jobs,
    const std::map<std::string, v1::JobState>& stored_ends) {
  std::vector<v1::DependencyStatus> out;
  if (spec.depends_on_size() > kMaxDependencies) {
    return absl::InvalidArgumentError(absl::StrCat("spec.dependsOn: at most ", kMaxDependencies,
                                                   " dependencies, got ", spec.depends_on_size()));
  }
  if (!v1::DependencyPolicy_IsValid(spec.dependency_policy())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.dependencyPolicy must be FAIL or KEEP_WAITING, got ", spec.dependency_policy()));
  }
  std::set<std::string> seen;
  for (int i = 0; i < spec.depends_on_size(); ++i) {
    const v1::Dependency& dep = spec.depends_on(i);
    const std::string field = absl::StrCat("spec.dependsOn[", i, "]");
    if (dep.job().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".job is required"));
    }
    if (!v1::DependencyCondition_IsValid(dep.condition())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".condition must be SUCCEEDED, FAILED or ENDED, got ", dep.condition()));
    }
    if (!seen.insert(dep.job()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".job: job ", dep.job(), " is named twice"));
    }
    v1::DependencyStatus d;
    d.set_job(dep.job());
    d.set_condition(dep.condition() == v1::DEPENDENCY_CONDITION_UNSPECIFIED
                        ? v1::DEPENDENCY_CONDITION_SUCCEEDED
                        : dep.condition());
    if (const Job* known = jobs.Find(dep.job())) {
      if (IsTerminal(known->state)) RecordEnd(&d, known->state);
    } else if (auto stored = stored_ends.find(dep.job()); stored != stored_ends.end()) {
      // A job only the store holds has ended (live jobs are always in the core).
      RecordEnd(&d, stored->second);
    } else if (const Job* array = ArrayOfUnstarted(jobs, dep.job())) {
      // An element not started yet: it ends as a job of its own, or cancelled with its array.
      if (IsTerminal(array->state)) RecordEnd(&d, v1::JOB_STATE_CANCELLED);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(field, ".job: no job ", dep.job()));
    }
    out.push_back(std::move(d));
  }
  return out;
}

void RecordEnd(v1::DependencyStatus* d, v1::JobState state) {
  d->set_ended(state);
  const v1::DependencyCondition c = ConditionOf(*d);
  const bool met = c == v1::DEPENDENCY_CONDITION_ENDED ||
                   (c == v1::DEPENDENCY_CONDITION_SUCCEEDED && state == v1::JOB_STATE_SUCCEEDED) ||
                   (c == v1::DEPENDENCY_CONDITION_FAILED && state == v1::JOB_STATE_FAILED);
  d->set_met(met);
  d->set_unmet_forever(!met);
}

std::string DependencyText(const v1::DependencyStatus& d) {
  const std::string verb = ConditionVerb(ConditionOf(d));
  if (d.unmet_forever()) {
    return absl::StrCat(d.job(), " ended ", EnumShortName(d.ended()), " and can never ", verb);
  }
  return absl::StrCat("waiting for ", d.job(), " to ", verb);
}

namespace {

template <typename List>
QuietWait QuietWaitOf(const std::string& id, bool held, const std::string& held_by,
                      const std::string& reason, std::optional<absl::Time> since,
                      const List& dependencies) {
  QuietWait w;
  if (held) {
    w.kind = BlockerKind::kHeld;
    w.text =
        ReasonText(BlockerKind::kHeld,
                   absl::StrCat("held", held_by.empty() ? "" : " by " + held_by,
                                since ? " since " + FormatRfc3339(ToMs(*since)) : std::string(),
                                reason.empty() ? "" : ": " + reason, "; `trainctl release ", id,
                                "` lets it run"));
    return w;
  }
  std::string why;
  if (WaitsOnDependency(dependencies, &why)) {
    w.kind = BlockerKind::kDependency;
    w.text = ReasonText(BlockerKind::kDependency, why);
  }
  return w;
}

}  // namespace

QuietWait WaitsWithoutBlocking(const Job& job) {
  return QuietWaitOf(job.id, job.held, job.held_by, job.hold_reason, job.hold_time,
                     job.dependencies);
}

QuietWait WaitsWithoutBlocking(const v1::Job& job) {
  return QuietWaitOf(job.id(), job.held(), job.held_by(), job.hold_reason(),
                     job.has_hold_time() ? std::optional<absl::Time>(FromProtoTime(job.hold_time()))
                                         : std::nullopt,
                     job.dependencies());
}

void DependencyIndex::Add(const Job& job) {
  for (const v1::DependencyStatus& d : job.dependencies) {
    if (d.ended() == v1::JOB_STATE_UNSPECIFIED) waiters_[d.job()].insert(job.id);
  }
}

std::set<std::string> DependencyIndex::Take(const std::string& id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return {};
  std::set<std::string> out = std::move(it->second);
  waiters_.erase(it);
  return out;
}

}  // namespace trainctl::sched
