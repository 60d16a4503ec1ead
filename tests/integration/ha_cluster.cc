#include "tests/integration/ha_cluster.h"

#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/leader_hint.h"

namespace trainctl::testing {
namespace {

// A loopback port free now (the kernel's pick, released again): trainctld k keeps it across
// restarts, which port 0 would not.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  close(fd);
  return ntohs(addr.sin_port);
}

struct Probe {
  grpc::Status status;
  std::optional<v1::LeaderInfo> hint;
};

// One ListJobs call on a new channel, as a new client would make it (a channel that found the
// port closed, a standby handing it over, would back off for a second or more).
Probe ProbeDaemon(const std::string& address) {
  auto stub =
      v1::JobService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  v1::ListJobsRequest req;
  req.set_page_size(1);
  v1::ListJobsResponse resp;
  Probe p;
  p.status = stub->ListJobs(&ctx, req, &resp);
  p.hint = LeaderHint(p.status, &ctx);
  return p;
}

}  // namespace

HaCluster::HaCluster(HaOptions options) : options_(std::move(options)) {
  REQUIRE(!options_.store.empty());
  char tmpl[] = "/tmp/trainctl-ha-XXXXXX";
  dir_ = mkdtemp(tmpl);
  for (int k = 0; k < options_.daemons; ++k) {
    addresses_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
    http_addresses_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
    auto channel = grpc::CreateChannel(addresses_[k], grpc::InsecureChannelCredentials());
    jobs_.push_back(v1::JobService::NewStub(channel));
    cluster_.push_back(v1::ClusterService::NewStub(channel));
  }
  daemons_.resize(options_.daemons);
  for (int k = 0; k < options_.daemons; ++k) StartDaemon(k);
  agents_.resize(options_.agents);
  for (int i = 0; i < options_.agents; ++i) StartAgent(i);
  if (options_.agents > 0) WaitForConnectedNodes(options_.agents);
}

HaCluster::~HaCluster() {
  for (auto& a : agents_) {
    if (a) a->Stop();
  }
  for (int i = 0; i < options_.agents; ++i) {
    Process stop({BinDir() + "/trainctl-agent", "--stop-replicas", "--work-dir",
                  absl::StrCat(dir_, "/", NodeName(i)), "--stop-grace", "0"},
                 dir_ + "/stop-replicas.log");
    stop.Wait(std::chrono::seconds(30));
  }
  jobs_.clear();
  cluster_.clear();
  for (auto& d : daemons_) {
    if (d) {
      d->Signal(SIGCONT);
      d->Stop();
    }
  }
  if (std::uncaught_exceptions() > 0 || getenv("TRAINCTL_KEEP_TEST_DIRS") != nullptr) {
    fprintf(stderr, "cluster files kept in %s\n", dir_.c_str());
    return;
  }
  std::filesystem::remove_all(dir_);
}

std::string HaCluster::Spec(const std::string& yaml) const {
  return absl::StrReplaceAll(yaml, {{"WORKLOAD", BinDir() + "/workload"}, {"DIR", dir_}});
}

std::string HaCluster::Addresses() const { return absl::StrJoin(addresses_, ","); }

std::string HaCluster::DataDir(int k) const { return absl::StrCat(dir_, "/scheduler-", k); }

std::string HaCluster::DaemonLog(int k) const {
  return ReadTextFile(absl::StrCat(dir_, "/trainctld-", k, ".log"));
}

void HaCluster::StartDaemon(int k) {
  REQUIRE((daemons_[k] == nullptr || !daemons_[k]->Running()));
  const std::string data = DataDir(k);
  std::filesystem::create_directories(data);
  std::vector<std::string> argv = {BinDir() + "/trainctld",
                                   "--data-dir",
                                   data,
                                   "--store",
                                   options_.store,
                                   "--listen",
                                   addresses_[k],
                                   "--http-listen",
                                   http_addresses_[k],
                                   "--lease-duration",
                                   options_.lease,
                                   "--heartbeat-interval",
                                   "500ms",
                                   "--log-level",
                                   "debug",
                                   "--port-range",
                                   ports_.range()};
  argv.insert(argv.end(), options_.daemon_args.begin(), options_.daemon_args.end());
  daemons_[k] = std::make_unique<Process>(argv, absl::StrCat(dir_, "/trainctld-", k, ".log"));
  // Up once it answers: as the leader, or as a standby naming one (a standby writes no address
  // file).
  INFO(DaemonLog(k));
  REQUIRE(Eventually([&] {
    const Probe p = ProbeDaemon(addresses_[k]);
    return p.status.ok() || p.hint.has_value();
  }));
}

