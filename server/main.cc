// trainctld: the trainctl scheduler daemon.
#include <fcntl.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/agent_protocol.h"
#include "common/logging.h"
#include "common/mutex_mode.h"
#include "common/time_util.h"
#include "common/version.h"
#include "common/watchdog.h"
#include "scheduler/model_proto.h"
#include "server/admin_service.h"
#include "server/agent_registry.h"
#include "server/agent_service.h"
#include "server/api.h"
#include "server/auth_service.h"
#include "server/authorizer.h"
#include "server/cluster_service.h"
#include "server/config_reload.h"
#include "server/daemon_flags.h"
#include "server/data_dir.h"
#include "server/job_service.h"
#include "server/job_snapshots.h"
#include "server/leadership.h"
#include "server/metrics_daemon.h"
#include "server/pki.h"
#include "server/pki_command.h"
#include "server/quota_service.h"
#include "server/reconcile_loop.h"
#include "server/reflection_gate.h"
#include "server/rest/rest_server.h"
#include "server/state_load.h"
#include "server/tokens.h"
#include "server/transport_security.h"
#include "server/watch_hub.h"
#include "storage/pg_job_archive.h"
#include "storage/pg_store.h"
#include "storage/sqlite_job_archive.h"
#include "storage/sqlite_store.h"

namespace {

[[noreturn]] void UsageError(const std::string& msg) {
  std::cerr << "trainctld: " << msg << "\n(see trainctld --help)\n";
  std::exit(2);
}

// Holds an exclusive lock on DIR/LOCK for the life of the process, so two daemons never share
// one database.
void LockDataDir(const std::string& dir) {
  std::string path = dir + "/LOCK";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, trainctl::server::kDataFileMode);
  if (fd < 0) UsageError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::cerr << "trainctld: another trainctld is already using " << dir << "\n";
    std::exit(1);
  }
  std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || write(fd, pid.data(), pid.size()) < 0) {
    spdlog::warn("cannot write pid to {}", path);
  }
  // fd stays open on purpose.
}

// At the first start with authentication: an admin token, stored (as a hash) and written to
// DIR/admin.token, mode 0600, for the operator to create everyone else's.
absl::Status WriteFirstAdminToken(const std::string& dir, trainctl::server::ReconcileLoop* loop,
                                  trainctl::server::TokenRegistry* tokens) {
  using namespace trainctl;
  v1::ApiToken fields;
  fields.set_owner("admin");
  fields.set_role(v1::ROLE_ADMIN);
  *fields.mutable_create_time() = MsToTimestamp(WallNowMs());
  fields.set_created_by("trainctld");
  absl::StatusOr<server::MintedToken> minted = server::MintToken(fields);
  if (!minted.ok()) return minted.status();
  const std::string path = dir + "/admin.token";
  if (absl::Status s = server::WriteFileAtomically(path, minted->bearer + "\n", 0600); !s.ok()) {
    return s;
  }
  // Stored only after the file exists: a crash in between leaves no token nobody holds.
  std::promise<absl::Status> stored;
  server::StoreToken(
      loop, tokens, minted->row, "TokenCreated",
      absl::StrCat("first admin token ", minted->row.token.id(), ", written to ", path),
      "trainctld", [&stored](const absl::Status& s) { stored.set_value(s); });
  if (absl::Status s = stored.get_future().get(); !s.ok()) {
    unlink(path.c_str());
    return absl::Status(s.code(),
                        absl::StrCat("cannot store the first admin token: ", s.message()));
  }
  spdlog::warn("authentication is on and no token existed: wrote the first admin token to {}",
               path);
  return absl::OkStatus();
}

// The store trainctld keeps its state in (--store, or the SQLite file in --data-dir), and the
// readers' archive of it.
struct OpenedStore {
  std::unique_ptr<trainctl::storage::Store> store;
  // The same store when it is SQLite's (its checkpointer), else null.
  trainctl::storage::SqliteStore* sqlite = nullptr;
  // The same store when it is PostgreSQL's (its fence), else null.
  trainctl::storage::PgStore* pg = nullptr;
  std::unique_ptr<trainctl::storage::JobArchive> archive;
  // What logs call it: the file, or "the PostgreSQL store" (a URI may hold a password).
  std::string name;
};

