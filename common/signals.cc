#include "common/signals.h"

#include <csignal>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace trainctl {

std::optional<int> ParseSignal(absl::string_view text) {
  int n = 0;
  if (absl::SimpleAtoi(text, &n)) {
    if (n >= 1 && n < NSIG) return n;
    return std::nullopt;
  }
  const std::string name = absl::AsciiStrToUpper(text);
  const absl::string_view bare = absl::StripPrefix(name, "SIG");
  for (int s = 1; s < NSIG; ++s) {
    const char* abbrev = sigabbrev_np(s);
    if (abbrev != nullptr && bare == abbrev) return s;
  }
  return std::nullopt;
}

bool SignalHasName(int signal) { return sigabbrev_np(signal) != nullptr; }

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return absl::StrCat("signal ", signal);
  return absl::StrCat("SIG", abbrev);
}

}  // namespace trainctl
