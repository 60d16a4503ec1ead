#include "common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace trainctl {

absl::Status CheckLogLevel(const std::string& level) {
  if (spdlog::level::from_str(level) == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log-level must be one of trace, debug, info, warn, error, critical, off; got \"", level,
        "\""));
  }
  return absl::OkStatus();
}

absl::Status SetupLogging(const std::string& name, const std::string& level) {
  if (absl::Status s = CheckLogLevel(level); !s.ok()) return s;
  spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  auto logger = spdlog::stderr_logger_mt(name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %n: %v", spdlog::pattern_time_type::utc);
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace trainctl
