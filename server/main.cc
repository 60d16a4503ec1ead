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
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/time_util.h"
#include "scheduler/model_proto.h"
#include "server/agent_registry.h"
#include "server/agent_service.h"
#include "server/cluster_service.h"
#include "server/job_service.h"
#include "server/quota_service.h"
#include "server/reconcile_loop.h"
#include "server/watch_hub.h"

namespace {

constexpr char kUsage[] = R"(Usage: trainctld --data-dir DIR [flags]

The trainctl scheduler: serves the job API, keeps every job in SQLite, places replicas on
trainctl-agent nodes and reacts to their exits.

Flags:
  --data-dir DIR             where the database (trainctl.db) lives; created if missing (required)
  --listen HOST:PORT         gRPC address for the CLI, pipelines and agents (default 127.0.0.1:7070;
                             port 0 picks a free port; the address in use is written to
                             DIR/trainctld.addr)
  --checkpoint-root DIR      parent of each job's default checkpoint directory; point it at a
                             filesystem every node mounts (default DIR/checkpoints)
  --heartbeat-interval D     how often agents send heartbeats (default 2s)
  --node-lost-timeout D      a node not heard from for this long is LOST and its replicas move to
                             other nodes (default 15s; at least 3 heartbeat intervals)
  --flap-threshold N         a node isolated N times within --flap-window is flapping: it stays
                             out until `trainctl node uncordon` (default 3; 0 turns it off)
  --flap-window D            (default 1h)
  --default-quota-gpus N     the default quota, for every project without a quota of its own
                             (set one with `trainctl quota set`): GPUs its jobs may hold at once
  --default-quota-cpu N      CPU cores (fractions allowed) its jobs may hold at once
  --default-quota-memory-mb N
                             memory in MiB its jobs may hold at once
  --default-quota-max-running-jobs N
                             jobs it may run at once
                             (each a non-negative number; unset means unlimited, the default)
  --log-level LEVEL          trace, debug, info, warn, error (default info)
  -h, --help                 show this help
  --version                  print the version
)";

struct Flags {
  std::string data_dir;
  std::string listen = "127.0.0.1:7070";
  std::string checkpoint_root;
  int64_t heartbeat_ms = 2000;
  int64_t node_lost_timeout_ms = 15000;
  int32_t flap_threshold = 3;
  int64_t flap_window_ms = 3'600'000;
  std::string log_level = "info";
  // CoreOptions::default_quota; unset limits are unlimited.
  trainctl::v1::Quota default_quota;
};

[[noreturn]] void UsageError(const std::string& msg) {
  std::cerr << "trainctld: " << msg << "\n(see trainctld --help)\n";
  std::exit(2);
}

// A non-negative whole number for `flag`, at most `max`; exits with a usage error otherwise.
int64_t ParseCount(const std::string& flag, const std::string& text, int64_t max) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < 0 || n > max) {
    UsageError(
        absl::StrCat(flag, " must be a whole number from 0 to ", max, ", got \"", text, "\""));
  }
  return n;
}

// Fills the default quota from the --default-quota-* flags that were given (non-empty).
void ParseDefaultQuota(const std::map<std::string, std::string>& given, trainctl::v1::Quota* q) {
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  for (const auto& [flag, text] : given) {
    if (text.empty()) continue;
    if (flag == "--default-quota-gpus") {
      q->set_gpus(static_cast<int32_t>(ParseCount(flag, text, kMaxInt32)));
    } else if (flag == "--default-quota-memory-mb") {
      q->set_memory_mb(ParseCount(flag, text, std::numeric_limits<int64_t>::max()));
    } else if (flag == "--default-quota-max-running-jobs") {
      q->set_max_running_jobs(static_cast<int32_t>(ParseCount(flag, text, kMaxInt32)));
    } else {
      double cpu = 0;
      if (!absl::SimpleAtod(text, &cpu) || !std::isfinite(cpu) || cpu < 0) {
        UsageError(absl::StrCat(flag, " must be a non-negative number of cores (e.g. 8 or 0.5), ",
                                "got \"", text, "\""));
      }
      q->set_cpu(cpu);
    }
  }
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  std::map<std::string, std::string*> strings = {{"--data-dir", &f.data_dir},
                                                 {"--listen", &f.listen},
                                                 {"--checkpoint-root", &f.checkpoint_root},
                                                 {"--log-level", &f.log_level}};
  std::string heartbeat, lost_timeout, flap_threshold, flap_window;
  strings["--heartbeat-interval"] = &heartbeat;
  strings["--node-lost-timeout"] = &lost_timeout;
  strings["--flap-threshold"] = &flap_threshold;
  strings["--flap-window"] = &flap_window;
  std::map<std::string, std::string> quota = {{"--default-quota-gpus", ""},
                                              {"--default-quota-cpu", ""},
                                              {"--default-quota-memory-mb", ""},
                                              {"--default-quota-max-running-jobs", ""}};
  for (auto& [flag, value] : quota) strings[flag] = &value;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg == "--version") {
      std::cout << "trainctld 0.1.0\n";
      std::exit(0);
    }
    std::string value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto it = strings.find(arg);
    if (it == strings.end()) UsageError(absl::StrCat("unknown flag ", arg));
    if (eq == std::string::npos) {
      if (i + 1 >= argc) UsageError(absl::StrCat(arg, " needs a value"));
      value = argv[++i];
    }
    if (value.empty() && quota.count(arg) > 0) UsageError(absl::StrCat(arg, " needs a value"));
    *it->second = value;
  }
  if (f.data_dir.empty()) UsageError("--data-dir is required");
  if (!heartbeat.empty()) {
    absl::StatusOr<int64_t> ms = trainctl::ParseDurationMs(heartbeat);
    if (!ms.ok() || *ms < 100 || *ms > 60000) {
      UsageError("--heartbeat-interval must be a duration between 100ms and 60s, e.g. 2s");
    }
    f.heartbeat_ms = *ms;
  }
  if (!lost_timeout.empty()) {
    absl::StatusOr<int64_t> ms = trainctl::ParseDurationMs(lost_timeout);
    if (!ms.ok() || *ms < 1000 || *ms > 3'600'000) {
      UsageError(absl::StrCat("--node-lost-timeout must be a duration between 1s and 1h, e.g. ",
                              "15s, got \"", lost_timeout, "\""));
    }
    f.node_lost_timeout_ms = *ms;
  }
  if (f.node_lost_timeout_ms < 3 * f.heartbeat_ms) {
    UsageError(absl::StrCat("--node-lost-timeout (", f.node_lost_timeout_ms,
                            "ms) must be at least 3 heartbeat intervals (--heartbeat-interval ",
                            f.heartbeat_ms, "ms), or healthy nodes would be declared lost"));
  }
  if (!flap_threshold.empty()) {
    f.flap_threshold = static_cast<int32_t>(ParseCount("--flap-threshold", flap_threshold, 100));
  }
  if (!flap_window.empty()) {
    absl::StatusOr<int64_t> ms = trainctl::ParseDurationMs(flap_window);
    if (!ms.ok() || *ms < 1000 || *ms > 7 * 86'400'000LL) {
      UsageError(absl::StrCat("--flap-window must be a duration between 1s and 168h, e.g. 1h, ",
                              "got \"", flap_window, "\""));
    }
    f.flap_window_ms = *ms;
  }
  ParseDefaultQuota(quota, &f.default_quota);
  if (f.checkpoint_root.empty()) f.checkpoint_root = f.data_dir + "/checkpoints";
  return f;
}

