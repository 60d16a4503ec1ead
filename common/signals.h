// Signal names, one spelling for every program: what the scheduler writes in a failure's reason
// ("was killed by SIGKILL"), what the CLI shows, and what a job spec may name
// (scheduling.transientSignals).
//
// Names come from the C library (sigabbrev_np), so numbers follow the architecture. Pure
// functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace trainctl {

// "SIGSEGV", "SEGV", "segv" or "11" -> 11; nullopt for a name the C library does not know or a
// number outside 1..NSIG-1.
std::optional<int> ParseSignal(absl::string_view text);

// Whether `signal` has a name (SignalName starts with "SIG").
bool SignalHasName(int signal);

// "SIGSEGV" for 11; "signal 42" for a number without a name (the real-time signals, out of range).
std::string SignalName(int signal);

}  // namespace trainctl
