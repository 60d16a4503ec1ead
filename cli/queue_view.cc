#include "cli/queue_view.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/states.h"
#include "common/time_util.h"

namespace trainctl::cli {

std::string HeldText(const v1::Job& job, int64_t now_ms) {
  if (!job.held()) return "";
  std::string text = job.held_by().empty() ? "" : absl::StrCat("by ", job.held_by());
  const int64_t since = TimestampToMs(job.hold_time());
  if (since > 0) {
    absl::StrAppend(&text, text.empty() ? "" : " ", "since ", FormatRfc3339(since), " (",
                    FormatAge(now_ms - since), " ago)");
  }
  if (!job.hold_reason().empty()) {
    absl::StrAppend(&text, text.empty() ? "" : ": ", job.hold_reason());
  }
  return text.empty() ? "yes" : text;
}

std::string DependencyConditionWord(v1::DependencyCondition condition) {
  switch (condition) {
    case v1::DEPENDENCY_CONDITION_FAILED:
      return "afternotok";
    case v1::DEPENDENCY_CONDITION_ENDED:
      return "afterany";
    default:
      return "afterok";
  }
}

std::string DependenciesText(const v1::Job& job) {
  std::vector<std::string> parts;
  if (job.dependencies().empty()) {
    for (const v1::Dependency& d : job.spec().depends_on()) {
      parts.push_back(
          absl::StrCat(DependencyConditionWord(d.condition()), " ", d.job(), ": waiting"));
    }
    return absl::StrJoin(parts, "; ");
  }
  for (const v1::DependencyStatus& d : job.dependencies()) {
    std::string text = absl::StrCat(DependencyConditionWord(d.condition()), " ", d.job(), ": ");
    if (d.ended() == v1::JOB_STATE_UNSPECIFIED) {
      absl::StrAppend(&text, "waiting");
    } else {
      absl::StrAppend(&text, "ended ", JobStateName(d.ended()));
    }
    if (d.met()) {
      absl::StrAppend(&text, ", met");
    } else if (d.unmet_forever()) {
      absl::StrAppend(&text, ", never met");
    }
    parts.push_back(std::move(text));
  }
  return absl::StrJoin(parts, "; ");
}

std::string HeldLine(const v1::Job& job) {
  return absl::StrCat("job ", job.id(), " held",
                      job.hold_reason().empty() ? "" : ": " + job.hold_reason());
}

std::string ReleasedLine(const v1::Job& job) {
  return absl::StrCat("job ", job.id(), " released: it may be admitted again");
}

std::string UpdatedLine(const v1::Job& job, const v1::UpdateJobRequest& request) {
  std::vector<std::string> changes;
  if (request.has_priority()) changes.push_back(absl::StrCat("priority ", request.priority()));
  if (request.has_queue_timeout()) {
    changes.push_back(
        absl::StrCat("queueTimeout ", FormatDurationExact(DurationToMs(request.queue_timeout()))));
  }
  if (!request.labels().empty()) {
    // Sorted: a proto map's order is not.
    std::map<std::string, std::string> sorted(request.labels().begin(), request.labels().end());
    std::vector<std::string> labels;
    for (const auto& [key, value] : sorted) labels.push_back(absl::StrCat(key, "=", value));
    changes.push_back(absl::StrCat("labels ", absl::StrJoin(labels, ",")));
  }
  if (!request.remove_labels().empty()) {
    changes.push_back(absl::StrCat("removed labels ", absl::StrJoin(request.remove_labels(), ",")));
  }
  return absl::StrCat("job ", job.id(), " updated: ", absl::StrJoin(changes, ", "));
}

std::string RequeuedLine(const v1::Job& job, const std::string& reason) {
  return absl::StrCat("job ", job.id(), " requeued", reason.empty() ? "" : ": " + reason,
                      "; its replicas checkpoint and stop, and it waits in the queue again");
}

}  // namespace trainctl::cli
