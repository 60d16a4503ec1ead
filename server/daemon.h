// trainctld as an object: what main() runs, and what tests start and stop in process.
//
//   Daemon daemon(args, *flags, stop_signals);
//   absl::Status s = daemon.Init();      // everything that can fail
//   if (s.ok()) s = daemon.Start();      // announce: address files, systemd's READY
//   if (!s.ok()) { daemon.Shutdown(); return daemon.ReportFailure(s); }
//   ... daemon.Reload() at SIGHUP, daemon.CheckLease() often ...
//   daemon.Shutdown();
//
// Init, in order: the TLS credentials, the data dir (made private, locked, checked after an
// unclean stop), the store (waiting while PostgreSQL cannot be reached), with PostgreSQL the
// leader lease (serving as a standby until then), the state, the reconcile loop (started), the
// replica token key, the first admin token, and the listeners: gRPC (which binds and serves in one
// step) and the REST API. Every failure is an error naming what failed; what Init opened stays
// open until Shutdown, which closes it (a failed bind leaves no port, no loop and no lock behind).
// Start writes DATA_DIR/trainctld.http-addr and trainctld.addr, which tell clients and tests
// that trainctld serves, and notifies systemd.
//
// Shutdown ends the streams first (watches; agents' and log follows at the deadline), then the
// REST API, the gRPC server (200 ms for the calls in flight), the loop, the lease (released for a
// standby to take at once); the data dir's lock is released when the Daemon is destroyed, after
// the store is closed. Only after a successful Start is the stop
// clean: the lease is released and the running marker removed (server/data_dir.h); after a failed
// Init or Start the lease lapses and the next start checks the database. Safe to call at any
// point, and more than once; the destructor calls it.
//
// Thread-safety: Init, Start and Shutdown from one thread; Reload and CheckLease from that
// thread or another once Start has returned, never during Shutdown.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/config_file.h"
#include "common/watchdog.h"
#include "server/admin_service.h"
#include "server/agent_registry.h"
#include "server/agent_service.h"
#include "server/api.h"
#include "server/auth_service.h"
#include "server/authorizer.h"
#include "server/central_logs.h"
#include "server/cluster_service.h"
#include "server/config_reload.h"
#include "server/daemon_flags.h"
#include "server/daemon_options.h"
#include "server/daemon_setup.h"
#include "server/job_service.h"
#include "server/job_snapshots.h"
#include "server/leadership.h"
#include "server/metrics_daemon.h"
#include "server/project_data.h"
#include "server/quota_service.h"
#include "server/reconcile_loop.h"
#include "server/replica_tokens.h"
#include "server/rest/rest_server.h"
#include "server/secret_service.h"
#include "server/tokens.h"
#include "server/transport_security.h"
#include "server/usage_service.h"
#include "server/watch_hub.h"
#include "server/workdir_service.h"

namespace trainctl::server {

class Daemon {
 public:
  // `args`: the command line after the program name, as parsed into `flags` (SIGHUP parses it
  // again). `stop`: the signals that end Init's waits for the database and for leadership (a
  // SIGHUP among them is ignored there); the caller blocks them in every thread.
  Daemon(std::vector<std::string> args, DaemonFlags flags, const sigset_t& stop);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Opens and checks everything (see the file comment). CANCELLED when a stop signal came while
  // it waited (for the database, or as a standby for the lease). Call once.
  absl::Status Init();
  // REQUIRES: Init succeeded. Call once.
  absl::Status Start();
  // Stops what runs, in order (see the file comment).
  void Shutdown();

  // How main() reports an error of Init or Start: a bad flag or data dir as a usage error on
  // stderr (exit 2); a data dir another trainctld uses on stderr (1); a stop signal while
  // waiting as an info line (0); anything else logged as critical (1). Returns the exit status.
  int ReportFailure(const absl::Status& error) const;

