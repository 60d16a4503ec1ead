#include "server/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/agent_protocol.h"
#include "common/time_util.h"
#include "server/data_dir.h"
#include "server/pki.h"
#include "server/reflection_gate.h"
#include "server/state_load.h"

namespace trainctl::server {
namespace {

// `error` with its code's name in its message: what trainctld logs of most errors at start.
absl::Status Described(const absl::Status& error, const std::string& prefix = "") {
  return absl::Status(error.code(), absl::StrCat(prefix, error.ToString()));
}

// HOST of "HOST:PORT" with `port`.
std::string WithPort(const std::string& listen, int port) {
  return absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
}

}  // namespace

int ReportUsageError(const std::string& message) {
  std::cerr << "trainctld: " << message << "\n(see trainctld --help)\n";
  return 2;
}

Daemon::DirLock::~DirLock() {
  if (fd >= 0) close(fd);
}

Daemon::Daemon(std::vector<std::string> args, DaemonFlags flags, const sigset_t& stop)
    : args_(std::move(args)),
      flags_(std::move(flags)),
      options_(DaemonOptionsFromFlags(flags_)),
      stop_(stop),
      // A node taken over by another agent process only after two missed heartbeats.
      registry_(std::chrono::milliseconds(2 * flags_.heartbeat_ms)),
      snapshots_(&hub_) {
  metrics_.WatchJobs(&snapshots_);
}

Daemon::~Daemon() { Shutdown(); }

absl::Status Daemon::Fail(Failure how, absl::Status error) {
  failure_ = how;
  return error;
}

absl::Status Daemon::Init() {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = ServerCredentials(flags_);
  if (!credentials.ok()) return Fail(Failure::kUsage, credentials.status());
  credentials_ = *std::move(credentials);
  if (absl::Status s = OpenDataDir(); !s.ok()) return s;
  if (absl::Status s = OpenStore(); !s.ok()) return s;
  if (absl::Status s = LoadStateAndLoop(); !s.ok()) return s;
  MakeServices();
  return Listen();
}

absl::Status Daemon::OpenDataDir() {
  if (absl::Status s = SecureDataDir(flags_.data_dir); !s.ok()) return Fail(Failure::kUsage, s);
  absl::StatusOr<int> lock = LockDataDir(flags_.data_dir);
  if (!lock.ok()) {
    return Fail(
        absl::IsFailedPrecondition(lock.status()) ? Failure::kDataDirInUse : Failure::kUsage,
        lock.status());
  }
  lock_.fd = *lock;
  if (absl::Status s = CheckAfterUncleanStop(flags_.data_dir); !s.ok()) {
    return Fail(Failure::kLogged, s);
  }
  absl::StatusOr<std::string> instance = NewInstanceId(flags_.data_dir);
  if (!instance.ok()) return Fail(Failure::kLogged, Described(instance.status()));
  instance_ = *std::move(instance);
  return absl::OkStatus();
}

absl::Status Daemon::OpenStore() {
  std::optional<absl::StatusOr<OpenedStore>> reached =
      OpenStoreWhenReachable(flags_, instance_, stop_);
  if (!reached.has_value()) {
    return Fail(Failure::kStopped, absl::CancelledError("stopped while waiting for the database"));
  }
  if (!reached->ok()) return Fail(Failure::kLogged, Described(reached->status()));
  opened_ = **std::move(reached);
  listen_ = flags_.listen;
  http_listen_ = flags_.http_listen;
  if (opened_->pg == nullptr) return absl::OkStatus();
  // With PostgreSQL, trainctld leads only while it holds the lease; until then it stands by.
  int sig = 0;
  absl::StatusOr<std::optional<Lead>> waited = WaitToLead(
      {flags_.store,
       instance_,
       flags_.advertise_address,
       flags_.advertise_http_address,
       absl::Milliseconds(flags_.lease_duration_ms),
       {flags_.listen, credentials_, flags_.http_listen, flags_.tls_cert, flags_.tls_key}},
      stop_, &sig);
  if (!waited.ok()) return Fail(Failure::kLogged, Described(waited.status()));
  if (!waited->has_value()) {
    MarkCleanStop(flags_.data_dir);
    return Fail(Failure::kStopped, absl::CancelledError(absl::StrCat("received ", strsignal(sig),
                                                                     " as a standby; stopped")));
  }
  lead_ = std::move(**waited);
  keeper_.emplace(std::move(lead_->lease), lead_->taken_at);
  const int64_t epoch = lead_->epoch;
  opened_->pg->SetFence(epoch, [epoch](const absl::Status& s) {
    StepDown(absl::StrCat("a commit of epoch ", epoch, " was fenced: ", s.message()));
  });
  listen_ = WithPort(flags_.listen, lead_->grpc_port);
  if (http_listen_ != "off") http_listen_ = WithPort(http_listen_, lead_->http_port);
  return absl::OkStatus();
}

absl::Status Daemon::LoadStateAndLoop() {
  const DaemonOptions& opts = options_;
  absl::StatusOr<LoadedState> state =
      LoadState(*opened_->store, opts.core, WallNowMs() - opts.finished_job_cache_ms,
                opts.finished_job_cache_jobs);
  if (!state.ok()) {
    return Fail(Failure::kLogged,
                Described(state.status(), absl::StrCat("loading ", opened_->name, ": ")));
  }
  spdlog::info("loaded {} live or recently ended jobs and {} nodes from {}",
               state->core->jobs().size(), state->core->nodes().size(), opened_->name);
  // Checkpoints of the write-ahead log run beside the loop, so its commits find little to copy.
  if (opened_->sqlite != nullptr) {
    if (absl::Status moved = opened_->sqlite->StartCheckpointer(absl::Milliseconds(10));
        !moved.ok()) {
      spdlog::warn("{}; commits checkpoint the write-ahead log alone",
                   std::string(moved.message()));
    }
  }
  tokens_.Load(state->tokens);
  // The key stays beside SQLite's database; PostgreSQL's trainctlds share one they are given.
  if (opened_->pg == nullptr || !flags_.secret_key_file.empty()) {
    const std::string key_file =
        !flags_.secret_key_file.empty() ? flags_.secret_key_file : flags_.data_dir + "/secrets.key";
    absl::StatusOr<std::unique_ptr<ProjectSecrets>> secrets = OpenProjectSecrets(
        *opened_->store, key_file, opened_->pg == nullptr, std::move(state->secrets));
    if (!secrets.ok()) return Fail(Failure::kLogged, Described(secrets.status()));
    secrets_ = *std::move(secrets);
  } else if (!state->secrets.empty()) {
    spdlog::warn(
        "the database holds {} project secrets, but without --secret-key-file this "
        "trainctld cannot open them: launches that need one fail",
        state->secrets.size());
  }
  for (const std::string& fp : state->revoked_certificates) revocations_.Add(fp);

  // The loop's proof of life: systemd's watchdog pings (WatchdogSec=), and a log line when it
  // stalls.
  watchdog_.emplace(Watchdog::FromSystemd("reconcile loop", absl::Seconds(30)));
  loop_ = std::make_unique<ReconcileLoop>(std::move(state->core), std::move(opened_->store),
                                          &registry_, &snapshots_, WallNowMs);
  // SIGHUP re-reads --config; the default quota it sets outlives a rebuild of the core.
  config_ = std::make_unique<DaemonReloader>(args_, flags_, loop_.get());
  // After a failed commit (a full disk) the loop rebuilds the core from the database, as a
  // restart would, and refuses changes until a write succeeds.
  loop_->set_reloader([this](storage::Store& s) -> absl::StatusOr<std::unique_ptr<sched::Core>> {
    const DaemonOptions now = config_->options();
    // A database server that is away (PostgreSQL restarting: UNAVAILABLE) is waited for,
    // up to kReloadWait, rather than the daemon exiting at once; the watchdog allows 30 s.
    constexpr absl::Duration kReloadWait = absl::Seconds(20);
    const absl::Time give_up = absl::Now() + kReloadWait;
    for (;;) {
      absl::StatusOr<LoadedState> reloaded = LoadState(
          s, now.core, WallNowMs() - now.finished_job_cache_ms, now.finished_job_cache_jobs);
      if (reloaded.ok()) return std::move(reloaded->core);
      if (reloaded.status().code() != absl::StatusCode::kUnavailable || absl::Now() > give_up) {
        return reloaded.status();
      }
      spdlog::warn("reloading the scheduler state: {}; trying again", reloaded.status().ToString());
      absl::SleepFor(absl::Milliseconds(500));
    }
  });
  loop_->set_write_state_listener([this](const absl::Status& writes) {
    absl::MutexLock lock(&health_mu_);
    if (health_ != nullptr) health_->SetServingStatus(writes.ok());
  });
  loop_->set_alive(watchdog_->AliveCallback());
  loop_->set_metrics(&metrics_);
  if (lead_) metrics_.SetLeaderEpoch(lead_->epoch);
  loop_->set_job_retention_ms(opts.job_retention_ms);
  loop_->set_usage_retention_ms(opts.usage_retention_ms);
  loop_->set_finished_job_cache_ms(opts.finished_job_cache_ms);
  loop_->set_finished_job_cache_jobs(opts.finished_job_cache_jobs);
  // Checked by the flag parser.
  loop_->set_redactor(*SecretRedactor::Parse(flags_.secret_env_patterns));
  snapshots_.set_archive(opened_->archive.get(), loop_->redactor());
  // Users are authenticated where agents are: whenever trainctld serves TLS. Replicas then get a
  // token for their own job's progress.
  if (flags_.tls()) {
    // With PostgreSQL the key is the cluster's, shared by every trainctld of the database.
    const std::string key_file = flags_.data_dir + "/replica-token.key";
    absl::StatusOr<ReplicaTokens> loaded = opened_->pg != nullptr
                                               ? ReplicaTokens::Adopt(*opened_->pg, key_file)
                                               : ReplicaTokens::LoadOrCreate(key_file);
    if (!loaded.ok()) return Fail(Failure::kLogged, Described(loaded.status()));
    replica_tokens_.emplace(*std::move(loaded));
    loop_->set_replica_tokens(&*replica_tokens_);
  }
  loop_->set_project_secrets(secrets_.get());
  return absl::OkStatus();
}

void Daemon::MakeServices() {
  authorizer_.emplace(flags_.tls(), &tokens_, WallNowMs,
                      replica_tokens_ ? &*replica_tokens_ : nullptr);
  api_.emplace(Api::Parts{loop_.get(), &registry_, &snapshots_, WallNowMs, &*authorizer_, &tokens_,
                          &revocations_, options_.api, opened_->archive.get(),
                          kAgentProtocolVersion, secrets_.get(), opened_->workdirs.get(),
                          flags_.max_workdir_mb << 20, opened_->logs.get()});
  job_service_.emplace(&*api_);
  agent_service_.emplace(loop_.get(), &registry_, AgentAuth{flags_.tls(), &revocations_},
                         flags_.max_agent_streams_per_peer, flags_.max_new_nodes_per_peer,
                         lead_ ? lead_->epoch : 0);
  agent_service_->set_workdirs(opened_->workdirs.get(), &snapshots_);
  central_logs_.emplace(
      opened_->logs.get(),
      CentralLogs::Options{static_cast<int64_t>(flags_.log_store_max_gb * (int64_t{1} << 30))},
      &snapshots_, opened_->archive.get(), loop_.get(), &metrics_);
  loop_->set_jobs_deleted_listener(
      [logs = &*central_logs_](const std::vector<std::string>& ids) { logs->Forget(ids); });
  agent_service_->set_logs(&*central_logs_);
  cluster_service_.emplace(&*api_);
  quota_service_.emplace(&*api_);
  usage_service_.emplace(&*api_);
  secret_service_.emplace(&*api_);
  workdir_service_.emplace(&*api_);
  auth_service_.emplace(&*api_);
  admin_service_.emplace(&*api_, flags_.data_dir, /*sqlite=*/opened_->sqlite != nullptr);
}

absl::Status Daemon::Listen() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // Reflection is gRPC's own service: with authentication it is gated where TLS is.
  if (authorizer_->enabled()) {
    credentials_->SetAuthMetadataProcessor(std::make_shared<ReflectionGate>(&*authorizer_));
  }
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(flags_.max_request_bytes));
  int port = 0;
  builder.AddListeningPort(listen_, credentials_, &port);
  // Without SO_REUSEPORT: a second trainctld on this port must fail, not share its connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&*job_service_);
  builder.RegisterService(&*agent_service_);
  builder.RegisterService(&*cluster_service_);
  builder.RegisterService(&*quota_service_);
  builder.RegisterService(&*usage_service_);
  builder.RegisterService(&*auth_service_);
  builder.RegisterService(&*admin_service_);
  builder.RegisterService(&*secret_service_);
  builder.RegisterService(&*workdir_service_);
  // Agents hold their stream for days: keep it alive through idle NATs and notice dead peers.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  loop_->Start();
  loop_started_ = true;
  // Only the leader deletes: a standby's view of which jobs exist may lag.
  workdir_sweeper_.emplace(opened_->workdirs.get(), absl::Minutes(1), absl::Hours(1));
  if (lead_) {
    loop_->Post([reason = lead_->reason](Turn& t) {
      sched::AddEvent(t.fx, t.now, nullptr, "", "", "LeaderElected", reason);
    });
  }
  if (authorizer_->enabled() && tokens_.size() == 0) {
    if (absl::Status s = WriteFirstAdminToken(flags_.data_dir, loop_.get(), &tokens_); !s.ok()) {
      return Fail(Failure::kLogged, Described(s));
    }
  }
  // The standby's servers give the ports up only now that the real ones are ready to take them.
  if (lead_) lead_->standby->Stop();
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    return Fail(Failure::kLogged,
                absl::UnavailableError(absl::StrCat(
                    "cannot listen on ", listen_,
                    " (--listen): another process uses the port, or the address is not "
                    "this host's")));
  }
  {
    absl::MutexLock lock(&health_mu_);
    health_ = server_->GetHealthCheckService();
    if (health_ != nullptr) health_->SetServingStatus(loop_->write_status().ok());
  }
  addr_ = WithPort(listen_, port);
  // The REST API and console.
  if (http_listen_ != "off") {
    rest_.emplace(&*api_,
                  rest::RestOptions{http_listen_, flags_.http_max_streams, flags_.max_request_bytes,
                                    flags_.tls_cert, flags_.tls_key,
                                    MetricsEndpoint(&*authorizer_, &metrics_),
                                    flags_.http_allowed_hosts, flags_.advertise_http_address});
    absl::StatusOr<int> http_port = rest_->Start();
    if (!http_port.ok()) return Fail(Failure::kLogged, Described(http_port.status()));
    http_addr_ = WithPort(http_listen_, *http_port);
  }
  return absl::OkStatus();
}

