// What a log line is about: the job, node and replica fields that the JSON log format and the
// journal (common/log_sinks.h) attach to each line.
//
// A call site names them for the lines its thread logs while a LogScope lives:
//
//   {
//     LogScope scope(job_id, node, replica);   // "" leaves a field as the outer scope has it
//     spdlog::info("job {}: RUNNING", job_id);  // carries JOB_ID, NODE and REPLICA
//   }
//   LogScope scope = LogScope::ForRun(run_id);  // the job and replica of a run id
//
// Scopes nest; the innermost non-empty value of each field wins. A process whose every line is
// about one node (trainctl-agent) sets it once with SetProcessLogNode(). The text format shows
// none of them: its messages name what they are about already.
//
// Thread-safe: scopes are per thread; the process node is set under a lock.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace trainctl {

struct LogFields {
  std::string job_id;
  std::string node;
  std::string replica;
};

// The fields of the calling thread's innermost scopes, with the process node where no scope names
// a node.
LogFields CurrentLogFields();

// The node every line of this process is about, unless a scope names another.
void SetProcessLogNode(absl::string_view node);

class LogScope {
 public:
  explicit LogScope(absl::string_view job_id, absl::string_view node = "",
                    absl::string_view replica = "");
  // The job and replica of `run_id` ("<job id>/<attempt>/<replica>/<restart>"); a text that is
  // no run id names no job and no replica.
  static LogScope ForRun(absl::string_view run_id, absl::string_view node = "");
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  LogFields saved_;
};

}  // namespace trainctl