  // SIGHUP: re-reads --config (server/config_reload.h). REQUIRES: Init succeeded.
  std::vector<ConfigChange> Reload();
  // A leader steps down when its lease lapsed (LeaseKeeper::StepDownIfLapsed); nothing without
  // PostgreSQL. Call often.
  void CheckLease();

  // The options in effect: those of the flags, as reloads changed them. REQUIRES: Init succeeded.
  DaemonOptions options() const;
  // After Init: the gRPC address served (HOST:PORT, the port bound), and the REST API's ("" when
  // --http-listen off).
  const std::string& address() const { return addr_; }
  const std::string& http_address() const { return http_addr_; }

 private:
  enum class Failure { kLogged, kUsage, kDataDirInUse, kStopped };
  absl::Status Fail(Failure how, absl::Status error);
  absl::Status OpenDataDir();
  absl::Status OpenStore();
  absl::Status LoadStateAndLoop();
  void MakeServices();
  absl::Status Listen();

  // The data dir's lock (LockDataDir): declared first, so that it is released last.
  class DirLock {
   public:
    ~DirLock();
    int fd = -1;
  };

  DirLock lock_;
  const std::vector<std::string> args_;
  const DaemonFlags flags_;
  const DaemonOptions options_;
  const sigset_t stop_;
  Failure failure_ = Failure::kLogged;
  bool started_ = false;
  bool shut_down_ = false;

  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::string instance_;
  std::optional<OpenedStore> opened_;
  // With PostgreSQL, the ports the standby held.
  std::string listen_;
  std::string http_listen_;
  std::optional<Lead> lead_;
  std::optional<LeaseKeeper> keeper_;
  TokenRegistry tokens_;
  CertificateRevocations revocations_;
  AgentRegistry registry_;
  WatchHub hub_;
  JobSnapshots snapshots_;
  // Served as GET /metrics on the HTTP port; declared before the loop, which counts into it.
  DaemonMetrics metrics_;
  // gRPC health says NOT_SERVING while changes are refused. Declared before the loop, so they
  // outlive it.
  absl::Mutex health_mu_;
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(health_mu_) = nullptr;
  // The loop's proof of life; it outlives the loop, which calls it.
  std::optional<Watchdog> watchdog_;
  std::unique_ptr<ReconcileLoop> loop_;
  bool loop_started_ = false;
  std::unique_ptr<DaemonReloader> config_;
  std::optional<ReplicaTokens> replica_tokens_;
  // Null with PostgreSQL and no --secret-key-file.
  std::unique_ptr<ProjectSecrets> secrets_;
  std::optional<WorkdirSweeper> workdir_sweeper_;
  // trainctld's copy of the replicas' logs (after the loop, which tells it of deletions).
  std::optional<CentralLogs> central_logs_;
  std::optional<SecretServiceImpl> secret_service_;
  std::optional<WorkdirServiceImpl> workdir_service_;
  std::optional<Authorizer> authorizer_;
  std::optional<Api> api_;
  std::optional<JobServiceImpl> job_service_;
  std::optional<AgentServiceImpl> agent_service_;
  std::optional<ClusterServiceImpl> cluster_service_;
  std::optional<QuotaServiceImpl> quota_service_;
  std::optional<UsageServiceImpl> usage_service_;
  std::optional<AuthServiceImpl> auth_service_;
  std::optional<AdminServiceImpl> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  std::optional<rest::RestServer> rest_;
  std::string addr_;
  std::string http_addr_;
};

// Prints "trainctld: MESSAGE" and a pointer to --help on stderr; returns 2, the exit status of
// a usage error.
int ReportUsageError(const std::string& message);

// main()'s trainctld: blocks SIGTERM, SIGINT and SIGHUP (and ignores SIGPIPE), runs a Daemon until
// SIGTERM or SIGINT, re-reading --config at SIGHUP, and returns the exit status.
int RunDaemon(const std::vector<std::string>& args, const DaemonFlags& flags);

}  // namespace trainctl::server
