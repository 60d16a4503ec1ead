// Lists of small non-negative indices (GPU indices, CPU numbers) in the kernel's list format:
// "0-3,6,8-9". Used for CUDA_VISIBLE_DEVICES-like displays, cpusets and node views.
//
//   FormatIndexList({0, 1, 2, 3, 6});   // "0-3,6"
//   ParseIndexList("0-3,6");            // {0, 1, 2, 3, 6}
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl {

// Sorted and deduplicated; runs of two or more consecutive indices as "a-b"; "" for none.
std::string FormatIndexList(std::vector<int32_t> indices);

// Parses "0-3,6" (spaces and a trailing newline allowed; "" is empty) into sorted, deduplicated
// indices. INVALID_ARGUMENT for anything else, e.g. "3-1" or "a", or an index above 1 << 20.
absl::StatusOr<std::vector<int32_t>> ParseIndexList(absl::string_view text);

}  // namespace trainctl
