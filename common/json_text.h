// Text as a JSON string, for the few places that write JSON by hand (a replica's cluster spec,
// the preemption notice file) rather than through Protobuf's JSON mapping.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace trainctl {

// `text` as a JSON string literal, quotes included: '"' and '\' escaped, newline and tab as \n
// and \t, other control characters as \u00XX, everything else as it is. REQUIRES: `text` is
// valid UTF-8 (SanitizeUtf8, utf8.h, makes it so).
std::string JsonQuoted(absl::string_view text);

}  // namespace trainctl
