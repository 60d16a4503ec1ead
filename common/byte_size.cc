#include "common/byte_size.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trainctl {

std::string FormatDecimalBytes(int64_t bytes) {
  if (bytes < 1000) return absl::StrCat(bytes, " B");
  static constexpr const char* kUnits[] = {"kB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes) / 1000.0;
  size_t unit = 0;
  // 999.95 would print as "1000.0": the next unit up says it better.
  while (value >= 999.95 && unit + 1 < std::size(kUnits)) {
    value /= 1000.0;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace trainctl
