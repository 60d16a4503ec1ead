// Operating trainctl: config files and SIGHUP, systemd's notifications and watchdog, a stop
// within a second, the agent protocol's version check, and the CLI's config file. Real
// trainctld and trainctl-agent processes; systemd is played by a datagram socket the test reads
// (NOTIFY_SOCKET), as sd_notify(3) describes.
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/agent_protocol.h"
#include "tests/integration/fake_agent.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// systemd's end of sd_notify: a datagram socket whose messages carry their sender's pid.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(addr.sun_path));
    path.copy(addr.sun_path, path.size());
    unlink(path.c_str());
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    int on = 1;
    REQUIRE(setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == 0);
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }

  // Reads messages until one from `pid` contains `text` (counting `count` of them), or
  // `timeout` passes.
  bool WaitFor(pid_t pid, const std::string& text, int count = 1,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int seen = 0;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char data[1024];
      char control[CMSG_SPACE(sizeof(ucred))];
      iovec iov{data, sizeof(data) - 1};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      const ssize_t n = recvmsg(fd_, &msg, 0);
      if (n <= 0) continue;
      pid_t sender = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
          ucred cred;
          memcpy(&cred, CMSG_DATA(c), sizeof(cred));
          sender = cred.pid;
        }
      }
      const std::string message(data, static_cast<size_t>(n));
      messages_.push_back(message);
      if (sender == pid && message.find(text) != std::string::npos && ++seen >= count) {
        return true;
      }
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> messages_;
};

// Sets an environment variable for the processes started while it lives.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

// A directory of the test's own for files that must exist before the cluster starts.
std::string MakeTempDir() {
  char dir[] = "/tmp/trainctl-ops.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return dir;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

const char kTrueJob[] = R"(
displayName: ops
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/true]
  resources: {cpu: 0.1}
)";