absl::Status Daemon::Start() {
  // The REST API's address file is written before trainctld.addr, so whoever waits for that one
  // finds both.
  if (rest_) {
    if (absl::Status s = WriteFileAtomically(flags_.data_dir + "/trainctld.http-addr",
                                             http_addr_ + "\n", kDataFileMode);
        !s.ok()) {
      return Fail(Failure::kLogged, Described(s));
    }
    spdlog::info("REST API and web console on {}://{}", flags_.tls() ? "https" : "http",
                 http_addr_);
  }
  if (absl::Status s =
          WriteFileAtomically(flags_.data_dir + "/trainctld.addr", addr_ + "\n", kDataFileMode);
      !s.ok()) {
    return Fail(Failure::kLogged, Described(s));
  }
  spdlog::info("trainctld listening on {} (data dir {})", addr_, flags_.data_dir);
  if (lead_) {
    spdlog::warn("leading as {} (epoch {}); standbys name this address", lead_->address,
                 lead_->epoch);
  }
  if (flags_.tls()) {
    spdlog::info(
        "TLS on; agents must present a certificate for their node signed by {}; every API call "
        "needs a bearer token",
        flags_.agent_ca);
  } else if (flags_.insecure_allow_plaintext) {
    spdlog::warn(
        "INSECURE: plaintext gRPC on {} (--insecure-allow-plaintext): authentication is off; "
        "anyone who reaches this port can submit any command to every node, and any process can "
        "register as any node",
        addr_);
  } else {
    spdlog::info(
        "plaintext on loopback: agents are not authenticated; serve TLS "
        "(--tls-cert) to accept other hosts");
  }
  started_ = true;
  // Type=notify units start their dependants only now; a no-op outside systemd.
  sd_notify(0, "READY=1");
  return absl::OkStatus();
}

