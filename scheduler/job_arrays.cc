// Job arrays: validation, element specs and the reads of elements not started (job_arrays.h).
#include "scheduler/job_arrays.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/array_ids.h"
#include "common/enum_names.h"
#include "common/index_list.h"
#include "common/job_states.h"
#include "scheduler/dependencies.h"
#include "scheduler/job_validation.h"

namespace trainctl::sched {
namespace {

std::string Replace(const std::string& text, const std::string& index) {
  return absl::StrReplaceAll(text, {{"{{index}}", index}});
}

std::vector<int32_t> ListOrEmpty(const std::string& text) {
  absl::StatusOr<std::vector<int32_t>> list = ParseIndexList(text);
  return list.ok() ? *std::move(list) : std::vector<int32_t>();
}

// The array's state as read: terminal once it ended.
bool Ended(const v1::Job& array) { return IsTerminal(array.state()); }

std::string Counted(int32_t n, const char* one) {
  return absl::StrCat(n, " ", one, n == 1 ? "" : "s");
}

}  // namespace

absl::Status ValidateArraySpec(const v1::JobSpec& spec) {
  if (!spec.has_array()) return absl::OkStatus();
  absl::StatusOr<std::vector<int32_t>> indices = ParseArrayIndices(spec.array().indices());
  if (!indices.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.array.indices: ", indices.status().message()));
  }
  const int32_t p = spec.array().parallelism();
  if (p < 0 || p > kMaxArrayElements) {
    return absl::InvalidArgumentError(absl::StrCat("spec.array.parallelism must be 0..",
                                                   kMaxArrayElements, " (0: no limit), got ", p));
  }
  if (spec.display_name().size() + 8 > static_cast<size_t>(kMaxDisplayNameLength)) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.displayName must be at most ", kMaxDisplayNameLength - 8,
                     " characters for a job array (its elements add \"-<index>\"), got ",
                     spec.display_name().size()));
  }
  return absl::OkStatus();
}

v1::JobSpec ElementSpec(const v1::JobSpec& array_spec, int32_t index) {
  v1::JobSpec spec = array_spec;
  const std::string i = absl::StrCat(index);
  spec.clear_array();
  spec.clear_depends_on();
  spec.clear_dependency_policy();
  spec.set_display_name(absl::StrCat(array_spec.display_name(), "-", i));
  if (!spec.checkpoint_dir().empty()) spec.set_checkpoint_dir(Replace(spec.checkpoint_dir(), i));
  for (v1::WorkerPool& pool : *spec.mutable_worker_pools()) {
    for (std::string& arg : *pool.mutable_command()) arg = Replace(arg, i);
    for (std::string& arg : *pool.mutable_args()) arg = Replace(arg, i);
    for (auto& [key, value] : *pool.mutable_env()) value = Replace(value, i);
  }
  return spec;
}

ArrayWait WaitingBlocker(const v1::Job& array) {
  ArrayWait w;
  if (const QuietWait quiet = WaitsWithoutBlocking(array); !quiet.text.empty()) {
    w.kind = quiet.kind;
    w.text = quiet.text;
    return w;
  }
  const v1::ArrayStatus& s = array.array();
  const int32_t admitted = s.pending() + s.running() + s.cancelling();
  const int32_t parallelism = array.spec().array().parallelism();
  if (parallelism > 0 && admitted + s.queued() >= parallelism) {
    w.text = ReasonText(
        BlockerKind::kArrayLimit,
        absl::StrCat(Counted(admitted + s.queued(), "element"), " of array ", array.id(),
                     " started and not ended (parallelism ", parallelism, "); ",
                     Counted(s.waiting(), "element"), s.waiting() == 1 ? " waits" : " wait"));
    return w;
  }
  w.text = ReasonText(BlockerKind::kArrayLimit,
                      absl::StrCat("waiting for earlier elements of array ", array.id(),
                                   " to be admitted (at most ", kArrayStartWindow,
                                   " of its elements wait in the queue at once)"));
  return w;
}

