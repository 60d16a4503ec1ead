#include "tests/integration/mini_cluster.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trainctl::testing {
namespace {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path,
            const std::string& err_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err =
        err_path == out_path ? out : open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    // Its own process group, so a test's signals to it never reach the test runner.
    setpgid(0, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

std::string BinDir() {
  // Overridable, so that a benchmark can run the programs of another build.
  const char* env = getenv("TRAINCTL_BIN_DIR");
  return env != nullptr && *env != '\0' ? env : TRAINCTL_BIN_DIR;
}

bool Eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::map<std::string, std::string> ParseEnvLines(const std::string& text) {
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    env[kv.first] = kv.second;
  }
  return env;
}

int64_t ProcessMemoryKb(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return 0;
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t ReadPidFile(const std::string& path) {
  pid_t pid = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadTextFile(path)), &pid) ? pid : 0;
}

pid_t WaitForPidFile(const std::string& path) {
  pid_t pid = 0;
  REQUIRE(Eventually([&] { return (pid = ReadPidFile(path)) > 0; }));
  return pid;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool PidAlive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  // A zombie still answers kill(); it counts as gone.
  std::string stat = ReadTextFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

// --- Process ---------------------------------------------------------------------------------

Process::Process(std::vector<std::string> argv, const std::string& log_path) : log_path_(log_path) {
  pid_ = Spawn(argv, log_path, log_path);
  REQUIRE(pid_ > 0);
}

Process::~Process() {
  if (!reaped_) Stop();
}

bool Process::Running() {
  if (reaped_) return false;
  pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void Process::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

int Process::Wait(std::chrono::milliseconds timeout) {
  if (!Eventually([&] { return !Running(); }, timeout)) return -1;
  return status_;
}

int Process::Stop(std::chrono::milliseconds grace) {
  if (reaped_) return status_;
  Signal(SIGTERM);
  if (Wait(grace) == -1) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(10));
  }
  return status_;
}

// --- MiniCluster -----------------------------------------------------------------------------

namespace {

ClusterOptions WithAgents(int agents, AgentOptions opts) {
  ClusterOptions o;
  o.agents = agents;
  o.agent = std::move(opts);
  return o;
}

}  // namespace

std::string NodeName(int i) { return absl::StrCat("node-", i); }

void FillUp(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  const std::string block(64 << 10, '\0');
  while (write(fd, block.data(), block.size()) > 0) {
  }
  const std::string small(512, '\0');
  while (write(fd, small.data(), small.size()) > 0) {
  }
  close(fd);
}

bool HaveTorch() {
  static const bool have =
      std::system(
          "/usr/bin/python3 -c 'import importlib.util, sys; "
          "sys.exit(importlib.util.find_spec(\"torch\") is None)' >/dev/null 2>&1") == 0;
  if (!have) WARN("skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch)");
  return have;
}

bool CanMountTmpfs() {
  char tmpl[] = "/tmp/trainctl-tmpfs-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) return false;
  const bool mounted = mount("tmpfs", dir, "tmpfs", 0, "size=1m") == 0;
  if (mounted) umount2(dir, MNT_DETACH);
  rmdir(dir);
  return mounted;
}

MiniCluster::MiniCluster(int agents, AgentOptions opts)
    : MiniCluster(WithAgents(agents, std::move(opts))) {}

MiniCluster::MiniCluster(ClusterOptions opts) : opts_(std::move(opts)) {
  char tmpl[] = "/tmp/trainctl-it-XXXXXX";
  dir_ = mkdtemp(tmpl);
  // Replicas that run as other users pass through it to their agent's work dir.
  chmod(dir_.c_str(), 0711);
  agents_.resize(opts_.agents);
  if (opts_.tls) {
    CliResult init = Pki({"init", PkiDir(), "--hosts", "localhost,127.0.0.1"});
    INFO(init.err);
    REQUIRE(init.exit_code == 0);
    for (int i = 0; i < opts_.agents; ++i) {
      CliResult issued = Pki({"issue-agent", PkiDir(), NodeName(i)});
      INFO(issued.err);
      REQUIRE(issued.exit_code == 0);
    }
  }
  if (opts_.data_dir_tmpfs_mb > 0) {
    std::filesystem::create_directories(DataDir());
    const std::string size = absl::StrCat("size=", opts_.data_dir_tmpfs_mb, "m,mode=0755");
    REQUIRE(mount("tmpfs", DataDir().c_str(), "tmpfs", 0, size.c_str()) == 0);
  }
  StartDaemon();
  if (opts_.start_agents) StartAgents();
}

