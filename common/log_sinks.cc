// JSON and journal log sinks (common/log_sinks.h).
#include "common/log_sinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <time.h>

#include <chrono>
#include <cinttypes>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/utf8.h"

namespace trainctl {
namespace {

// `text` as a JSON string, quotes included; bytes that are not UTF-8 become U+FFFD.
void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  const std::string valid = SanitizeUtf8(text);
  for (char c : valid) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// "2026-11-21T03:44:36.123Z".
std::string FormatLogTime(spdlog::log_clock::time_point time) {
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm utc;
  gmtime_r(&seconds, &utc);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                         utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                         static_cast<int>(ms % 1000));
}

// The syslog priority of a level.
int Priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return LOG_DEBUG;
    case spdlog::level::info:
      return LOG_INFO;
    case spdlog::level::warn:
      return LOG_WARNING;
    case spdlog::level::err:
      return LOG_ERR;
    default:
      return LOG_CRIT;
  }
}

absl::string_view Payload(const spdlog::details::log_msg& msg) {
  return absl::string_view(msg.payload.data(), msg.payload.size());
}

// The JSON keys and journal fields of the LogFields, in order.
struct FieldName {
  const char* json;
  const char* journal;
  std::string LogFields::*value;
};
constexpr FieldName kFieldNames[] = {{"job_id", "JOB_ID", &LogFields::job_id},
                                     {"node", "NODE", &LogFields::node},
                                     {"replica", "REPLICA", &LogFields::replica}};

}  // namespace

std::string FormatJsonLogLine(const spdlog::details::log_msg& msg, const LogFields& fields) {
  std::string line = absl::StrCat("{\"time\":\"", FormatLogTime(msg.time), "\",\"level\":");
  const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
  AppendJsonString(absl::string_view(level.data(), level.size()), &line);
  line += ",\"logger\":";
  AppendJsonString(absl::string_view(msg.logger_name.data(), msg.logger_name.size()), &line);
  line += ",\"msg\":";
  AppendJsonString(Payload(msg), &line);
  for (const FieldName& name : kFieldNames) {
    const std::string& value = fields.*name.value;
    if (value.empty()) continue;
    absl::StrAppend(&line, ",\"", name.json, "\":");
    AppendJsonString(value, &line);
  }
  line += "}\n";
  return line;
}

std::vector<std::string> JournalFields(const spdlog::details::log_msg& msg,
                                       const LogFields& fields) {
  std::vector<std::string> out = {
      absl::StrCat("MESSAGE=", Payload(msg)), absl::StrCat("PRIORITY=", Priority(msg.level)),
      absl::StrCat("SYSLOG_IDENTIFIER=",
                   absl::string_view(msg.logger_name.data(), msg.logger_name.size()))};
  for (const FieldName& name : kFieldNames) {
    const std::string& value = fields.*name.value;
    if (!value.empty()) out.push_back(absl::StrCat(name.journal, "=", value));
  }
  return out;
}

bool IsJournalStream(const char* journal_stream, dev_t dev, ino_t ino) {
  if (journal_stream == nullptr) return false;
  uintmax_t want_dev = 0;
  uintmax_t want_ino = 0;
  char rest = '\0';
  if (sscanf(journal_stream, "%" SCNuMAX ":%" SCNuMAX "%c", &want_dev, &want_ino, &rest) != 2) {
    return false;
  }
  return want_dev == static_cast<uintmax_t>(dev) && want_ino == static_cast<uintmax_t>(ino);
}

bool StderrIsJournal() {
  struct stat st;
  const char* stream = getenv("JOURNAL_STREAM");
  return stream != nullptr && fstat(2, &st) == 0 && IsJournalStream(stream, st.st_dev, st.st_ino);
}

void JsonLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  write_(FormatJsonLogLine(msg, CurrentLogFields()));
}

void JournalLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  send_(JournalFields(msg, CurrentLogFields()));
}

void SendToJournal(const std::vector<std::string>& fields) {
  std::vector<struct iovec> iov(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    iov[i].iov_base = const_cast<char*>(fields[i].data());
    iov[i].iov_len = fields[i].size();
  }
  if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) < 0 && !fields.empty()) {
    const std::string line = absl::StrCat(fields[0].substr(sizeof("MESSAGE=") - 1), "\n");
    fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace trainctl