// `instance` names this process's database sessions (storage/pg_lease.h).
absl::StatusOr<OpenedStore> OpenStore(const trainctl::server::DaemonFlags& flags,
                                      const std::string& instance) {
  using namespace trainctl;
  OpenedStore opened;
  if (!flags.store.empty()) {
    opened.name = "the PostgreSQL store";
    absl::StatusOr<std::unique_ptr<storage::PgStore>> pg =
        storage::PgStore::Open(flags.store, storage::LeaseApplicationName(instance));
    if (!pg.ok()) return pg.status();
    opened.pg = pg->get();
    opened.store = *std::move(pg);
    absl::StatusOr<std::unique_ptr<storage::PgJobArchive>> archive =
        storage::PgJobArchive::Open(flags.store);
    if (!archive.ok()) return archive.status();
    opened.archive = *std::move(archive);
    return opened;
  }
  opened.name = flags.data_dir + "/trainctl.db";
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> sqlite =
      storage::SqliteStore::Open(opened.name);
  if (!sqlite.ok()) return sqlite.status();
  opened.sqlite = sqlite->get();
  opened.store = *std::move(sqlite);
  absl::StatusOr<std::unique_ptr<storage::SqliteJobArchive>> archive =
      storage::SqliteJobArchive::Open(opened.name);
  if (!archive.ok()) return archive.status();
  opened.archive = *std::move(archive);
  return opened;
}

// This process's id, for the lease and its database sessions: "<data dir id>.<random>", the
// data dir's id kept in DATA_DIR/trainctld.id (storage/pg_lease.h: a lease held by an earlier
// process of the same data dir is taken at once).
absl::StatusOr<std::string> NewInstanceId(const std::string& data_dir) {
  const std::string path = data_dir + "/trainctld.id";
  std::string id;
  std::getline(std::ifstream(path), id);
  if (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    absl::StatusOr<std::string> made = trainctl::server::RandomHex(8);
    if (!made.ok()) return made.status();
    id = *made;
    if (absl::Status s =
            trainctl::server::WriteFileAtomically(path, id + "\n", trainctl::server::kDataFileMode);
        !s.ok()) {
      spdlog::warn("{}; this trainctld's lease is not known as its data dir's after a crash",
                   s.ToString());
    }
  }
  absl::StatusOr<std::string> process = trainctl::server::RandomHex(8);
  if (!process.ok()) return process.status();
  return absl::StrCat(id, ".", *process);
}

