// Reading the PEM files that TLS flags name (--tls-cert, --tls-key, --tls-ca, --ca, ...).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace trainctl {

// The whole of the PEM file at `path`, named by `flag` (e.g. "--tls-cert"). INVALID_ARGUMENT
// naming the flag and the path when it cannot be read or holds no PEM block. Thread-safe.
absl::StatusOr<std::string> ReadPemFile(const std::string& flag, const std::string& path);

}  // namespace trainctl
