#include "cli/queue_flags.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// The longest scheduling.queueTimeout a spec may have: 366 days.
constexpr int64_t kMaxQueueTimeoutMs = int64_t{366} * 86400 * 1000;

}  // namespace

absl::StatusOr<v1::Dependency> ParseDependency(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  const size_t colon = text.find(':');
  const std::string word =
      absl::AsciiStrToLower(colon == absl::string_view::npos ? text : text.substr(0, colon));
  v1::Dependency d;
  if (word == "afterok") {
    d.set_condition(v1::DEPENDENCY_CONDITION_SUCCEEDED);
  } else if (word == "afternotok") {
    d.set_condition(v1::DEPENDENCY_CONDITION_FAILED);
  } else if (word == "afterany") {
    d.set_condition(v1::DEPENDENCY_CONDITION_ENDED);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--depends-on takes CONDITION:JOB, CONDITION one of afterok (the job "
                     "SUCCEEDED), afternotok (it FAILED) or afterany (it ended), got \"",
                     text, "\""));
  }
  const absl::string_view id = colon == absl::string_view::npos
                                   ? absl::string_view()
                                   : absl::StripAsciiWhitespace(text.substr(colon + 1));
  if (id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--depends-on ", text, ": name the job after the colon, e.g. ", word, ":j-1"));
  }
  d.set_job(std::string(id));
  return d;
}

absl::Status AddDependsOn(const std::vector<std::string>& values, v1::JobSpec* spec) {
  for (const std::string& value : values) {
    for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      TC_ASSIGN_OR_RETURN(v1::Dependency d, ParseDependency(item));
      *spec->add_depends_on() = std::move(d);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::DependencyPolicy> ParseDependencyPolicy(absl::string_view text) {
  std::string word = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  for (char& c : word) {
    if (c == '_') c = '-';
  }
  if (word == "fail") return v1::DEPENDENCY_POLICY_FAIL;
  if (word == "keep-waiting") return v1::DEPENDENCY_POLICY_KEEP_WAITING;
  return BadFlagValue("--dependency-policy",
                      "fail (the job fails when a dependency can no longer be met) or "
                      "keep-waiting (it stays queued for someone to cancel)",
                      text);
}

absl::StatusOr<v1::UpdateJobRequest> BuildUpdateRequest(const UpdateFlags& flags) {
  v1::UpdateJobRequest request;
  request.set_id(flags.id);
  if (!flags.priority.empty()) {
    TC_ASSIGN_OR_RETURN(const int priority,
                        ParseWholeNumberFlag<int>("--priority", flags.priority, -1000, 1000));
    request.set_priority(priority);
  }
  if (!flags.queue_timeout.empty()) {
    TC_ASSIGN_OR_RETURN(
        const int64_t ms,
        ParseDurationFlag("--queue-timeout", flags.queue_timeout, 1000, kMaxQueueTimeoutMs,
                          "a duration between 1s and 366d, e.g. 30m or 12h"));
    *request.mutable_queue_timeout() = MsToDuration(ms);
  }
  for (const std::string& label : flags.labels) {
    const size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0) {
      return BadFlagValue("--label", "KEY=VALUE (e.g. team=vision)", label);
    }
    (*request.mutable_labels())[label.substr(0, eq)] = label.substr(eq + 1);
  }
  for (const std::string& key : flags.remove_labels) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return BadFlagValue("--remove-label", "a label's KEY alone (e.g. team)", key);
    }
    request.add_remove_labels(key);
  }
  if (!request.has_priority() && !request.has_queue_timeout() && request.labels().empty() &&
      request.remove_labels().empty()) {
    return absl::InvalidArgumentError(
        "update needs at least one change: --priority N, --queue-timeout D, --label KEY=VALUE "
        "or --remove-label KEY");
  }
  return request;
}

}  // namespace trainctl::cli