std::vector<int32_t> WaitingIndices(const v1::Job& array) {
  absl::StatusOr<std::vector<int32_t>> all = ParseArrayIndices(array.spec().array().indices());
  if (!all.ok()) return {};
  std::vector<int32_t> started = ListOrEmpty(array.array().started_indices());
  std::vector<int32_t> cancelled = ListOrEmpty(array.array().cancelled_indices());
  std::vector<int32_t> out;
  for (int32_t i : *all) {
    if (std::binary_search(started.begin(), started.end(), i)) continue;
    if (std::binary_search(cancelled.begin(), cancelled.end(), i)) continue;
    out.push_back(i);
  }
  return out;
}

namespace {

// The fields every read of not-started elements shares.
v1::Job Unstarted(const v1::Job& array, const std::string& id) {
  v1::Job out;
  out.set_id(id);
  out.set_project(array.project());
  out.set_creator(array.creator());
  out.set_priority(array.priority());
  *out.mutable_create_time() = array.create_time();
  *out.mutable_update_time() = array.update_time();
  out.mutable_element()->set_array(array.id());
  out.mutable_element()->set_count(array.array().count());
  return out;
}

void SetWaiting(const v1::Job& array, bool held, v1::Job* out) {
  out->set_state(v1::JOB_STATE_QUEUED);
  ArrayWait w = WaitingBlocker(array);
  if (held && w.kind != BlockerKind::kHeld) {
    w.kind = BlockerKind::kHeld;
    w.text = ReasonText(
        BlockerKind::kHeld,
        absl::StrCat("held before it started; `trainctl release ", out->id(), "` lets it start"));
  }
  out->set_queue_reason(w.text);
  *out->mutable_queue_status()->add_blockers() = MakeBlocker(w.kind, w.text);
}

}  // namespace

std::optional<v1::Job> SynthesizeElement(const v1::Job& array, int32_t index) {
  absl::StatusOr<std::vector<int32_t>> all = ParseArrayIndices(array.spec().array().indices());
  if (!all.ok() || !std::binary_search(all->begin(), all->end(), index)) return std::nullopt;
  const std::vector<int32_t> started = ListOrEmpty(array.array().started_indices());
  if (std::binary_search(started.begin(), started.end(), index)) return std::nullopt;
  v1::Job out = Unstarted(array, ElementIdOf(array.id(), index));
  out.mutable_element()->set_index(index);
  *out.mutable_spec() = ElementSpec(array.spec(), index);
  out.set_display_name(out.spec().display_name());
  const std::vector<int32_t> cancelled = ListOrEmpty(array.array().cancelled_indices());
  if (std::binary_search(cancelled.begin(), cancelled.end(), index) || Ended(array)) {
    out.set_state(v1::JOB_STATE_CANCELLED);
    out.mutable_error()->set_message(absl::StrCat("Cancelled before it started (array ", array.id(),
                                                  " ", Ended(array) ? "ended" : "element cancelled",
                                                  ")."));
    if (array.has_end_time()) *out.mutable_end_time() = array.end_time();
    return out;
  }
  const std::vector<int32_t> held = ListOrEmpty(array.array().held_indices());
  SetWaiting(array, std::binary_search(held.begin(), held.end(), index), &out);
  return out;
}

std::optional<v1::Job> WaitingRow(const v1::Job& array) {
  if (Ended(array)) return std::nullopt;
  const std::vector<int32_t> waiting = WaitingIndices(array);
  if (waiting.empty()) return std::nullopt;
  v1::Job out = Unstarted(array, absl::StrCat(array.id(), "-[", FormatIndexList(waiting), "]"));
  out.set_display_name(absl::StrCat(array.display_name(), " (",
                                    Counted(static_cast<int32_t>(waiting.size()), "element"),
                                    " not started)"));
  SetWaiting(array, false, &out);
  return out;
}

}  // namespace trainctl::sched
