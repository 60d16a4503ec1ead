#include "common/index_list.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace trainctl {
namespace {

constexpr int32_t kMaxIndex = 1 << 20;

void SortUnique(std::vector<int32_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

std::string FormatIndexList(std::vector<int32_t> indices) {
  SortUnique(&indices);
  std::vector<std::string> parts;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(indices[i]) : absl::StrCat(indices[i], "-", indices[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<std::vector<int32_t>> ParseIndexList(absl::string_view text) {
  std::vector<int32_t> out;
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    int32_t lo = 0;
    int32_t hi = 0;
    bool ok = false;
    if (const size_t dash = part.find('-'); dash == absl::string_view::npos) {
      ok = absl::SimpleAtoi(part, &lo);
      hi = lo;
    } else {
      ok = absl::SimpleAtoi(part.substr(0, dash), &lo) &&
           absl::SimpleAtoi(part.substr(dash + 1), &hi);
    }
    if (!ok || lo < 0 || hi < lo || hi > kMaxIndex) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", part, "' in '", text, "' is not an index or a range a-b with a <= b"));
    }
    for (int32_t i = lo; i <= hi; ++i) out.push_back(i);
  }
  SortUnique(&out);
  return out;
}

}  // namespace trainctl