TEST_CASE("SIGHUP re-reads trainctld's config file: the default quota applies at once",
          "[integration][operations]") {
  const std::string dir = MakeTempDir();
  const std::string config = dir + "/trainctld.yaml";
  WriteText(config, "default-quota-max-running-jobs: 0\n");
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--config", config};
  MiniCluster c(o);
  const std::string id = c.Submit(kTrueJob);
  // No project may run a job: it waits.
  c.WaitForJob(id, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_QUEUED && j.queue_status().blockers_size() > 0;
  });

  // A file that no longer parses changes nothing.
  WriteText(config, "flap-window: soon\n");
  c.daemon().Signal(SIGHUP);
  REQUIRE(Eventually([&] {
    return Contains(ReadTextFile(c.daemon().log_path()),
                    config + ":1: flap-window: --flap-window must be a duration");
  }));
  CHECK(Contains(ReadTextFile(c.daemon().log_path()), "the running configuration stays"));
  CHECK(c.GetJob(id).state() == v1::JOB_STATE_QUEUED);

  WriteText(config, "default-quota-max-running-jobs: 5\nflap-threshold: 7\n");
  c.daemon().Signal(SIGHUP);
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  const std::vector<v1::Event> changed = c.ListEvents("", "", "DefaultQuotaChanged");
  REQUIRE(changed.size() == 1);
  CHECK(Contains(changed[0].reason(), "max_running_jobs: 5"));
  const std::string log = ReadTextFile(c.daemon().log_path());
  CHECK(Contains(log, "SIGHUP: default-quota-max-running-jobs: 0 -> 5: applied"));
  CHECK(Contains(log, absl::StrCat("SIGHUP: flap-threshold: 3 -> 7 in ", config,
                                   ": needs a restart of trainctld")));
  // The daemon goes on serving.
  CHECK(c.Cli({"list"}).exit_code == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("trainctld tells systemd it is ready, pings the watchdog and stops within a second",
          "[integration][operations]") {
  const std::string dir = MakeTempDir();
  NotifySocket notify(dir + "/notify");
  ClusterOptions o;
  o.agents = 2;
  o.start_agents = false;
  std::unique_ptr<MiniCluster> c;
  {
    ScopedEnv socket("NOTIFY_SOCKET", dir + "/notify");
    ScopedEnv watchdog("WATCHDOG_USEC", "2000000");
    c = std::make_unique<MiniCluster>(o);
  }
  const pid_t pid = c->daemon().pid();
  REQUIRE(notify.WaitFor(pid, "READY=1"));
  // WatchdogSec=2s: a ping every 0.5 s from the reconcile loop.
  REQUIRE(notify.WaitFor(pid, "WATCHDOG=1", 3));

  // Agents connected, a replica running and a client watching it: none of them holds the stop.
  c->StartAgents();
  const std::string id = c->Submit(R"(
displayName: watched
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sleep, "60"]
  resources: {cpu: 0.1}
)");
  c->WaitForState(id, v1::JOB_STATE_RUNNING);
  grpc::ClientContext watch_context;
  v1::WatchJobRequest watch_request;
  watch_request.set_id(id);
  std::unique_ptr<grpc::ClientReader<v1::Job>> watch =
      c->jobs().WatchJob(&watch_context, watch_request);
  v1::Job seen;
  REQUIRE(watch->Read(&seen));

  const auto start = std::chrono::steady_clock::now();
  c->daemon().Signal(SIGTERM);
  REQUIRE(notify.WaitFor(pid, "STOPPING=1", 1, std::chrono::seconds(5)));
  const int status = c->daemon().Wait(std::chrono::seconds(5));
  const double stop_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  INFO("trainctld stopped in " << stop_ms << " ms");
  CHECK(stop_ms < 1000);
  watch_context.TryCancel();
  c.reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("the agent pings its watchdog while the scheduler is out of reach",
          "[integration][operations]") {
  const std::string dir = MakeTempDir();
  NotifySocket notify(dir + "/notify");
  std::unique_ptr<Process> agent;
  {
    ScopedEnv socket("NOTIFY_SOCKET", dir + "/notify");
    ScopedEnv watchdog("WATCHDOG_USEC", "1000000");
    // Nothing listens on port 1.
    agent = std::make_unique<Process>(
        std::vector<std::string>{BinDir() + "/trainctl-agent", "--scheduler", "127.0.0.1:1",
                                 "--node", "lonely", "--work-dir", dir + "/work", "--gpus", "0",
                                 "--cpus", "1", "--memory-mb", "512"},
        dir + "/agent.log");
  }
  REQUIRE(notify.WaitFor(agent->pid(), "READY=1"));
  REQUIRE(notify.WaitFor(agent->pid(), "WATCHDOG=1", 3));
  CHECK(Contains(ReadTextFile(dir + "/agent.log"), "cannot reach the scheduler"));
  agent->Signal(SIGTERM);
  REQUIRE(notify.WaitFor(agent->pid(), "STOPPING=1"));
  CHECK(agent->Wait(std::chrono::seconds(10)) == 0);
  agent.reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("SIGHUP re-reads the agent's config file: check thresholds apply at once",
          "[integration][operations]") {
  ClusterOptions o;
  o.agents = 0;
  MiniCluster c(o);
  const std::string config = c.WriteFile("agent.yaml",
                                         "check-disk-root-gb: 0\n"
                                         "check-disk-shm-gb: 0\n"
                                         "check-disk-cache-gb: 0\n"
                                         "health-check-interval: 500ms\n");
  Process agent({BinDir() + "/trainctl-agent", "--config", config, "--scheduler", c.address(),
                 "--node", "reloaded", "--work-dir", c.dir() + "/reloaded", "--gpus", "0", "--cpus",
                 "1", "--memory-mb", "512"},
                c.dir() + "/reloaded.log");
  c.WaitForNodeState("reloaded", v1::NODE_STATE_READY);
  // The root file system must now have more free space than any disk has.
  c.WriteFile("agent.yaml",
              "check-disk-root-gb: 1e9\n"
              "check-disk-shm-gb: 0\n"
              "check-disk-cache-gb: 0\n"
              "health-check-interval: 1s\n");
  agent.Signal(SIGHUP);
  c.WaitForNodeState("reloaded", v1::NODE_STATE_ISOLATED);
  const std::string log = ReadTextFile(c.dir() + "/reloaded.log");
  CHECK(Contains(log, "SIGHUP: check-disk-root-gb: 0 -> 1e+09: applied"));
  CHECK(Contains(log, "SIGHUP: health-check-interval: 500ms -> 1s in " + config +
                          ": needs a restart of trainctl-agent"));
}

TEST_CASE("an agent of an unknown protocol version is refused, naming both versions",
          "[integration][operations]") {
  ClusterOptions o;
  o.agents = 0;
  MiniCluster c(o);
  {
    FakeAgent future(c.address());
    v1::Register reg = RogueRegistration("future");
    reg.set_protocol_version(kAgentProtocolVersion + 1);
    const grpc::Status refused = future.Register(reg);
    CHECK(refused.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(
        Contains(refused.error_message(),
                 absl::StrCat("the agent speaks agent protocol version ", kAgentProtocolVersion + 1,
                              " and this trainctld speaks version ", kAgentProtocolVersion)));
    CHECK(Contains(refused.error_message(), "upgrade trainctld first"));
  }
  // The refusal's event is committed after the stream ended.
  std::vector<v1::Event> events;
  REQUIRE(Eventually([&] {
    events = c.ListEvents("", "future", "AgentRefused");
    return events.size() == 1;
  }));
  CHECK(Contains(events[0].reason(), "agent protocol version"));
  CHECK(Contains(ReadTextFile(c.daemon().log_path()), "claiming node future refused"));
  // Agents of the previous version (which sent no version) and of this one are served.
  for (int32_t version : {0, kOldestAgentProtocolVersion, kAgentProtocolVersion}) {
    INFO(version);
    FakeAgent agent(c.address());
    v1::Register reg = RogueRegistration(absl::StrCat("v", version));
    reg.set_protocol_version(version);
    CHECK(agent.Register(reg).ok());
  }
}

TEST_CASE("trainctl takes its server from a flag, then TRAINCTL_SERVER, then its config file",
          "[integration][operations]") {
  ClusterOptions o;
  o.agents = 0;
  MiniCluster c(o);
  const std::string cli = BinDir() + "/trainctl";
  const std::string good = c.WriteFile("good.yaml", "server: " + c.address() + "\n");
  {
    ScopedEnv config("TRAINCTL_CONFIG", good);
    CHECK(c.Run({cli, "list"}).exit_code == 0);
  }
  const std::string bad_server = c.WriteFile("bad-server.yaml", "server: 127.0.0.1:1\n");
  {
    ScopedEnv config("TRAINCTL_CONFIG", bad_server);
    ScopedEnv server("TRAINCTL_SERVER", c.address());
    CHECK(c.Run({cli, "list"}).exit_code == 0);
  }
  {
    ScopedEnv config("TRAINCTL_CONFIG", bad_server);
    ScopedEnv server("TRAINCTL_SERVER", "127.0.0.1:1");
    CHECK(c.Run({cli, "--server", c.address(), "list"}).exit_code == 0);
  }
  const std::string typo = c.WriteFile("typo.yaml", "server: x:1\nsevrer: y:2\n");
  {
    ScopedEnv config("TRAINCTL_CONFIG", typo);
    CliResult r = c.Run({cli, "list"});
    CHECK(r.exit_code != 0);
    CHECK(Contains(r.err, typo + ":2: sevrer: unknown key (did you mean server?)"));
  }
  {
    ScopedEnv config("TRAINCTL_CONFIG", c.dir() + "/missing.yaml");
    CliResult r = c.Run({cli, "list"});
    CHECK(r.exit_code != 0);
    CHECK(Contains(r.err, "cannot read config file " + c.dir() + "/missing.yaml"));
  }
}

}  // namespace
}  // namespace trainctl::testing
