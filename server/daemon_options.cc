#include "server/daemon_options.h"

#include <filesystem>

#include "model/model_proto.h"

namespace trainctl::server {

DaemonOptions DaemonOptionsFromFlags(const DaemonFlags& flags) {
  DaemonOptions options;
  sched::CoreOptions& core = options.core;
  core.checkpoint_root = std::filesystem::absolute(flags.checkpoint_root).string();
  core.checkpoint_allowed_roots = flags.checkpoint_allowed_roots;
  core.replica_uid_range = flags.replica_uid_range;
  core.heartbeat_interval = absl::Milliseconds(flags.heartbeat_ms);
  core.default_quota = sched::QuotaFromProto(flags.default_quota);
  core.nodes.lost_timeout = absl::Milliseconds(flags.node_lost_timeout_ms);
  core.nodes.flap_threshold = flags.flap_threshold;
  core.nodes.flap_window = absl::Milliseconds(flags.flap_window_ms);
  core.settle_window = absl::Milliseconds(flags.settle_window_ms);
  core.skew_tolerance = absl::Milliseconds(flags.skew_tolerance_ms);
  core.fair_share.enabled = flags.fair_share;
  core.fair_share.half_life = absl::Milliseconds(flags.fair_share_half_life_ms);
  core.fair_share.gpu_weight = flags.fair_share_gpu_weight;
  core.fair_share.cpu_weight = flags.fair_share_cpu_weight;
  core.fair_share.memory_weight = flags.fair_share_memory_weight;
  if (flags.reservation_after_ms >= 0) {
    core.reservation_after = absl::Milliseconds(flags.reservation_after_ms);
  } else {
    core.reservation_after.reset();
  }
  core.nodes.ports = flags.port_range;
  core.stragglers.ratio = flags.straggler_ratio;
  core.stragglers.window = absl::Milliseconds(flags.straggler_window_ms);
  core.fabric_check_timeout = absl::Milliseconds(flags.gang_check_timeout_ms);
  options.job_retention_ms = flags.job_retention_ms;
  options.usage_retention_ms = flags.usage_retention_ms;
  options.finished_job_cache_ms = flags.finished_job_cache_ms;
  options.finished_job_cache_jobs = flags.finished_job_cache_jobs;
  // A log chunk's reply leaves room for its other fields.
  options.api = {flags.max_request_bytes - (64 << 10), flags.max_watches_per_peer};
  return options;
}

}  // namespace trainctl::server
