// The job arrays of Core (core.h; the rules in job_arrays.h): an array's row, the start of its
// elements as its parallelism allows, the counts of its elements by state, its end, and cancel,
// hold and release of a whole array or of an element that has not started.
//
// An array's Job stays QUEUED in the core until it ends (it is never in the admission queue and
// holds nothing, so no count of admitted jobs sees it); the API shows it RUNNING while its
// elements run (JobArray::ShownState). Its elements' state changes reach its counts in the turn
// they happen: CountArrayElements reads the jobs the turn touched, before each admission pass.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/array_ids.h"
#include "common/enum_names.h"
#include "common/job_states.h"
#include "scheduler/core.h"
#include "scheduler/job_arrays.h"

namespace trainctl::sched {
namespace {

std::string By(const std::string& actor) { return actor.empty() ? "" : " by " + actor; }

std::string Elements(int32_t n) { return absl::StrCat(n, n == 1 ? " element" : " elements"); }

}  // namespace

void Core::MakeArray(Job* job, absl::Time now, Effects* fx) {
  queue_.Dequeue(*job);
  job->replicas.clear();
  JobArray array;
  // Validated at submit (ValidateArraySpec).
  array.indices = ParseArrayIndices(job->spec.array().indices()).value();
  array.parallelism = job->spec.array().parallelism();
  job->array = std::move(array);
  job->queue_reason.clear();
  open_arrays_.insert(job->id);
  // Its JobQueued event counted the replicas of one element.
  for (Event& e : fx->events) {
    if (e.job_id == job->id && e.type == "JobQueued") {
      e.reason = absl::StrCat("submitted as a job array, project ", job->project);
    }
  }
  AddEvent(fx, now, job, "", "", "ArraySubmitted",
           absl::StrCat("job array of ", Elements(job->array->count()), " (indices ",
                        job->spec.array().indices(), "), ",
                        job->array->parallelism > 0
                            ? absl::StrCat("at most ", job->array->parallelism, " at once")
                            : std::string("no limit on how many run at once")));
  Touch(job, now, fx);
}

void Core::CountArrayElements(absl::Time now, Effects* fx) {
  const std::vector<std::string> touched(fx->jobs.begin(), fx->jobs.end());
  for (const std::string& id : touched) {
    Job* e = jobs_.Find(id);
    if (e == nullptr || !e->element || e->element->counted == e->state) continue;
    Job* a = jobs_.Find(e->element->array);
    if (a == nullptr || !a->array) continue;
    if (e->element->counted != v1::JOB_STATE_UNSPECIFIED) {
      a->array->by_state[e->element->counted]--;
    }
    a->array->by_state[e->state]++;
    e->element->counted = e->state;
    if (e->state == v1::JOB_STATE_RUNNING && !a->start_time) a->start_time = now;
    Touch(a, now, fx);
    if (a->array->done() && !IsTerminal(a->state)) EndArray(a, now, fx);
  }
}

void Core::FeedArrays(absl::Time now, Effects* fx) {
  for (auto it = open_arrays_.begin(); it != open_arrays_.end();) {
    Job* a = jobs_.Find(*it);
    if (a == nullptr || !a->array || IsTerminal(a->state)) {
      it = open_arrays_.erase(it);
      continue;
    }
    ++it;
    JobArray& arr = *a->array;
    if (arr.cancel_requested || a->held || WaitsOnDependency(a->dependencies, nullptr)) continue;
    while (arr.cursor < arr.indices.size() && (arr.started.count(arr.indices[arr.cursor]) != 0 ||
                                               arr.cancelled.count(arr.indices[arr.cursor]) != 0)) {
      ++arr.cursor;
    }
    for (size_t pos = arr.cursor; pos < arr.indices.size(); ++pos) {
      if (arr.parallelism > 0 && arr.live() >= arr.parallelism) break;
      if (arr.In(v1::JOB_STATE_QUEUED) >= kArrayStartWindow) break;
      const int32_t index = arr.indices[pos];
      if (arr.started.count(index) != 0 || arr.cancelled.count(index) != 0 ||
          arr.held.count(index) != 0) {
        continue;
      }
      StartElement(a, index, now, fx);
    }
  }
}

Job* Core::StartElement(Job* array, int32_t index, absl::Time now, Effects* fx) {
  const std::string id = ElementIdOf(array->id, index);
  const Job* started =
      lifecycle_.Submit(ElementSpec(array->spec, index), options_.checkpoint_root, now, fx, id);
  Job* e = jobs_.Find(started->id);
  e->creator = array->creator;
  e->checkpoint_root = CheckpointRootOf(e->checkpoint_dir, CheckpointRoots());
  ArrayMember m;
  m.array = array->id;
  m.index = index;
  m.count = array->array->count();
  m.counted = v1::JOB_STATE_QUEUED;
  e->element = std::move(m);
  array->array->started.insert(index);
  array->array->by_state[v1::JOB_STATE_QUEUED]++;
  Touch(array, now, fx);
  return e;
}

void Core::EndArray(Job* array, absl::Time now, Effects* fx) {
  const JobArray& arr = *array->array;
  const v1::JobState state = arr.EndState();
  JobError error;
  std::string reason;
  const int32_t cancelled =
      arr.In(v1::JOB_STATE_CANCELLED) + static_cast<int32_t>(arr.cancelled.size());
  if (state == v1::JOB_STATE_FAILED) {
    error.code = absl::StatusCode::kAborted;
    error.reason = FailureClass::kUserError;
    error.message = absl::StrCat(Elements(arr.In(v1::JOB_STATE_FAILED)), " of ", arr.count(),
                                 " failed (`trainctl list --array ", array->id, "` shows which).");
    reason = error.message;
  } else if (state == v1::JOB_STATE_CANCELLED) {
    error.code = absl::StatusCode::kCancelled;
    error.message = absl::StrCat(Elements(cancelled), " of ", arr.count(), " cancelled.");
    reason = error.message;
  } else {
    reason = absl::StrCat("every one of its ", Elements(arr.count()), " succeeded");
  }
  open_arrays_.erase(array->id);
  lifecycle_.End(array, state, error, reason, now, fx);
}

Job* Core::UnstartedElement(const std::string& id, int32_t* index) {
  const std::optional<ElementId> e = ParseElementId(id);
  if (!e) return nullptr;
  Job* a = jobs_.Find(e->array);
  if (a == nullptr || !a->array || !a->array->Contains(e->index) ||
      a->array->started.count(e->index) != 0) {
    return nullptr;
  }
  *index = e->index;
  return a;
}

const Job* Core::CancelArray(Job* array, absl::Time now, Effects* fx) {
  if (IsTerminal(array->state) || array->array->cancel_requested) return array;
  JobArray& arr = *array->array;
  arr.cancel_requested = true;
  int32_t unstarted = 0;
  for (int32_t index : arr.indices) {
    if (arr.started.count(index) != 0 || !arr.cancelled.insert(index).second) continue;
    ++unstarted;
  }
  arr.held.clear();
  int32_t stopping = 0;
  for (int32_t index : arr.started) {
    Job* e = jobs_.Find(ElementIdOf(array->id, index));
    if (e == nullptr || IsTerminal(e->state)) continue;
    lifecycle_.Cancel(e, now, fx);
    ++stopping;
  }
  AddEvent(fx, now, array, "", "", "ArrayCancelled",
           absl::StrCat("cancelled by request: ", Elements(unstarted), " will not start, ",
                        Elements(stopping), " cancelled"));
  Touch(array, now, fx);
  CountArrayElements(now, fx);
  if (arr.done() && !IsTerminal(array->state)) EndArray(array, now, fx);
  return array;
}

absl::StatusOr<const Job*> Core::HoldArray(Job* array, const std::string& actor,
                                           const std::string& reason, absl::Time now, Effects* fx) {
  if (IsTerminal(array->state) || array->array->cancel_requested) {
    return absl::FailedPreconditionError(
        absl::StrCat("job array ", array->id, " is ", EnumShortName(array->state),
                     array->array->cancel_requested ? " (cancelled)" : "",
                     ": only an array with elements still to start can be held"));
  }
  if (array->held) {
    return absl::FailedPreconditionError(
        absl::StrCat("job array ", array->id, " is held already", By(array->held_by)));
  }
  array->held = true;
  array->held_by = actor;
  array->hold_reason = reason;
  array->hold_time = now;
  // Its queued elements too: nothing of the array is admitted until it is released.
  int32_t queued = 0;
  for (int32_t index : array->array->started) {
    const std::string id = ElementIdOf(array->id, index);
    const Job* e = jobs_.Find(id);
    if (e == nullptr || e->state != v1::JOB_STATE_QUEUED || e->held) continue;
    if (HoldJob(id, actor, absl::StrCat("array ", array->id, " held"), now, fx).ok()) ++queued;
  }
  AddEvent(fx, now, array, "", "", "JobHeld",
           absl::StrCat("held", By(actor), reason.empty() ? "" : ": " + reason, "; ",
                        Elements(array->array->waiting()), " not started and ", Elements(queued),
                        " queued are not admitted until released"));
  Touch(array, now, fx);
  return array;
}

absl::StatusOr<const Job*> Core::ReleaseArray(Job* array, const std::string& actor, absl::Time now,
                                              Effects* fx) {
  if (!array->held) {
    return absl::FailedPreconditionError(absl::StrCat("job array ", array->id, " is not held"));
  }
  array->held = false;
  array->held_by.clear();
  array->hold_reason.clear();
  array->hold_time.reset();
  int32_t released = 0;
  for (int32_t index : array->array->started) {
    const std::string id = ElementIdOf(array->id, index);
    const Job* e = jobs_.Find(id);
    if (e == nullptr || !e->held) continue;
    if (ReleaseJob(id, actor, now, fx).ok()) ++released;
  }
  AddEvent(fx, now, array, "", "", "JobReleased",
           absl::StrCat("released", By(actor), "; ", Elements(released), " released with it"));
  Touch(array, now, fx);
  queue_.Wake();
  return array;
}

absl::StatusOr<const Job*> Core::UnstartedOp(Job* array, int32_t index, UnstartedAction op,
                                             const std::string& actor, absl::Time now,
                                             Effects* fx) {
  JobArray& arr = *array->array;
  const std::string id = ElementIdOf(array->id, index);
  if (op == UnstartedAction::kCancel) {
    if (arr.cancelled.insert(index).second) {
      arr.held.erase(index);
      unstarted_ends_.push_back(id);
      AddEvent(fx, now, array, "", "", "ElementCancelled",
               absl::StrCat("element ", id, " cancelled", By(actor), " before it started"));
      Touch(array, now, fx);
      if (arr.done() && !IsTerminal(array->state)) EndArray(array, now, fx);
    }
    return array;
  }
  if (arr.cancelled.count(index) != 0 || IsTerminal(array->state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("element ", id, " was cancelled before it started"));
  }
  if (op == UnstartedAction::kHold) {
    if (!arr.held.insert(index).second) {
      return absl::FailedPreconditionError(absl::StrCat("element ", id, " is held already"));
    }
    AddEvent(fx, now, array, "", "", "ElementHeld",
             absl::StrCat("element ", id, " held", By(actor), " before it started"));
  } else {
    if (arr.held.erase(index) == 0) {
      return absl::FailedPreconditionError(absl::StrCat("element ", id, " is not held"));
    }
    AddEvent(fx, now, array, "", "", "ElementReleased",
             absl::StrCat("element ", id, " released", By(actor)));
    queue_.Wake();
  }
  Touch(array, now, fx);
  return array;
}

}  // namespace trainctl::sched