int HaCluster::WaitForLeader(std::chrono::milliseconds timeout, int not_this) {
  int leader = -1;
  Eventually(
      [&] {
        for (int k = 0; k < options_.daemons; ++k) {
          if (k == not_this || daemons_[k] == nullptr || !daemons_[k]->Running()) continue;
          if (ProbeDaemon(addresses_[k]).status.ok()) {
            leader = k;
            return true;
          }
        }
        return false;
      },
      timeout);
  return leader;
}

CliResult HaCluster::Cli(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  static int counter = 0;
  const std::string log = absl::StrCat(dir_, "/cli-", ++counter, ".log");
  std::vector<std::string> argv = {BinDir() + "/trainctl", "--server", Addresses()};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, log);
  const int status = p.Wait(timeout);
  CliResult r;
  if (status == -1) p.Stop(std::chrono::seconds(1));
  r.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadTextFile(log);
  return r;
}

std::string HaCluster::Submit(const std::string& spec_yaml) {
  static int counter = 0;
  const std::string path = absl::StrCat(dir_, "/spec-", ++counter, ".yaml");
  std::ofstream(path) << spec_yaml;
  CliResult r = Cli({"submit", "-f", path});
  INFO("submit: " << r.out);
  REQUIRE(r.exit_code == 0);
  // The id is the last line (stderr may hold notes before it).
  std::vector<std::string> lines = absl::StrSplit(absl::StripTrailingAsciiWhitespace(r.out), '\n');
  const std::string id = lines.back();
  REQUIRE(id.rfind("j-", 0) == 0);
  return id;
}

v1::Job HaCluster::WaitForJob(const std::string& id,
                              const std::function<bool(const v1::Job&)>& pred,
                              std::chrono::milliseconds timeout) {
  v1::Job last;
  std::string error;
  const bool ok = Eventually(
      [&] {
        return AskLeader([&](int k, grpc::ClientContext& ctx) -> std::optional<bool> {
          v1::GetJobRequest req;
          req.set_id(id);
          v1::Job job;
          const grpc::Status s = jobs_[k]->GetJob(&ctx, req, &job);
          if (!s.ok()) {
            error = s.error_message();
            return std::nullopt;
          }
          last = job;
          return pred(job);
        });
      },
      timeout);
  if (!ok) FAIL("job " << id << " never got there; last seen: " << last.DebugString() << error);
  return last;
}

bool HaCluster::AskLeader(
    const std::function<std::optional<bool>(int k, grpc::ClientContext& ctx)>& ask) {
  for (int k = 0; k < options_.daemons; ++k) {
    if (daemons_[k] == nullptr || !daemons_[k]->Running()) continue;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (std::optional<bool> answer = ask(k, ctx)) return *answer;
  }
  return false;
}

void HaCluster::WaitForConnectedNodes(int n, std::chrono::milliseconds timeout) {
  const bool ok = Eventually(
      [&] {
        return AskLeader([&](int k, grpc::ClientContext& ctx) -> std::optional<bool> {
          v1::ListNodesResponse resp;
          if (!cluster_[k]->ListNodes(&ctx, v1::ListNodesRequest(), &resp).ok()) {
            return std::nullopt;
          }
          int connected = 0;
          for (const v1::Node& node : resp.nodes()) connected += node.connected() ? 1 : 0;
          return connected >= n;
        });
      },
      timeout);
  REQUIRE(ok);
}

std::string HaCluster::AgentWorkDir(int i) const { return absl::StrCat(dir_, "/", NodeName(i)); }

void HaCluster::StartAgent(int i) {
  const std::string work = AgentWorkDir(i);
  std::vector<std::string> argv = {BinDir() + "/trainctl-agent",
                                   "--scheduler",
                                   Addresses(),
                                   "--node",
                                   NodeName(i),
                                   "--work-dir",
                                   work,
                                   "--address",
                                   "127.0.0.1",
                                   "--cpus",
                                   "4",
                                   "--memory-mb",
                                   "4096",
                                   "--log-level",
                                   "debug",
                                   "--check-disk-root-gb",
                                   "0",
                                   "--check-disk-shm-gb",
                                   "0",
                                   "--check-disk-cache-gb",
                                   "0",
                                   "--health-check-interval",
                                   "0",
                                   "--default-run-as-user",
                                   "root",
                                   "--allow-root-replicas"};
  agents_[i] = std::make_unique<Process>(argv, absl::StrCat(dir_, "/agent-", i, ".log"));
}

}  // namespace trainctl::testing
