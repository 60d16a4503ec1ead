#include "cli/states.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/enum_names.h"

namespace trainctl::cli {
namespace {

constexpr absl::string_view kJobPrefix = "JOB_STATE_";

}  // namespace

std::string JobStateName(v1::JobState state) { return EnumShortName(state); }

std::string ReplicaStateName(v1::ReplicaState state) { return EnumShortName(state); }

std::string NodeStateName(v1::NodeState state) {
  if (state == v1::NODE_STATE_UNSPECIFIED) return "-";
  return EnumShortName(state);
}

std::string NodeHealthName(v1::NodeHealth health) {
  if (health == v1::NODE_HEALTH_UNSPECIFIED) return "-";
  return EnumShortName(health);
}

absl::StatusOr<v1::JobState> ParseJobState(absl::string_view text) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(upper, kJobPrefix)) upper = absl::StrCat(kJobPrefix, upper);
  v1::JobState state;
  if (v1::JobState_Parse(upper, &state) && state != v1::JOB_STATE_UNSPECIFIED) return state;
  std::vector<std::string> valid;
  for (int i = v1::JobState_MIN; i <= v1::JobState_MAX; ++i) {
    if (v1::JobState_IsValid(i) && i != v1::JOB_STATE_UNSPECIFIED) {
      valid.push_back(absl::AsciiStrToLower(JobStateName(static_cast<v1::JobState>(i))));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown job state \"", text, "\"; valid states: ", absl::StrJoin(valid, ", ")));
}

absl::StatusOr<std::vector<v1::JobState>> ParseJobStates(const std::vector<std::string>& values) {
  std::vector<v1::JobState> states;
  for (const std::string& value : values) {
    for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      absl::StatusOr<v1::JobState> state = ParseJobState(part);
      if (!state.ok()) return state.status();
      if (std::find(states.begin(), states.end(), *state) == states.end()) {
        states.push_back(*state);
      }
    }
  }
  return states;
}

}  // namespace trainctl::cli