void Daemon::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Streams end first (watches here; agents' and log follows at the deadline), so that clients
  // and agents connected cannot hold the stop: trainctld is gone within a second.
  hub_.Clear();
  workdir_sweeper_.reset();
  if (rest_) rest_->Stop();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  }
  if (loop_started_) loop_->Stop();
  // After the server (no ShipLogs call is left) and the loop (which tells it of deletions).
  central_logs_.reset();
  if (!started_) return;
  // Nothing more is committed: a standby may lead at once.
  if (keeper_) keeper_->Release();
  MarkCleanStop(flags_.data_dir);
}

int Daemon::ReportFailure(const absl::Status& error) const {
  const std::string message(error.message());
  switch (failure_) {
    case Failure::kUsage:
      return ReportUsageError(message);
    case Failure::kDataDirInUse:
      std::cerr << "trainctld: " << message << "\n";
      return 1;
    case Failure::kStopped:
      spdlog::info("{}", message);
      return 0;
    case Failure::kLogged:
      break;
  }
  spdlog::critical("{}", message);
  return 1;
}

std::vector<ConfigChange> Daemon::Reload() { return config_->Reload(); }

void Daemon::CheckLease() {
  if (keeper_) keeper_->StepDownIfLapsed();
}

DaemonOptions Daemon::options() const { return config_ ? config_->options() : options_; }

int RunDaemon(const std::vector<std::string>& args, const DaemonFlags& flags) {
  // Signals are taken by sigtimedwait below; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Daemon daemon(args, flags, sigs);
  absl::Status started = daemon.Init();
  if (started.ok()) started = daemon.Start();
  if (!started.ok()) return daemon.ReportFailure(started);
  int sig = 0;
  for (;;) {
    // A leader checks often that its lease still runs (a renewal that blocks cannot delay it).
    const timespec tick = {0, 100'000'000};
    sig = sigtimedwait(&sigs, nullptr, &tick);
    daemon.CheckLease();
    if (sig <= 0) continue;
    if (sig != SIGHUP) break;
    sd_notify(0, "RELOADING=1");
    daemon.Reload();
    sd_notify(0, "READY=1");
  }
  spdlog::info("received {}; shutting down", strsignal(sig));
  sd_notify(0, "STOPPING=1");
  daemon.Shutdown();
  spdlog::info("stopped");
  return 0;
}

}  // namespace trainctl::server
