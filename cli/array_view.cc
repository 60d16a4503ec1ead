// How the CLI shows job arrays and their elements (array_view.h).
#include "cli/array_view.h"

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/array_ids.h"

namespace trainctl::cli {
namespace {

// ", at most 3 at once" for a parallelism; "" without one.
std::string AtOnceText(int32_t parallelism) {
  return parallelism > 0 ? absl::StrCat(", at most ", parallelism, " at once") : "";
}

std::string ElementsText(int32_t count) {
  return absl::StrCat(count, count == 1 ? " element" : " elements");
}

}  // namespace

bool IsArray(const v1::Job& job) {
  return job.has_array() || (job.spec().has_array() && !job.has_element());
}

std::string ArrayCountsText(const v1::ArrayStatus& status) {
  std::vector<std::string> parts;
  if (status.waiting() > 0) {
    std::string waiting = absl::StrCat(status.waiting(), " waiting");
    if (status.held() > 0) absl::StrAppend(&waiting, " (", status.held(), " held)");
    parts.push_back(std::move(waiting));
  }
  const std::pair<int32_t, const char*> counts[] = {
      {status.queued(), "queued"},       {status.pending(), "pending"},
      {status.running(), "running"},     {status.cancelling(), "cancelling"},
      {status.succeeded(), "succeeded"}, {status.failed(), "failed"},
      {status.cancelled(), "cancelled"},
  };
  for (const auto& [count, word] : counts) {
    if (count > 0) parts.push_back(absl::StrCat(count, " ", word));
  }
  return absl::StrJoin(parts, ", ");
}

int32_t ArrayElementCount(const v1::Job& job) {
  if (job.array().count() > 0) return job.array().count();
  absl::StatusOr<std::vector<int32_t>> indices = ParseArrayIndices(job.spec().array().indices());
  return indices.ok() ? static_cast<int32_t>(indices->size()) : 0;
}

std::string ArrayText(const v1::Job& job) {
  if (!IsArray(job)) return "";
  const v1::ArraySpec& spec = job.spec().array();
  std::string text = ElementsText(ArrayElementCount(job));
  if (!spec.indices().empty() || spec.parallelism() > 0) {
    std::string detail = spec.indices().empty() ? "" : absl::StrCat("indices ", spec.indices());
    if (spec.parallelism() > 0) {
      absl::StrAppend(&detail, detail.empty() ? "" : ", ", "at most ", spec.parallelism(),
                      " at once");
    }
    absl::StrAppend(&text, " (", detail, ")");
  }
  const std::string counts = ArrayCountsText(job.array());
  if (!counts.empty()) absl::StrAppend(&text, ": ", counts);
  return text;
}

std::string ArrayElementsHint(const v1::Job& job) {
  if (!IsArray(job)) return "";
  return absl::StrCat("`trainctl list --array ", job.id(), "` lists its elements");
}

std::string ElementText(const v1::Job& job) {
  if (!job.has_element()) return "";
  const v1::ArrayElement& e = job.element();
  std::string text = absl::StrCat(e.index(), " of array ", e.array());
  if (e.count() > 0) absl::StrAppend(&text, " (", ElementsText(e.count()), ")");
  return text;
}

std::string ArraySubmittedLine(const v1::Job& job) {
  if (!IsArray(job)) return "";
  return absl::StrCat("submitted job array ", job.id(), " (", ElementsText(ArrayElementCount(job)),
                      AtOnceText(job.spec().array().parallelism()), ")");
}

}  // namespace trainctl::cli