MiniCluster::~MiniCluster() {
  for (auto& a : agents_) {
    if (a) a->Stop();
  }
  // Replicas outlive their agents (each has its trainctl-shim): stop them the way an operator
  // retiring the hosts would.
  for (size_t i = 0; i < agents_.size(); ++i) {
    StopReplicas(static_cast<int>(i));
    if (opts_.agent.tmpfs_state) std::filesystem::remove_all(AgentStateDir(static_cast<int>(i)));
  }
  // Close the test's own connection first: trainctld's shutdown waits for open connections.
  jobs_.reset();
  cluster_.reset();
  if (daemon_) daemon_->Stop();
  if (opts_.data_dir_tmpfs_mb > 0) umount2(DataDir().c_str(), MNT_DETACH);
  if (std::uncaught_exceptions() > 0 || getenv("TRAINCTL_KEEP_TEST_DIRS") != nullptr) {
    // A REQUIRE failed: keep the logs for whoever reads the failure.
    fprintf(stderr, "cluster files kept in %s\n", dir_.c_str());
    return;
  }
  std::filesystem::remove_all(dir_);
}

void MiniCluster::StartDaemon() {
  const std::string data = DataDir();
  // The first start picks a free port; restarts reuse it so agents find the daemon again.
  std::string listen = address_.empty() ? opts_.listen_host + ":0" : address_;
  const std::string http_listen = http_address_.empty() ? "127.0.0.1:0" : http_address_;
  std::filesystem::remove(data + "/trainctld.addr");
  std::vector<std::string> argv = {BinDir() + "/trainctld",
                                   "--data-dir",
                                   data,
                                   "--listen",
                                   listen,
                                   "--http-listen",
                                   http_listen,
                                   "--heartbeat-interval",
                                   "500ms",
                                   "--log-level",
                                   "debug",
                                   "--port-range",
                                   ports_.range()};
  if (opts_.tls) {
    argv.insert(argv.end(), {"--tls-cert", PkiDir() + "/server.crt", "--tls-key",
                             PkiDir() + "/server.key", "--agent-ca", PkiDir() + "/ca.crt"});
  }
  argv.insert(argv.end(), opts_.daemon_args.begin(), opts_.daemon_args.end());
  daemon_ = std::make_unique<Process>(argv, dir_ + "/trainctld.log");
  REQUIRE(Eventually([&] { return std::filesystem::exists(data + "/trainctld.addr"); }));
  address_ = std::string(absl::StripSuffix(ReadTextFile(data + "/trainctld.addr"), "\n"));
  // Written before trainctld.addr.
  http_address_ = std::string(absl::StripSuffix(ReadTextFile(data + "/trainctld.http-addr"), "\n"));
  // The admin token is written before the address file.
  if (opts_.tls) REQUIRE(std::filesystem::exists(AdminTokenPath()));
  Connect();
}

void MiniCluster::KillDaemon(int sig) {
  daemon_->Signal(sig);
  REQUIRE(daemon_->Wait(std::chrono::seconds(20)) != -1);
}

void MiniCluster::Connect() {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (opts_.tls) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = ReadTextFile(PkiDir() + "/ca.crt");
    const std::string token(absl::StripSuffix(ReadTextFile(AdminTokenPath()), "\n"));
    credentials = grpc::CompositeChannelCredentials(grpc::SslCredentials(tls),
                                                    grpc::AccessTokenCredentials(token));
  }
  auto channel = grpc::CreateChannel(address_, credentials);
  jobs_ = v1::JobService::NewStub(channel);
  cluster_ = v1::ClusterService::NewStub(channel);
}

std::string MiniCluster::AgentWorkDir(int i) const { return absl::StrCat(dir_, "/", NodeName(i)); }

std::string MiniCluster::AgentStateDir(int i) const {
  if (!opts_.agent.tmpfs_state) return AgentWorkDir(i);
  // Named after the cluster's own directory, so clusters never share one.
  return absl::StrCat("/dev/shm/", std::filesystem::path(dir_).filename().string(), "-",
                      NodeName(i));
}

std::string MiniCluster::AgentLog(int i) const {
  return ReadTextFile(absl::StrCat(dir_, "/agent-", i, ".log"));
}

