// Job arrays in the core's model: what an array's Job keeps of its elements, and what an
// element's Job keeps of its array (JobSpec.array; scheduler/job_arrays.h has the rules).
//
// An array is one Job that never runs: its elements become jobs of their own
// ("<array id>-<index>") only when they start (Core::FeedArrays), so an array of 10,000 elements
// costs one row until its elements start. The array keeps which indices started, which were
// cancelled or held before they started, and how many started elements are in each state.
// Persisted as the Job's v1::ArrayStatus (index lists, counts); the positions are in memory.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

struct JobArray {
  // spec.array's indices, ascending; and its parallelism (0: no limit).
  std::vector<int32_t> indices;
  int32_t parallelism = 0;
  // Indices that became jobs; cancelled before they started; held before they started.
  std::set<int32_t> started;
  std::set<int32_t> cancelled;
  std::set<int32_t> held;
  // The array was cancelled: no more elements start.
  bool cancel_requested = false;
  // Started elements by their state (indexed by v1::JobState).
  std::array<int32_t, 8> by_state{};
  // In memory: positions in `indices` before it have started or were cancelled.
  size_t cursor = 0;

  int32_t count() const { return static_cast<int32_t>(indices.size()); }
  // Not started and not cancelled (held ones included).
  int32_t waiting() const {
    return count() - static_cast<int32_t>(started.size() + cancelled.size());
  }
  int32_t In(v1::JobState s) const { return by_state[static_cast<size_t>(s)]; }
  // Started elements that have not ended.
  int32_t live() const {
    return In(v1::JOB_STATE_QUEUED) + In(v1::JOB_STATE_PENDING) + In(v1::JOB_STATE_RUNNING) +
           In(v1::JOB_STATE_CANCELLING);
  }
  // Admitted elements (PENDING, RUNNING, CANCELLING): what parallelism bounds.
  int32_t admitted() const {
    return In(v1::JOB_STATE_PENDING) + In(v1::JOB_STATE_RUNNING) + In(v1::JOB_STATE_CANCELLING);
  }
  // Every element ended (or was cancelled before it started).
  bool done() const { return waiting() == 0 && live() == 0; }
  // The state the API shows: QUEUED until an element is admitted (or ends), RUNNING
  // (CANCELLING once cancelled) until every one ended.
  v1::JobState ShownState() const;
  // ShownState's answer before the end: QUEUED, RUNNING or CANCELLING.
  v1::JobState LiveState() const;
  // The array's end once done(): FAILED if an element failed, else CANCELLED if one was
  // cancelled, else SUCCEEDED.
  v1::JobState EndState() const;
  bool Contains(int32_t index) const;
};

// What an element's Job keeps of its array.
struct ArrayMember {
  std::string array;
  int32_t index = 0;
  int32_t count = 0;
  // In memory: the state its array counts it in (JobArray::by_state); UNSPECIFIED when not yet
  // counted.
  v1::JobState counted = v1::JOB_STATE_UNSPECIFIED;
};

v1::ArrayStatus ArrayStatusOf(const JobArray& a);
// The array of a stored job whose spec.array is set. INVALID_ARGUMENT for indices that do not
// parse or index lists that name indices outside them.
absl::StatusOr<JobArray> JobArrayFromProto(const v1::JobSpec& spec, const v1::ArrayStatus& status);

// The array fields of a Job's API message: Job.array (and the state shown, for an array that
// has not ended) and Job.element.
void ArrayFieldsToProto(const std::optional<JobArray>& array,
                        const std::optional<ArrayMember>& element, v1::JobState state,
                        v1::Job* out);
// Their model: an array that has not ended is QUEUED in the core (`*state`), whatever it showed.
absl::Status ArrayFieldsFromProto(const v1::Job& p, std::optional<JobArray>* array,
                                  std::optional<ArrayMember>* element, v1::JobState* state);

}  // namespace trainctl::sched
