// Process-wide spdlog set-up for trainctld and trainctl-agent.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace trainctl {

// OK for a level SetupLogging takes; else INVALID_ARGUMENT "--log-level must be one of ...".
absl::Status CheckLogLevel(const std::string& level);

// OK for "text" and "json"; else INVALID_ARGUMENT "--log-format must be text or json ...".
absl::Status CheckLogFormat(const std::string& format);

// Sets the default logger `name` at `level` ("trace".."critical", "off"). Where stderr is the
// systemd journal ($JOURNAL_STREAM), lines go to the journal with the job, node and replica they
// are about (common/log_sinks.h) whatever the format; elsewhere to stderr, as `format` says:
// "text" ("<time> <level> <name>: message") or "json" (one object per line). INVALID_ARGUMENT
// naming --log-level or --log-format for an unknown value.
absl::Status SetupLogging(const std::string& name, const std::string& level,
                          const std::string& format = "text");

}  // namespace trainctl