void MiniCluster::StartAgent(int i) {
  REQUIRE(i >= 0);
  if (agents_.size() <= static_cast<size_t>(i)) agents_.resize(i + 1);
  REQUIRE((agents_[i] == nullptr || !agents_[i]->Running()));
  const AgentOptions& o = opts_.agent;
  std::vector<std::string> argv = {
      BinDir() + "/trainctl-agent", "--scheduler", address_, "--node", NodeName(i), "--work-dir",
      AgentWorkDir(i), "--address", "127.0.0.1", "--cpus", absl::StrCat(o.cpus), "--memory-mb",
      absl::StrCat(o.memory_mb), "--gpus", absl::StrCat(o.gpus), "--log-level", "debug",
      // Any CI disk passes; checks run only where a test asks.
      "--check-disk-root-gb", "0", "--check-disk-shm-gb", "0", "--check-disk-cache-gb", "0",
      "--health-check-interval", "0"};
  if (o.tmpfs_state) argv.insert(argv.end(), {"--state-dir", AgentStateDir(i)});
  if (o.root_replicas) {
    argv.insert(argv.end(), {"--default-run-as-user", "root", "--allow-root-replicas"});
  }
  if (opts_.tls) {
    const std::string prefix = absl::StrCat(PkiDir(), "/agents/", NodeName(i));
    argv.insert(argv.end(), {"--tls-ca", PkiDir() + "/ca.crt", "--tls-cert", prefix + ".crt",
                             "--tls-key", prefix + ".key"});
  }
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  auto own = opts_.agent_args.find(i);
  if (own != opts_.agent_args.end())
    argv.insert(argv.end(), own->second.begin(), own->second.end());
  auto prefix = opts_.agent_prefix.find(i);
  if (prefix != opts_.agent_prefix.end()) {
    argv.insert(argv.begin(), prefix->second.begin(), prefix->second.end());
  }
  agents_[i] = std::make_unique<Process>(argv, absl::StrCat(dir_, "/agent-", i, ".log"));
}

void MiniCluster::StartAgents() {
  for (size_t i = 0; i < agents_.size(); ++i) {
    if (agents_[i] == nullptr || !agents_[i]->Running()) StartAgent(static_cast<int>(i));
  }
  WaitForConnectedNodes(static_cast<int>(agents_.size()));
}

void MiniCluster::KillAgent(int i, int sig) {
  REQUIRE(agents_.at(i) != nullptr);
  agents_[i]->Signal(sig);
  REQUIRE(agents_[i]->Wait(std::chrono::seconds(20)) != -1);
}

CliResult MiniCluster::StopReplicas(int i, const std::string& grace) {
  return Run({BinDir() + "/trainctl-agent", "--stop-replicas", "--work-dir", AgentWorkDir(i),
              "--state-dir", AgentStateDir(i), "--stop-grace", grace});
}

void MiniCluster::SetAgentArgs(int i, std::vector<std::string> args) {
  opts_.agent_args[i] = std::move(args);
}

void MiniCluster::WaitForConnectedNodes(int n) {
  bool ok = Eventually([&] {
    grpc::ClientContext ctx;
    v1::ListNodesResponse resp;
    if (!cluster_->ListNodes(&ctx, v1::ListNodesRequest(), &resp).ok()) return false;
    int connected = 0;
    for (const v1::Node& node : resp.nodes()) connected += node.connected() ? 1 : 0;
    return connected >= n;
  });
  REQUIRE(ok);
}

std::string MiniCluster::Spec(const std::string& yaml) const {
  return absl::StrReplaceAll(yaml, {{"WORKLOAD", BinDir() + "/workload"}, {"DIR", dir_}});
}

std::string MiniCluster::WriteFile(const std::string& name, const std::string& content) {
  std::string path = dir_ + "/" + name;
  std::ofstream(path) << content;
  return path;
}

CliResult MiniCluster::Cli(const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {BinDir() + "/trainctl", "--server", address_};
  if (opts_.tls) {
    argv.insert(argv.end(), {"--ca", PkiDir() + "/ca.crt", "--token-file", AdminTokenPath()});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, timeout);
}

CliResult MiniCluster::CliAs(const std::string& token, const std::vector<std::string>& args,
                             std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {BinDir() + "/trainctl", "--server", address_, "--token", token};
  if (opts_.tls) argv.insert(argv.end(), {"--ca", PkiDir() + "/ca.crt"});
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, timeout);
}

CliResult MiniCluster::Pki(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinDir() + "/trainctld", "pki"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

CliResult MiniCluster::Run(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout) {
  static int counter = 0;
  std::string out = absl::StrCat(dir_, "/cli-", ++counter, ".out");
  std::string err = absl::StrCat(dir_, "/cli-", counter, ".err");
  pid_t pid = Spawn(argv, out, err);
  int status = 0;
  bool done = Eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout);
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  CliResult r;
  r.exit_code = done && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadTextFile(out);
  r.err = ReadTextFile(err);
  return r;
}

