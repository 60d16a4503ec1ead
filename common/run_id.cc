#include "common/run_id.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl {
namespace {

bool ParseCount(absl::string_view text, int32_t* out) {
  return !text.empty() && text.size() <= 9 &&
         text.find_first_not_of("0123456789") == absl::string_view::npos &&
         absl::SimpleAtoi(text, out);
}

}  // namespace

std::string MakeRunId(const RunIdParts& parts) {
  return absl::StrCat(parts.job_id, "/", parts.attempt, "/", parts.replica_name, "/",
                      parts.restart);
}

std::optional<RunIdParts> SplitRunId(absl::string_view run_id) {
  std::vector<absl::string_view> parts = absl::StrSplit(run_id, '/');
  RunIdParts out;
  if (parts.size() != 4 || !ParseCount(parts[1], &out.attempt) ||
      !ParseCount(parts[3], &out.restart)) {
    return std::nullopt;
  }
  out.job_id = std::string(parts[0]);
  out.replica_name = std::string(parts[2]);
  return out;
}

}  // namespace trainctl
