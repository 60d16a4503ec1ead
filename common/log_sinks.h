// The log formats of trainctld and trainctl-agent beyond plain text (common/logging.h): JSON lines
// (--log-format json) and the systemd journal, which gets the job, node and replica a line is
// about (common/log_context.h) as fields of its own.
//
// JSON: one object per line, keys in this order, the last three only when known:
//   {"time":"2026-11-21T03:44:36.123Z","level":"info","logger":"trainctld","msg":"...",
//    "job_id":"j-abc","node":"gpu-1","replica":"worker-0"}
// Journal: MESSAGE, PRIORITY (syslog levels: debug 7 .. critical 2), SYSLOG_IDENTIFIER (the
// logger's name) and JOB_ID, NODE, REPLICA when known, sent with sd_journal_sendv().
//
// Thread-safe: the sinks lock around each line (spdlog's base_sink).
#pragma once

#include <sys/types.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/log_context.h"
#include "spdlog/details/log_msg.h"
#include "spdlog/sinks/base_sink.h"

namespace trainctl {

// The JSON line (with its '\n') for `msg` about `fields`.
std::string FormatJsonLogLine(const spdlog::details::log_msg& msg, const LogFields& fields);

// The journal fields ("KEY=value") for `msg` about `fields`.
std::vector<std::string> JournalFields(const spdlog::details::log_msg& msg,
                                       const LogFields& fields);

// Whether stderr is connected to the journal: $JOURNAL_STREAM ("<dev>:<inode>", set by systemd
// for a service whose stderr goes to the journal) names the file stderr is. `journal_stream` is
// the variable's value (null: unset), `dev` and `ino` those of fd 2.
bool IsJournalStream(const char* journal_stream, dev_t dev, ino_t ino);
// The same for this process.
bool StderrIsJournal();

// Writes each line as JSON through `write` (stderr in the daemons; a string in tests).
class JsonLogSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit JsonLogSink(std::function<void(absl::string_view line)> write)
      : write_(std::move(write)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  std::function<void(absl::string_view)> write_;
};

// Sends each line to the journal through `send` (SendToJournal in the daemons; a capture in
// tests).
class JournalLogSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  using Send = std::function<void(const std::vector<std::string>& fields)>;
  explicit JournalLogSink(Send send) : send_(std::move(send)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  Send send_;
};

// sd_journal_sendv() of the fields; a line the journal refuses is written to stderr instead.
void SendToJournal(const std::vector<std::string>& fields);

}  // namespace trainctl