std::string MiniCluster::Submit(const std::string& spec_yaml) {
  static int counter = 0;
  CliResult r =
      Cli({"submit", "-f", WriteFile(absl::StrCat("spec-", ++counter, ".yaml"), spec_yaml)});
  INFO("submit stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  std::string id(absl::StripTrailingAsciiWhitespace(r.out));
  REQUIRE(id.rfind("j-", 0) == 0);
  return id;
}

v1::Job MiniCluster::GetJob(const std::string& id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetJobRequest req;
  req.set_id(id);
  v1::Job job;
  grpc::Status s = jobs_->GetJob(&ctx, req, &job);
  INFO("GetJob: " << s.error_message());
  REQUIRE(s.ok());
  return job;
}

v1::Job MiniCluster::WaitForJob(const std::string& id,
                                const std::function<bool(const v1::Job&)>& pred,
                                std::chrono::milliseconds timeout) {
  v1::Job last;
  bool ok = Eventually(
      [&] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::GetJobRequest req;
        req.set_id(id);
        if (!jobs_->GetJob(&ctx, req, &last).ok()) return false;
        return pred(last);
      },
      timeout);
  INFO("last seen: " << last.DebugString());
  REQUIRE(ok);
  return last;
}

v1::Job MiniCluster::WaitForEnd(const std::string& id, std::chrono::milliseconds timeout) {
  return WaitForJob(
      id,
      [](const v1::Job& j) {
        return j.state() == v1::JOB_STATE_SUCCEEDED || j.state() == v1::JOB_STATE_FAILED ||
               j.state() == v1::JOB_STATE_CANCELLED;
      },
      timeout);
}

v1::Job MiniCluster::WaitForState(const std::string& id, v1::JobState state,
                                  std::chrono::milliseconds timeout) {
  return WaitForJob(
      id, [state](const v1::Job& j) { return j.state() == state; }, timeout);
}

// --- Nodes and events -------------------------------------------------------------------------

v1::Node MiniCluster::GetNode(const std::string& name) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetNodeRequest req;
  req.set_name(name);
  v1::Node node;
  grpc::Status s = cluster_->GetNode(&ctx, req, &node);
  INFO("GetNode " << name << ": " << s.error_message());
  REQUIRE(s.ok());
  return node;
}

v1::Node MiniCluster::WaitForNode(const std::string& name,
                                  const std::function<bool(const v1::Node&)>& pred,
                                  std::chrono::milliseconds timeout) {
  v1::Node last;
  bool ok = Eventually(
      [&] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::GetNodeRequest req;
        req.set_name(name);
        if (!cluster_->GetNode(&ctx, req, &last).ok()) return false;
        return pred(last);
      },
      timeout);
  INFO("last seen: " << last.DebugString());
  REQUIRE(ok);
  return last;
}

v1::Node MiniCluster::WaitForNodeState(const std::string& name, v1::NodeState state,
                                       std::chrono::milliseconds timeout) {
  return WaitForNode(
      name, [state](const v1::Node& n) { return n.state() == state; }, timeout);
}

v1::Node MiniCluster::CordonNode(const std::string& name, const std::string& reason) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::CordonNodeRequest req;
  req.set_name(name);
  req.set_reason(reason);
  v1::Node node;
  grpc::Status s = cluster_->CordonNode(&ctx, req, &node);
  INFO("CordonNode " << name << ": " << s.error_message());
  REQUIRE(s.ok());
  return node;
}

v1::Node MiniCluster::UncordonNode(const std::string& name) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::UncordonNodeRequest req;
  req.set_name(name);
  v1::Node node;
  grpc::Status s = cluster_->UncordonNode(&ctx, req, &node);
  INFO("UncordonNode " << name << ": " << s.error_message());
  REQUIRE(s.ok());
  return node;
}

std::vector<v1::Event> MiniCluster::ListEvents(const std::string& job_id, const std::string& node,
                                               const std::string& type) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListEventsRequest req;
  req.set_job_id(job_id);
  req.set_node(node);
  req.set_type(type);
  req.set_limit(10000);
  v1::ListEventsResponse resp;
  grpc::Status s = cluster_->ListEvents(&ctx, req, &resp);
  INFO("ListEvents: " << s.error_message());
  REQUIRE(s.ok());
  return {resp.events().begin(), resp.events().end()};
}

}  // namespace trainctl::testing
