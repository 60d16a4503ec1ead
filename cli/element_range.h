// Commands that act on one job (cancel, hold, release, delete) also take a range of a job array's
// elements, "<array id>-[3-5,9]" (common/array_ids.h): trainctld takes one id per call, so the
// CLI expands the range and makes one call per element, in index order.
//
//   return ForEachJobId(args.args()[0], [&](const std::string& id) -> absl::StatusOr<int> {
//     ... one call for `id`, print its line ...
//   }, std::cerr);
//
// Thread-compatible.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace trainctl::cli {

// The ids a command given `id` acts on: {id}, or for a range "<array>-[<indices>]" each
// element's id ("<array>-<index>") in index order. INVALID_ARGUMENT, with ParseElementRange's
// message, for a range whose indices are not a valid list ("j-1-[5-3]").
absl::StatusOr<std::vector<std::string>> ExpandJobIds(const std::string& id);

// Runs `one` for `id`: once, returning its result as it is, for one job; for a range, once per
// element in index order, each error written to `err` as "error: <element id>: CODE: message"
// and the next element tried; then kExitError when any failed (the status a single id's error
// gives), else the largest status `one` returned. UNAVAILABLE (trainctld cannot be reached) ends
// a range early, saying how many elements were not tried. A malformed range: ExpandJobIds' error,
// before any call.
absl::StatusOr<int> ForEachJobId(const std::string& id,
                                 const std::function<absl::StatusOr<int>(const std::string&)>& one,
                                 std::ostream& err);

}  // namespace trainctl::cli