// Holds an exclusive lock on DIR/LOCK for the life of the process, so two daemons never share
// one database.
void LockDataDir(const std::string& dir) {
  std::string path = dir + "/LOCK";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
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

}  // namespace

int main(int argc, char** argv) {
  using namespace trainctl;
  Flags flags = ParseFlags(argc, argv);
  if (absl::Status s = SetupLogging("trainctld", flags.log_level); !s.ok()) {
    UsageError(std::string(s.message()));
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  if (ec) UsageError(absl::StrCat("cannot create --data-dir ", flags.data_dir, ": ", ec.message()));
  LockDataDir(flags.data_dir);

  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const std::string db_path = flags.data_dir + "/trainctl.db";
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(db_path);
  if (!store.ok()) {
    spdlog::critical("{}", store.status().ToString());
    return 1;
  }
  absl::StatusOr<storage::Snapshot> snap = (*store)->Load();
  if (!snap.ok()) {
    spdlog::critical("loading {}: {}", db_path, snap.status().ToString());
    return 1;
  }
  sched::CoreOptions opts;
  opts.checkpoint_root = std::filesystem::absolute(flags.checkpoint_root).string();
  opts.heartbeat_interval_ms = static_cast<int32_t>(flags.heartbeat_ms);
  opts.default_quota = flags.default_quota;
  opts.nodes.lost_timeout_ms = flags.node_lost_timeout_ms;
  opts.nodes.flap_threshold = flags.flap_threshold;
  opts.nodes.flap_window_ms = flags.flap_window_ms;
  auto core = std::make_unique<sched::Core>(opts);
  spdlog::info("loaded {} jobs, {} nodes and {} project quotas from {}", snap->jobs.size(),
               snap->nodes.size(), snap->quotas.size(), db_path);
  std::vector<sched::Job> jobs;
  jobs.reserve(snap->jobs.size());
  for (const v1::Job& stored : snap->jobs) {
    absl::StatusOr<sched::Job> job = sched::JobFromProto(stored);
    if (!job.ok()) {
      spdlog::critical("loading {}: job {}: {}", db_path, stored.id(), job.status().ToString());
      return 1;
    }
    jobs.push_back(*std::move(job));
  }
  core->Restore(std::move(jobs), std::move(snap->nodes), snap->runs, std::move(snap->quotas));

  server::AgentRegistry registry;
  server::WatchHub hub;
  server::ReconcileLoop loop(std::move(core), std::move(*store), &registry, &hub, WallNowMs);
  server::JobServiceImpl job_service(&loop, &registry, &hub);
  server::AgentServiceImpl agent_service(&loop, &registry);
  server::ClusterServiceImpl cluster_service(&loop);
  server::QuotaServiceImpl quota_service(&loop);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&job_service);
  builder.RegisterService(&agent_service);
  builder.RegisterService(&cluster_service);
  builder.RegisterService(&quota_service);
  // Agents hold their stream for days: keep it alive through idle NATs and notice dead peers.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  loop.Start();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    spdlog::critical("cannot listen on {}: address in use or invalid", flags.listen);
    loop.Stop();
    return 1;
  }
  std::string host = flags.listen.substr(0, flags.listen.rfind(':'));
  std::string addr = absl::StrCat(host, ":", port);
  {
    std::string tmp = flags.data_dir + "/trainctld.addr.tmp";
    std::ofstream(tmp) << addr << "\n";
    std::rename(tmp.c_str(), (flags.data_dir + "/trainctld.addr").c_str());
  }
  spdlog::info("trainctld listening on {} (data dir {})", addr, flags.data_dir);
  // Type=notify units start their dependants only now; a no-op outside systemd.
  sd_notify(0, "READY=1");

  int sig = 0;
  sigwait(&sigs, &sig);
  spdlog::info("received {}; shutting down", strsignal(sig));
  sd_notify(0, "STOPPING=1");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  hub.Clear();
  loop.Stop();
  spdlog::info("stopped");
  return 0;
}
