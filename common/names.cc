#include "common/names.h"

namespace trainctl {

bool IsDnsLabel(absl::string_view name, size_t max_len) {
  if (name.empty() || name.size() > max_len) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-';
}

}  // namespace trainctl
