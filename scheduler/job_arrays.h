// Job arrays (JobSpec.array; Slurm's --array=0-99%8): the rules that need no core state.
//
// An array is one job that never runs. Its elements are jobs of their own, "<array id>-<index>",
// each with the array's spec made its own (ElementSpec): `{{index}}` replaced in its pools'
// command, args and env values and in its checkpointDir, no array, no dependencies (the array's
// were met before any element started). The core starts elements in index order, at most
// `parallelism` admitted at once, and no more than kArrayStartWindow queued at once, so a 10,000
// element array costs memory for its started elements only (Core::FeedArrays).
//
// Elements not started yet are not jobs: reads synthesize them from the array's row
// (SynthesizeElement for `get <array>-7`, WaitingRow for the one row `list --array` shows for
// all of them), with the blocker WaitingBlocker says: HELD, DEPENDENCY or ARRAY_LIMIT.
//
//   TC_RETURN_IF_ERROR(ValidateArraySpec(spec));
//   v1::JobSpec element = ElementSpec(array.spec, 7);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "model/model.h"
#include "scheduler/placement_kind.h"

namespace trainctl::sched {

// At most this many elements of one array wait QUEUED (started, not admitted) at once.
inline constexpr int32_t kArrayStartWindow = 64;

// INVALID_ARGUMENT naming spec.array.indices or spec.array.parallelism.
absl::Status ValidateArraySpec(const v1::JobSpec& spec);

// The spec of element `index` of the array whose spec is `array_spec`.
v1::JobSpec ElementSpec(const v1::JobSpec& array_spec, int32_t index);

// Why the array's elements not started yet wait: HELD (the array is held), DEPENDENCY (the
// array waits for its dependencies), or ARRAY_LIMIT (parallelism elements admitted, or the
// earlier elements still queued). `text` is "KIND: ...".
struct ArrayWait {
  BlockerKind kind = BlockerKind::kArrayLimit;
  std::string text;
};
ArrayWait WaitingBlocker(const v1::Job& array);

// Element `index` of `array` as read before it started: QUEUED with its blocker, or CANCELLED
// (cancelled before it started, or its array ended). nullopt when the index is not one of the
// array's, or it started (it is a job of its own).
std::optional<v1::Job> SynthesizeElement(const v1::Job& array, int32_t index);

// The one row standing for the array's elements not started yet: id "<array>-[<indices>]",
// QUEUED with the blocker. nullopt when none waits.
std::optional<v1::Job> WaitingRow(const v1::Job& array);

// The indices of `array` that have not started and were not cancelled.
std::vector<int32_t> WaitingIndices(const v1::Job& array);

}  // namespace trainctl::sched
