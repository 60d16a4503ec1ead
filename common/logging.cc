#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/log_sinks.h"

namespace trainctl {

absl::Status CheckLogLevel(const std::string& level) {
  if (spdlog::level::from_str(level) == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log-level must be one of trace, debug, info, warn, error, critical, off; got \"", level,
        "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckLogFormat(const std::string& format) {
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format must be text or json; got \"", format, "\""));
  }
  return absl::OkStatus();
}

absl::Status SetupLogging(const std::string& name, const std::string& level,
                          const std::string& format) {
  if (absl::Status s = CheckLogLevel(level); !s.ok()) return s;
  spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  if (absl::Status s = CheckLogFormat(format); !s.ok()) return s;
  spdlog::sink_ptr sink;
  if (StderrIsJournal()) {
    sink = std::make_shared<JournalLogSink>(&SendToJournal);
  } else if (format == "json") {
    sink = std::make_shared<JsonLogSink>([](absl::string_view line) {
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
    });
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %l %n: %v", spdlog::pattern_time_type::utc));
  }
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::register_logger(logger);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace trainctl