// Opens the store, waiting while its database cannot be reached (UNAVAILABLE: PostgreSQL
// starting or restarting) rather than exiting; a signal of `stop` ends the wait (nullopt).
std::optional<absl::StatusOr<OpenedStore>> OpenStoreWhenReachable(
    const trainctl::server::DaemonFlags& flags, const std::string& instance, const sigset_t& stop) {
  std::string last;
  for (;;) {
    absl::StatusOr<OpenedStore> opened = OpenStore(flags, instance);
    if (opened.ok() || opened.status().code() != absl::StatusCode::kUnavailable) return opened;
    if (std::string(opened.status().message()) != last) {
      last = std::string(opened.status().message());
      spdlog::warn("{}; waiting for the database", opened.status().ToString());
    }
    const timespec second = {1, 0};
    const int sig = sigtimedwait(&stop, nullptr, &second);
    if (sig > 0 && sig != SIGHUP) return std::nullopt;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainctl;
  UseBuildMutexChecks();
  if (argc >= 2 && std::string(argv[1]) == "pki") {
    return server::RunPkiCommand(std::vector<std::string>(argv + 2, argv + argc));
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<server::DaemonFlags> parsed = server::ParseDaemonFlags(args);
  if (!parsed.ok()) UsageError(std::string(parsed.status().message()));
  if (parsed->help) {
    std::cout << server::DaemonUsage();
    return 0;
  }
  if (parsed->version) {
    std::cout << "trainctld " << VersionText() << "\n";
    return 0;
  }
  const server::DaemonFlags& flags = *parsed;
  if (flags.print_config) {
    std::cout << server::DaemonConfigText(flags);
    return 0;
  }
  if (absl::Status s = SetupLogging("trainctld", flags.log_level, flags.log_format); !s.ok()) {
    UsageError(std::string(s.message()));
  }
  if (flags.check_db) return server::RunCheckDb(flags.data_dir);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      server::ServerCredentials(flags);
  if (!credentials.ok()) UsageError(std::string(credentials.status().message()));
  if (absl::Status s = server::SecureDataDir(flags.data_dir); !s.ok()) {
    UsageError(std::string(s.message()));
  }
  LockDataDir(flags.data_dir);
  if (absl::Status s = server::CheckAfterUncleanStop(flags.data_dir); !s.ok()) {
    spdlog::critical("{}", std::string(s.message()));
    return 1;
  }

  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::string> instance_id = NewInstanceId(flags.data_dir);
  if (!instance_id.ok()) {
    spdlog::critical("{}", instance_id.status().ToString());
    return 1;
  }
  const std::string instance = *instance_id;
  std::optional<absl::StatusOr<OpenedStore>> reached =
      OpenStoreWhenReachable(flags, instance, sigs);
  if (!reached.has_value()) {
    spdlog::info("stopped while waiting for the database");
    return 0;
  }
  absl::StatusOr<OpenedStore>& opened = *reached;
  if (!opened.ok()) {
    spdlog::critical("{}", opened.status().ToString());
    return 1;
  }
  const std::string& db_path = opened->name;
  // With PostgreSQL, trainctld leads only while it holds the lease; until then it stands by.
  std::string listen = flags.listen;
  std::string http_listen = flags.http_listen;
  std::optional<server::Lead> lead;
  std::optional<server::LeaseKeeper> keeper;
  if (opened->pg != nullptr) {
    int sig = 0;
    absl::StatusOr<std::optional<server::Lead>> waited = server::WaitToLead(
        {flags.store,
         instance,
         flags.advertise_address,
         flags.advertise_http_address,
         absl::Milliseconds(flags.lease_duration_ms),
         {flags.listen, *credentials, flags.http_listen, flags.tls_cert, flags.tls_key}},
        sigs, &sig);
    if (!waited.ok()) {
      spdlog::critical("{}", waited.status().ToString());
      return 1;
    }
    if (!waited->has_value()) {
      spdlog::info("received {} as a standby; stopped", strsignal(sig));
      server::MarkCleanStop(flags.data_dir);
      return 0;
    }
    lead = std::move(**waited);
    keeper.emplace(std::move(lead->lease), lead->taken_at);
    const int64_t epoch = lead->epoch;
    opened->pg->SetFence(epoch, [epoch](const absl::Status& s) {
      server::StepDown(absl::StrCat("a commit of epoch ", epoch, " was fenced: ", s.message()));
    });
    listen = absl::StrCat(flags.listen.substr(0, flags.listen.rfind(':')), ":", lead->grpc_port);
    if (http_listen != "off") {
      http_listen =
          absl::StrCat(http_listen.substr(0, http_listen.rfind(':')), ":", lead->http_port);
    }
  }
  sched::CoreOptions opts;
  opts.checkpoint_root = std::filesystem::absolute(flags.checkpoint_root).string();
  opts.checkpoint_allowed_roots = flags.checkpoint_allowed_roots;
  opts.replica_uid_range = flags.replica_uid_range;
  opts.heartbeat_interval = absl::Milliseconds(flags.heartbeat_ms);
  opts.default_quota = flags.default_quota;
  opts.nodes.lost_timeout_ms = flags.node_lost_timeout_ms;
  opts.nodes.flap_threshold = flags.flap_threshold;
  opts.nodes.flap_window_ms = flags.flap_window_ms;
  opts.settle_window = absl::Milliseconds(flags.settle_window_ms);
  opts.skew_tolerance = absl::Milliseconds(flags.skew_tolerance_ms);
  opts.nodes.ports = flags.port_range;
  // Jobs that ended longer ago than the cache, or beyond its count, stay in the database
  // (JobArchive reads them): a burst of jobs that ended at once is not read whole.
  const int64_t cache_ms = flags.finished_job_cache_ms;
  const int64_t cache_jobs = flags.finished_job_cache_jobs;
  absl::StatusOr<server::LoadedState> state =
      server::LoadState(*opened->store, opts, WallNowMs() - cache_ms, cache_jobs);
  if (!state.ok()) {
    spdlog::critical("loading {}: {}", db_path, state.status().ToString());
    return 1;
  }
  spdlog::info("loaded {} live or recently ended jobs and {} nodes from {}",
               state->core->jobs().size(), state->core->nodes().size(), db_path);
  // Checkpoints of the write-ahead log run beside the loop, so its commits find little to copy.
  if (opened->sqlite != nullptr) {
    if (absl::Status moved = opened->sqlite->StartCheckpointer(absl::Milliseconds(10));
        !moved.ok()) {
      spdlog::warn("{}; commits checkpoint the write-ahead log alone",
                   std::string(moved.message()));
    }
  }
  server::TokenRegistry tokens;
  tokens.Load(state->tokens);
  server::CertificateRevocations revocations;
  for (const std::string& fp : state->revoked_certificates) revocations.Add(fp);

  // A node taken over by another agent process only after two missed heartbeats.
  server::AgentRegistry registry(std::chrono::milliseconds(2 * flags.heartbeat_ms));
  server::WatchHub hub;
  server::JobSnapshots snapshots(&hub);
  // Served as GET /metrics on the HTTP port; declared before the loop, which counts into it.
  server::DaemonMetrics metrics;
  metrics.WatchJobs(&snapshots);
  // gRPC health says NOT_SERVING while changes are refused. The server starts after the
  // loop; these are declared before it, so they outlive it.
  absl::Mutex health_mu;
  grpc::HealthCheckServiceInterface* health = nullptr;
  // The loop's proof of life: systemd's watchdog pings (WatchdogSec=), and a log line when it
  // stalls. It outlives the loop, which calls it.
  Watchdog watchdog(Watchdog::FromSystemd("reconcile loop", absl::Seconds(30)));
  server::ReconcileLoop loop(std::move(state->core), std::move(opened->store), &registry,
                             &snapshots, WallNowMs);
  // After a failed commit (a full disk) the loop rebuilds the core from the database, as a
  // restart would, and refuses changes until a write succeeds.
  // SIGHUP re-reads --config; the default quota it sets outlives a rebuild of the core.
  server::DaemonReloader config(args, flags, &loop);
  loop.set_reloader([opts, cache_ms, cache_jobs,
                     &config](storage::Store& s) -> absl::StatusOr<std::unique_ptr<sched::Core>> {
    sched::CoreOptions now = opts;
    now.default_quota = config.default_quota();
    // A database server that is away (PostgreSQL restarting: UNAVAILABLE) is waited for,
    // up to kReloadWait, rather than the daemon exiting at once; the watchdog allows 30 s.
    constexpr absl::Duration kReloadWait = absl::Seconds(20);
    const absl::Time give_up = absl::Now() + kReloadWait;
    for (;;) {
      absl::StatusOr<server::LoadedState> reloaded =
          server::LoadState(s, now, WallNowMs() - cache_ms, cache_jobs);
      if (reloaded.ok()) return std::move(reloaded->core);
      if (reloaded.status().code() != absl::StatusCode::kUnavailable || absl::Now() > give_up) {
        return reloaded.status();
      }
      spdlog::warn("reloading the scheduler state: {}; trying again", reloaded.status().ToString());
      absl::SleepFor(absl::Milliseconds(500));
    }
  });
  loop.set_write_state_listener([&](const absl::Status& writes) {
    absl::MutexLock lock(&health_mu);
    if (health != nullptr) health->SetServingStatus(writes.ok());
  });
  loop.set_alive(watchdog.AliveCallback());
  loop.set_metrics(&metrics);
  if (lead) metrics.SetLeaderEpoch(lead->epoch);
  loop.set_job_retention_ms(flags.job_retention_ms);
  loop.set_finished_job_cache_ms(cache_ms);
  loop.set_finished_job_cache_jobs(cache_jobs);
  // Checked by the flag parser.
  loop.set_redactor(*server::SecretRedactor::Parse(flags.secret_env_patterns));
  snapshots.set_archive(opened->archive.get(), loop.redactor());
  // Users are authenticated where agents are: whenever trainctld serves TLS. Replicas then get a
  // token for their own job's progress.
  std::optional<server::ReplicaTokens> replica_tokens;
  if (flags.tls()) {
    // With PostgreSQL the key is the cluster's, shared by every trainctld of the database.
    const std::string key_file = flags.data_dir + "/replica-token.key";
    absl::StatusOr<server::ReplicaTokens> loaded =
        opened->pg != nullptr ? server::ReplicaTokens::Adopt(*opened->pg, key_file)
                              : server::ReplicaTokens::LoadOrCreate(key_file);
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      return 1;
    }
    replica_tokens.emplace(*std::move(loaded));
    loop.set_replica_tokens(&*replica_tokens);
  }
  const server::Authorizer authorizer(flags.tls(), &tokens, WallNowMs,
                                      replica_tokens ? &*replica_tokens : nullptr);
  server::Api api({&loop,
                   &registry,
                   &snapshots,
                   WallNowMs,
                   &authorizer,
                   &tokens,
                   &revocations,
                   {flags.max_request_bytes - (64 << 10), flags.max_watches_per_peer},
                   opened->archive.get(),
                   kAgentProtocolVersion});
  server::JobServiceImpl job_service(&api);
  server::AgentServiceImpl agent_service(&loop, &registry, {flags.tls(), &revocations},
                                         flags.max_agent_streams_per_peer,
                                         flags.max_new_nodes_per_peer, lead ? lead->epoch : 0);
  server::ClusterServiceImpl cluster_service(&api);
  server::QuotaServiceImpl quota_service(&api);
  server::AuthServiceImpl auth_service(&api);
  server::AdminServiceImpl admin_service(&api, flags.data_dir,
                                         /*sqlite=*/opened->sqlite != nullptr);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // Reflection is gRPC's own service: with authentication it is gated where TLS is.
  if (authorizer.enabled()) {
    (*credentials)->SetAuthMetadataProcessor(std::make_shared<server::ReflectionGate>(&authorizer));
  }
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(flags.max_request_bytes));
  int port = 0;
  builder.AddListeningPort(listen, *credentials, &port);
  // Without SO_REUSEPORT: a second trainctld on this port must fail, not share its connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&job_service);
  builder.RegisterService(&agent_service);
  builder.RegisterService(&cluster_service);
  builder.RegisterService(&quota_service);
  builder.RegisterService(&auth_service);
  builder.RegisterService(&admin_service);
  // Agents hold their stream for days: keep it alive through idle NATs and notice dead peers.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  loop.Start();
  if (lead) {
    loop.Post([reason = lead->reason](server::Turn& t) {
      sched::AddEvent(t.fx, t.now, nullptr, "", "", "LeaderElected", reason);
    });
  }
  if (authorizer.enabled() && tokens.size() == 0) {
    if (absl::Status s = WriteFirstAdminToken(flags.data_dir, &loop, &tokens); !s.ok()) {
      spdlog::critical("{}", s.ToString());
      loop.Stop();
      return 1;
    }
  }
  // The standby's servers give the ports up only now that the real ones are ready to take them.
  if (lead) lead->standby->Stop();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    spdlog::critical(
        "cannot listen on {} (--listen): another process uses the port, or the address is not "
        "this host's",
        listen);
    loop.Stop();
    return 1;
  }
  {
    absl::MutexLock lock(&health_mu);
    health = server->GetHealthCheckService();
    if (health != nullptr) health->SetServingStatus(loop.write_status().ok());
  }
  std::string host = listen.substr(0, listen.rfind(':'));
  std::string addr = absl::StrCat(host, ":", port);
  // The REST API and console; its address file is written before trainctld.addr, so whoever
  // waits for that one finds both.
  std::optional<server::rest::RestServer> rest;
  if (http_listen != "off") {
    rest.emplace(&api,
                 server::rest::RestOptions{http_listen, flags.http_max_streams,
                                           flags.max_request_bytes, flags.tls_cert, flags.tls_key,
                                           server::MetricsEndpoint(&authorizer, &metrics),
                                           flags.http_allowed_hosts, flags.advertise_http_address});
    absl::StatusOr<int> http_port = rest->Start();
    const std::string http_host = http_listen.substr(0, http_listen.rfind(':'));
    const std::string http_addr = absl::StrCat(http_host, ":", http_port.ok() ? *http_port : 0);
    absl::Status written = http_port.status();
    if (written.ok()) {
      written = server::WriteFileAtomically(flags.data_dir + "/trainctld.http-addr",
                                            http_addr + "\n", server::kDataFileMode);
    }
    if (!written.ok()) {
      spdlog::critical("{}", written.ToString());
      server->Shutdown();
      loop.Stop();
      return 1;
    }
    spdlog::info("REST API and web console on {}://{}", flags.tls() ? "https" : "http", http_addr);
  }
  if (absl::Status s = server::WriteFileAtomically(flags.data_dir + "/trainctld.addr", addr + "\n",
                                                   server::kDataFileMode);
      !s.ok()) {
    spdlog::critical("{}", s.ToString());
    if (rest) rest->Stop();
    server->Shutdown();
    loop.Stop();
    return 1;
  }
  spdlog::info("trainctld listening on {} (data dir {})", addr, flags.data_dir);
  if (lead) {
    spdlog::warn("leading as {} (epoch {}); standbys name this address", lead->address,
                 lead->epoch);
  }
  if (flags.tls()) {
    spdlog::info(
        "TLS on; agents must present a certificate for their node signed by {}; every API call "
        "needs a bearer token",
        flags.agent_ca);
  } else if (flags.insecure_allow_plaintext) {
    spdlog::warn(
        "INSECURE: plaintext gRPC on {} (--insecure-allow-plaintext): authentication is off; "
        "anyone who reaches this port can submit any command to every node, and any process can "
        "register as any node",
        addr);
  } else {
    spdlog::info(
        "plaintext on loopback: agents are not authenticated; serve TLS "
        "(--tls-cert) to accept other hosts");
  }
  // Type=notify units start their dependants only now; a no-op outside systemd.
  sd_notify(0, "READY=1");

  int sig = 0;
  for (;;) {
    // A leader checks often that its lease still runs (a renewal that blocks cannot delay it).
    const timespec tick = {0, 100'000'000};
    sig = sigtimedwait(&sigs, nullptr, &tick);
    if (keeper) keeper->StepDownIfLapsed();
    if (sig <= 0) continue;
    if (sig != SIGHUP) break;
    sd_notify(0, "RELOADING=1");
    config.Reload();
    sd_notify(0, "READY=1");
  }
  spdlog::info("received {}; shutting down", strsignal(sig));
  sd_notify(0, "STOPPING=1");
  // Streams end first (watches here; agents' and log follows at the deadline), so that clients
  // and agents connected cannot hold the stop: trainctld is gone within a second.
  hub.Clear();
  if (rest) rest->Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  loop.Stop();
  // Nothing more is committed: a standby may lead at once.
  if (keeper) keeper->Release();
  server::MarkCleanStop(flags.data_dir);
  spdlog::info("stopped");
  return 0;
}
