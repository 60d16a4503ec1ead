// Job arrays' indices and element ids (JobSpec.array; Slurm's --array=0-99:2%8).
//
// An array's indices are written as comma-separated parts: a single index "7", a range "0-99",
// a range with a step "0-99:2". Its elements are jobs named "<array id>-<index>"; a range of
// elements is written "<array id>-[3-5,9]".
//
//   ParseArrayIndices("0-9:3,20");          // {0, 3, 6, 9, 20}
//   ParseElementId("j-0abc-7");             // {"j-0abc", 7}
//   ParseElementRange("j-0abc-[3-5]");      // {"j-0abc", {3, 4, 5}}
//   ParseArrayShorthand("0-99%8");          // {"0-99", 8}   (trainctl submit --array)
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl {

// Indices are 0..kMaxArrayIndex; an array has at most kMaxArrayElements of them.
inline constexpr int32_t kMaxArrayIndex = 999'999;
inline constexpr int32_t kMaxArrayElements = 100'000;

// The indices in ascending order. INVALID_ARGUMENT naming the part at fault for anything else:
// an empty list, "5-3", a step below 1, an index out of range, an index named twice, or more
// than kMaxArrayElements indices.
absl::StatusOr<std::vector<int32_t>> ParseArrayIndices(absl::string_view text);

// An element id split into its array's id and its index; nullopt when `id` does not end in
// "-<digits>" after a non-empty array id.
struct ElementId {
  std::string array;
  int32_t index = 0;
};
std::optional<ElementId> ParseElementId(absl::string_view id);
std::string ElementIdOf(absl::string_view array, int32_t index);

// "<array>-[<indices>]": the array's id and the indices (ParseArrayIndices' syntax); nullopt when
// `id` is not of that form, INVALID_ARGUMENT when the indices are not a valid list.
struct ElementRange {
  std::string array;
  std::vector<int32_t> indices;
};
absl::StatusOr<std::optional<ElementRange>> ParseElementRange(absl::string_view id);

// `submit --array`'s "<indices>[%<parallelism>]": the indices text (validated) and the
// parallelism (0: none given). INVALID_ARGUMENT for a bad list or a parallelism outside
// 1..kMaxArrayElements.
struct ArrayShorthand {
  std::string indices;
  int32_t parallelism = 0;
};
absl::StatusOr<ArrayShorthand> ParseArrayShorthand(absl::string_view text);

}  // namespace trainctl
