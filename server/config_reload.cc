#include "server/config_reload.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/match.h"

namespace trainctl::server {

DaemonReloader::DaemonReloader(std::vector<std::string> args, DaemonFlags flags,
                               ReconcileLoop* loop)
    : args_(std::move(args)), loop_(loop), running_(std::move(flags)) {}

std::vector<ConfigChange> DaemonReloader::Reload() {
  absl::MutexLock lock(&mu_);
  if (running_.config_path.empty()) {
    spdlog::info("SIGHUP: trainctld runs without --config: there is no file to re-read");
    return {};
  }
  absl::StatusOr<DaemonFlags> now = ParseDaemonFlags(args_);
  if (!now.ok()) {
    spdlog::error("SIGHUP: {}; the running configuration stays as it was",
                  std::string(now.status().message()));
    return {};
  }
  std::vector<ConfigChange> changes =
      DiffConfig(DaemonConfigEntries(running_), DaemonConfigEntries(*now), DaemonKeyReloads);
  bool quota_changed = false;
  for (const ConfigChange& c : changes) {
    if (c.key == "log-level") {
      running_.log_level = now->log_level;
      spdlog::set_level(spdlog::level::from_str(now->log_level));
    } else if (absl::StartsWith(c.key, "default-quota-")) {
      quota_changed = true;
    }
  }
  if (quota_changed) {
    running_.default_quota = now->default_quota;
    loop_->Post([quota = DaemonOptionsFromFlags(running_).core.default_quota](Turn& t) {
      t.core.SetDefaultQuota(quota, t.now, t.fx);
    });
  }
  LogConfigChanges("trainctld", running_.config_path, changes);
  return changes;
}

DaemonOptions DaemonReloader::options() const {
  absl::MutexLock lock(&mu_);
  return DaemonOptionsFromFlags(running_);
}

}  // namespace trainctl::server
