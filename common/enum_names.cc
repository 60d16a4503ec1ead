#include "common/enum_names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"

namespace trainctl {
namespace {

// "JobState" -> "JOB_STATE_".
std::string ValuePrefix(const std::string& type_name) {
  std::string prefix;
  for (size_t i = 0; i < type_name.size(); ++i) {
    const char c = type_name[i];
    if (i > 0 && absl::ascii_isupper(c)) prefix += '_';
    prefix += absl::ascii_toupper(c);
  }
  return prefix + "_";
}

}  // namespace

std::string EnumShortName(const google::protobuf::EnumDescriptor& type, int value) {
  const google::protobuf::EnumValueDescriptor* v = type.FindValueByNumber(value);
  if (v == nullptr) return absl::StrCat(value);
  return std::string(absl::StripPrefix(v->name(), ValuePrefix(type.name())));
}

}  // namespace trainctl
