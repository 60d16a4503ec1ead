// Job arrays' indices and element ids (array_ids.h).
#include "common/array_ids.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl {
namespace {

absl::Status BadPart(absl::string_view part, absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("array indices: '", part, "' in '", text, "' ", why));
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> ParseArrayIndices(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "array indices are required: ranges \"0-99\", steps \"0-99:2\" or lists \"1,5,9\"");
  }
  std::vector<int32_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    absl::string_view range = part;
    int32_t step = 1;
    if (const size_t colon = part.find(':'); colon != absl::string_view::npos) {
      range = part.substr(0, colon);
      if (!absl::SimpleAtoi(part.substr(colon + 1), &step) || step < 1) {
        return BadPart(part, text, "has a step that is not a whole number of at least 1");
      }
    }
    int32_t lo = 0;
    int32_t hi = 0;
    bool ok = false;
    if (const size_t dash = range.find('-'); dash == absl::string_view::npos) {
      ok = absl::SimpleAtoi(range, &lo);
      hi = lo;
      if (ok && step != 1) return BadPart(part, text, "has a step but no range (a-b:step)");
    } else {
      ok = absl::SimpleAtoi(range.substr(0, dash), &lo) &&
           absl::SimpleAtoi(range.substr(dash + 1), &hi);
    }
    if (!ok || lo < 0 || hi < lo) {
      return BadPart(part, text, "is not an index, a range a-b with a <= b, or a-b:step");
    }
    if (hi > kMaxArrayIndex) {
      return BadPart(part, text, absl::StrCat("goes past the largest index, ", kMaxArrayIndex));
    }
    for (int64_t i = lo; i <= hi; i += step) {
      out.push_back(static_cast<int32_t>(i));
      if (out.size() > static_cast<size_t>(kMaxArrayElements)) {
        return absl::InvalidArgumentError(absl::StrCat("array indices: '", text, "' has more than ",
                                                       kMaxArrayElements, " elements"));
      }
    }
  }
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] == out[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("array indices: '", text, "' names index ", out[i], " twice"));
    }
  }
  return out;
}

std::optional<ElementId> ParseElementId(absl::string_view id) {
  const size_t dash = id.rfind('-');
  if (dash == absl::string_view::npos || dash == 0 || dash + 1 == id.size()) return std::nullopt;
  const absl::string_view digits = id.substr(dash + 1);
  if (digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  ElementId out;
  out.array = std::string(id.substr(0, dash));
  if (!absl::SimpleAtoi(digits, &out.index)) return std::nullopt;
  return out;
}

std::string ElementIdOf(absl::string_view array, int32_t index) {
  return absl::StrCat(array, "-", index);
}

absl::StatusOr<std::optional<ElementRange>> ParseElementRange(absl::string_view id) {
  const size_t open = id.find("-[");
  if (open == absl::string_view::npos || open == 0 || !absl::EndsWith(id, "]")) {
    return std::optional<ElementRange>();
  }
  ElementRange out;
  out.array = std::string(id.substr(0, open));
  absl::StatusOr<std::vector<int32_t>> indices =
      ParseArrayIndices(id.substr(open + 2, id.size() - open - 3));
  if (!indices.ok()) return indices.status();
  out.indices = *std::move(indices);
  return std::optional<ElementRange>(std::move(out));
}

absl::StatusOr<ArrayShorthand> ParseArrayShorthand(absl::string_view text) {
  ArrayShorthand out;
  absl::string_view list = text;
  if (const size_t percent = text.find('%'); percent != absl::string_view::npos) {
    list = text.substr(0, percent);
    if (!absl::SimpleAtoi(text.substr(percent + 1), &out.parallelism) || out.parallelism < 1 ||
        out.parallelism > kMaxArrayElements) {
      return absl::InvalidArgumentError(absl::StrCat("--array: the parallelism after '%' in '",
                                                     text, "' must be 1..", kMaxArrayElements));
    }
  }
  absl::StatusOr<std::vector<int32_t>> indices = ParseArrayIndices(list);
  if (!indices.ok())
    return absl::InvalidArgumentError(absl::StrCat("--array: ", indices.status().message()));
  out.indices = std::string(absl::StripAsciiWhitespace(list));
  return out;
}

}  // namespace trainctl
