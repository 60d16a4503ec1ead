// trainctld's SIGHUP: re-reads the --config file (under the same command-line flags, which still
// win) and applies what can change while it runs: log-level at once, and the default-quota-*
// limits through the reconcile loop (a DefaultQuotaChanged event, and a scheduling pass, so a
// raised default admits waiting jobs). Every other change is logged as needing a restart, and
// the running value stays. A file that no longer parses changes nothing; the error is logged.
//
// Thread-safe: Reload() from the signal thread, options() from the loop's.
#pragma once

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/config_file.h"
#include "server/daemon_flags.h"
#include "server/daemon_options.h"
#include "server/reconcile_loop.h"

namespace trainctl::server {

class DaemonReloader {
 public:
  // `args`: the command line after the program name, as parsed into `flags`. `loop` (not owned)
  // must outlive the reloader.
  DaemonReloader(std::vector<std::string> args, DaemonFlags flags, ReconcileLoop* loop);

  // Re-reads and applies; returns what changed (logged either way). Without --config, nothing.
  std::vector<ConfigChange> Reload() ABSL_LOCKS_EXCLUDED(mu_);

  // The options in effect (DaemonOptionsFromFlags of the running flags): what a core rebuilt
  // from the database must use.
  DaemonOptions options() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::vector<std::string> args_;
  ReconcileLoop* const loop_;
  mutable absl::Mutex mu_;
  DaemonFlags running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
