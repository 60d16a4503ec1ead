// Host:port addresses as trainctl's flags take them ("127.0.0.1:7070", "[::1]:7070",
// "sched.example:7070", "0.0.0.0:7070"), and whether one stays on this machine: the rule that
// decides whether plaintext gRPC is allowed without --insecure-allow-plaintext.
//
// Thread-safe: the functions keep no state.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace trainctl {

// The host part of "HOST:PORT" or "[HOST]:PORT", without brackets; the whole text when it has
// no port.
std::string HostOf(absl::string_view address);

// True when the host part is a loopback address (127.0.0.0/8, ::1) or "localhost". Unspecified
// addresses (0.0.0.0, ::), other names and other addresses are not.
bool IsLoopbackAddress(absl::string_view address);

}  // namespace trainctl
