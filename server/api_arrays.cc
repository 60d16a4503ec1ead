// The API's part in job arrays (scheduler/job_arrays.h): replies for elements that have not
// started, and the deletion of an array with its elements.
#include "absl/strings/str_cat.h"
#include "common/array_ids.h"
#include "common/enum_names.h"
#include "common/index_list.h"
#include "common/job_states.h"
#include "model/model_proto.h"
#include "scheduler/job_arrays.h"
#include "server/api.h"

namespace trainctl::server {

absl::StatusOr<v1::Job> ElementReply(const std::string& id,
                                     const absl::StatusOr<const sched::Job*>& job,
                                     const SecretRedactor& redactor) {
  if (!job.ok()) return job.status();
  v1::Job view = sched::ToProto(**job);
  redactor.Redact(&view);
  // An op on an element not started yet acts on its array's row and returns the array.
  if (view.id() == id || !view.has_array()) return view;
  const std::optional<ElementId> e = ParseElementId(id);
  if (!e) return view;
  std::optional<v1::Job> element = sched::SynthesizeElement(view, e->index);
  if (!element) return view;
  return *std::move(element);
}

absl::Status Api::DeleteArrayElements(Turn& t, const std::string& id, const std::string& why) {
  v1::Job array;
  if (const sched::Job* held = t.core.FindJob(id)) {
    if (!held->array) return absl::OkStatus();
    array = sched::ToProto(*held);
  } else {
    absl::StatusOr<v1::Job> stored = Stored(t, id);
    if (!stored.ok() || !stored->has_array()) return absl::OkStatus();  // the core's answer
    array = *std::move(stored);
  }
  if (!IsTerminal(array.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job array ", id, " is ", EnumShortName(array.state()),
                     ": an array is deleted with its "
                     "elements once every one ended; `trainctl cancel ",
                     id, "` ends it"));
  }
  absl::StatusOr<std::vector<int32_t>> started = ParseIndexList(array.array().started_indices());
  if (!started.ok()) return started.status();
  // Each element first (those retention deleted already are skipped), then the array: a failure
  // leaves the array, so a second delete finishes the job.
  for (int32_t index : *started) {
    const std::string element = ElementIdOf(id, index);
    absl::Status deleted = t.core.DeleteJob(element, why, t.now, t.fx);
    if (absl::IsNotFound(deleted)) {
      absl::StatusOr<v1::Job> stored = Stored(t, element);
      if (absl::IsNotFound(stored.status())) continue;
      deleted = stored.ok() ? t.core.DeleteStoredJob(*stored, why, t.now, t.fx) : stored.status();
    }
    if (!deleted.ok()) {
      return absl::Status(deleted.code(), absl::StrCat("element ", element, " of job array ", id,
                                                       ": ", deleted.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace trainctl::server
