// UTF-8 text: making bytes of unknown origin (a replica's output, an error message) fit a proto3
// string field or a JSON string.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace trainctl {

// Length of the valid UTF-8 sequence at the start of `s` (not empty), or 0 when it is not valid.
size_t Utf8SequenceLength(absl::string_view s);

// Replaces every byte sequence that is not valid UTF-8 with U+FFFD.
std::string SanitizeUtf8(absl::string_view text);

}  // namespace trainctl
