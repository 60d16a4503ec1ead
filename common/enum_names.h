// EnumShortName: a protobuf enum value's name without its type's prefix, the word trainctl shows
// everywhere a state or kind is printed: "RUNNING" for JOB_STATE_RUNNING, "DRAINING" for
// NODE_STATE_DRAINING, "admin" (lowered by the caller) for ROLE_ADMIN.
//
// The prefix is the enum type's name in upper snake case plus "_" (JobState -> "JOB_STATE_"),
// the rule every enum in proto/ follows. A value the enum does not define (a newer peer's) prints
// as its number, so output never loses it. One definition for the scheduler, trainctld's metrics,
// the CLI and the roles; their words differ only in what they make of UNSPECIFIED.
//
// Thread-safe.
#pragma once

#include <string>

#include "google/protobuf/generated_enum_reflection.h"

namespace trainctl {

// For any descriptor; `value` need not be defined by it.
std::string EnumShortName(const google::protobuf::EnumDescriptor& type, int value);

template <typename Enum>
std::string EnumShortName(Enum value) {
  return EnumShortName(*google::protobuf::GetEnumDescriptor<Enum>(), static_cast<int>(value));
}

}  // namespace trainctl
