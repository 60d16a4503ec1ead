// Job arrays in the core's model (job_array.h).
#include "model/job_array.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/array_ids.h"
#include "common/index_list.h"
#include "common/job_states.h"

namespace trainctl::sched {
namespace {

std::string ListOf(const std::set<int32_t>& s) {
  return FormatIndexList(std::vector<int32_t>(s.begin(), s.end()));
}

absl::Status ReadList(const std::string& text, const JobArray& a, const char* what,
                      std::set<int32_t>* out) {
  absl::StatusOr<std::vector<int32_t>> list = ParseIndexList(text);
  if (!list.ok()) return list.status();
  for (int32_t i : *list) {
    if (!a.Contains(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("array status: ", what, " index ", i, " is not one of the array's"));
    }
    out->insert(i);
  }
  return absl::OkStatus();
}

}  // namespace

bool JobArray::Contains(int32_t index) const {
  return std::binary_search(indices.begin(), indices.end(), index);
}

v1::JobState JobArray::ShownState() const { return done() ? EndState() : LiveState(); }

v1::JobState JobArray::LiveState() const {
  if (cancel_requested) return v1::JOB_STATE_CANCELLING;
  // RUNNING once an element was admitted: one is admitted now, or one ended.
  const int32_t ended = In(v1::JOB_STATE_SUCCEEDED) + In(v1::JOB_STATE_FAILED) +
                        In(v1::JOB_STATE_CANCELLED) + static_cast<int32_t>(cancelled.size());
  return admitted() > 0 || ended > 0 ? v1::JOB_STATE_RUNNING : v1::JOB_STATE_QUEUED;
}

v1::JobState JobArray::EndState() const {
  if (In(v1::JOB_STATE_FAILED) > 0) return v1::JOB_STATE_FAILED;
  if (In(v1::JOB_STATE_CANCELLED) > 0 || !cancelled.empty()) return v1::JOB_STATE_CANCELLED;
  return v1::JOB_STATE_SUCCEEDED;
}

v1::ArrayStatus ArrayStatusOf(const JobArray& a) {
  v1::ArrayStatus s;
  s.set_count(a.count());
  s.set_waiting(a.waiting());
  s.set_held(static_cast<int32_t>(a.held.size()));
  s.set_queued(a.In(v1::JOB_STATE_QUEUED));
  s.set_pending(a.In(v1::JOB_STATE_PENDING));
  s.set_running(a.In(v1::JOB_STATE_RUNNING));
  s.set_cancelling(a.In(v1::JOB_STATE_CANCELLING));
  s.set_succeeded(a.In(v1::JOB_STATE_SUCCEEDED));
  s.set_failed(a.In(v1::JOB_STATE_FAILED));
  s.set_cancelled(a.In(v1::JOB_STATE_CANCELLED) + static_cast<int32_t>(a.cancelled.size()));
  s.set_started_indices(ListOf(a.started));
  s.set_cancelled_indices(ListOf(a.cancelled));
  s.set_held_indices(ListOf(a.held));
  s.set_cancel_requested(a.cancel_requested);
  return s;
}

absl::StatusOr<JobArray> JobArrayFromProto(const v1::JobSpec& spec, const v1::ArrayStatus& status) {
  JobArray a;
  absl::StatusOr<std::vector<int32_t>> indices = ParseArrayIndices(spec.array().indices());
  if (!indices.ok()) return indices.status();
  a.indices = *std::move(indices);
  a.parallelism = spec.array().parallelism();
  if (absl::Status s = ReadList(status.started_indices(), a, "started", &a.started); !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadList(status.cancelled_indices(), a, "cancelled", &a.cancelled);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadList(status.held_indices(), a, "held", &a.held); !s.ok()) return s;
  a.cancel_requested = status.cancel_requested();
  a.by_state[v1::JOB_STATE_QUEUED] = status.queued();
  a.by_state[v1::JOB_STATE_PENDING] = status.pending();
  a.by_state[v1::JOB_STATE_RUNNING] = status.running();
  a.by_state[v1::JOB_STATE_CANCELLING] = status.cancelling();
  a.by_state[v1::JOB_STATE_SUCCEEDED] = status.succeeded();
  a.by_state[v1::JOB_STATE_FAILED] = status.failed();
  a.by_state[v1::JOB_STATE_CANCELLED] =
      status.cancelled() - static_cast<int32_t>(a.cancelled.size());
  return a;
}

void ArrayFieldsToProto(const std::optional<JobArray>& array,
                        const std::optional<ArrayMember>& element, v1::JobState state,
                        v1::Job* out) {
  if (array) {
    *out->mutable_array() = ArrayStatusOf(*array);
    // An array's own state is QUEUED until it ends (it never runs); the API shows its elements'.
    out->set_state(IsTerminal(state) ? state : array->ShownState());
  }
  if (element) {
    v1::ArrayElement* e = out->mutable_element();
    e->set_array(element->array);
    e->set_index(element->index);
    e->set_count(element->count);
  }
}

absl::Status ArrayFieldsFromProto(const v1::Job& p, std::optional<JobArray>* array,
                                  std::optional<ArrayMember>* element, v1::JobState* state) {
  if (p.spec().has_array()) {
    absl::StatusOr<JobArray> a = JobArrayFromProto(p.spec(), p.array());
    if (!a.ok()) return a.status();
    *array = *std::move(a);
    // Shown RUNNING or CANCELLING while its elements run; QUEUED in the core until it ends.
    if (!IsTerminal(*state)) *state = v1::JOB_STATE_QUEUED;
  }
  if (p.has_element()) {
    ArrayMember m;
    m.array = p.element().array();
    m.index = p.element().index();
    m.count = p.element().count();
    m.counted = *state;  // its array's counts were stored with it
    *element = std::move(m);
  }
  return absl::OkStatus();
}

}  // namespace trainctl::sched
