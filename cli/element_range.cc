// Ranges of a job array's elements for the commands that act on one job (element_range.h).
#include "cli/element_range.h"

#include <algorithm>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "common/array_ids.h"

namespace trainctl::cli {

absl::StatusOr<std::vector<std::string>> ExpandJobIds(const std::string& id) {
  absl::StatusOr<std::optional<ElementRange>> range = ParseElementRange(id);
  if (!range.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("element range ", id, ": ", range.status().message()));
  }
  if (!range->has_value()) return std::vector<std::string>{id};
  std::vector<std::string> ids;
  ids.reserve((*range)->indices.size());
  for (int32_t index : (*range)->indices) ids.push_back(ElementIdOf((*range)->array, index));
  return ids;
}

absl::StatusOr<int> ForEachJobId(const std::string& id,
                                 const std::function<absl::StatusOr<int>(const std::string&)>& one,
                                 std::ostream& err) {
  absl::StatusOr<std::optional<ElementRange>> range = ParseElementRange(id);
  if (range.ok() && !range->has_value()) return one(id);
  absl::StatusOr<std::vector<std::string>> ids = ExpandJobIds(id);
  if (!ids.ok()) return ids.status();
  int result = kExitOk;
  for (size_t i = 0; i < ids->size(); ++i) {
    const std::string& element = (*ids)[i];
    absl::StatusOr<int> status = one(element);
    if (status.ok()) {
      result = std::max(result, *status);
      continue;
    }
    result = kExitError;
    err << "error: " << element << ": " << absl::StatusCodeToString(status.status().code()) << ": "
        << status.status().message() << std::endl;
    if (status.status().code() == absl::StatusCode::kUnavailable && i + 1 < ids->size()) {
      const size_t left = ids->size() - i - 1;
      err << "error: " << left << (left == 1 ? " element" : " elements") << " not tried ("
          << (*ids)[i + 1] << (left == 1 ? "" : absl::StrCat(" to ", ids->back()))
          << ") as trainctld cannot be reached" << std::endl;
      break;
    }
  }
  return result;
}

}  // namespace trainctl::cli
