// Per-thread log fields (common/log_context.h).
#include "common/log_context.h"

#include <optional>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/run_id.h"

namespace trainctl {
namespace {

thread_local LogFields tls_log_fields;

absl::Mutex process_node_mu(absl::kConstInit);
std::string* process_node ABSL_GUARDED_BY(process_node_mu) = nullptr;

}  // namespace

LogFields CurrentLogFields() {
  LogFields fields = tls_log_fields;
  if (fields.node.empty()) {
    absl::MutexLock lock(&process_node_mu);
    if (process_node != nullptr) fields.node = *process_node;
  }
  return fields;
}

void SetProcessLogNode(absl::string_view node) {
  absl::MutexLock lock(&process_node_mu);
  if (process_node == nullptr) process_node = new std::string;  // never freed: loggers outlive main
  process_node->assign(node.data(), node.size());
}

LogScope::LogScope(absl::string_view job_id, absl::string_view node, absl::string_view replica)
    : saved_(tls_log_fields) {
  if (!job_id.empty()) tls_log_fields.job_id.assign(job_id.data(), job_id.size());
  if (!node.empty()) tls_log_fields.node.assign(node.data(), node.size());
  if (!replica.empty()) tls_log_fields.replica.assign(replica.data(), replica.size());
}

LogScope LogScope::ForRun(absl::string_view run_id, absl::string_view node) {
  std::optional<RunIdParts> parts = SplitRunId(run_id);
  if (!parts) return LogScope("", node);
  return LogScope(parts->job_id, node, parts->replica_name);
}

LogScope::~LogScope() { tls_log_fields = std::move(saved_); }

}  // namespace trainctl
