// An in-machine trainctl cluster for integration tests and benchmarks: a real trainctld and
// real trainctl-agents as separate processes, each with its own work dir and node name, talking
// gRPC over loopback on free ports, plus helpers to run the real `trainctl` CLI.
//
//   MiniCluster c(2);                                  // daemon + node-0, node-1
//   auto r = c.Cli({"submit", "-f", c.WriteFile("job.yaml", spec)});
//   v1::Job job = c.WaitForJob(id, [](auto& j) { return j.state() == ...; });
//
//   ClusterOptions o;                                  // per-agent and daemon flags
//   o.agents = 3;
//   o.agent_args[0] = {"--check-disk-root-gb", "1e9"};
//   o.daemon_args = {"--node-lost-timeout", "2s"};
//   MiniCluster c(o);
//   c.WaitForNode("node-0", [](auto& n) { return n.state() == v1::NODE_STATE_ISOLATED; });
//
// Every agent gets host check thresholds of 0 GB and --health-check-interval 0 unless its flags
// say otherwise, so the checks pass on any CI disk and only run where a test asks for them.
// Every wait polls with a deadline; nothing sleeps "long enough". The destructor stops every
// process it started, by PID.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/port_block.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::testing {

// Where the built binaries are: $TRAINCTL_BIN_DIR when set, else the build tree (set by CMake).
std::string BinDir();

// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
bool Eventually(const std::function<bool()>& cond,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

// True while a process with this pid exists (and is not a zombie).
bool PidAlive(pid_t pid);

// The whole file, or "" when it cannot be read.
std::string ReadTextFile(const std::string& path);

// The pid a pidfile at `path` holds; 0 when it holds none (yet).
pid_t ReadPidFile(const std::string& path);
// Polls until the pidfile at `path` holds a pid (REQUIREd within the default deadline).
pid_t WaitForPidFile(const std::string& path);

// Whether `haystack` contains `needle`.
bool Contains(const std::string& haystack, const std::string& needle);

// A memory figure of process `pid` from /proc/PID/status, in KiB: `field` is "VmRSS" (resident
// now) or "VmHWM" (peak resident). 0 when it cannot be read.
int64_t ProcessMemoryKb(pid_t pid, const std::string& field);

// NAME=VALUE lines (as `workload --env` prints them) as a map.
std::map<std::string, std::string> ParseEnvLines(const std::string& text);

// A child process with stdout+stderr to a log file.
class Process {
 public:
  Process(std::vector<std::string> argv, const std::string& log_path);
  ~Process();
  pid_t pid() const { return pid_; }
  bool Running();
  void Signal(int sig);
  // Sends SIGTERM, waits up to `grace`, then SIGKILL. Returns the wait status.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(15));
  // Waits for exit up to `timeout`; returns the wait status, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_path_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

struct AgentOptions {
  double cpus = 4;
  int64_t memory_mb = 4096;
  int gpus = 0;
  // Replicas run as root (--default-run-as-user root --allow-root-replicas), as they did before
  // agents switched users: the tests' scripts write under dir(). False: the agent's own defaults
  // (replicas run as nobody).
  bool root_replicas = true;
  // Each agent's --state-dir (run directories, report journal) on a tmpfs (/dev/shm), as the
  // systemd unit puts it in /run; false: in its work dir.
  bool tmpfs_state = false;
  // More flags for every agent, e.g. {"--inject-launch-failures", "-1"}. They come after the
  // fixture's defaults, so a flag given here wins.
  std::vector<std::string> extra_args;
};

struct ClusterOptions {
  // Agents node-0 .. node-(agents-1).
  int agents = 2;
  // Resources and flags of every agent.
  AgentOptions agent;
  // More flags for agent i alone; they come last, so they win over every other flag.
  std::map<int, std::vector<std::string>> agent_args;
  // A command agent i runs under, its binary and flags following: e.g. {"ip", "netns", "exec",
  // NAME} (netns_link.h). It must exec the agent, so that the PID the fixture signals is the
  // agent's.
  std::map<int, std::vector<std::string>> agent_prefix;
  // More trainctld flags, after the fixture's own (so "--heartbeat-interval" here wins). Not
  // --listen: a restart must find the port of the first start, which listen_host keeps.
  std::vector<std::string> daemon_args;
  // The address trainctld listens on, on a port it picks at its first start and keeps across
  // restarts (agents keep dialing that port): e.g. a network namespace's host end.
  std::string listen_host = "127.0.0.1";
  // True: a PKI made by `trainctld pki init` under dir()/pki with a certificate for every agent
  // (`pki issue-agent`); trainctld serves TLS and authenticates agents and users, every agent and
  // the CLI talk TLS, and the test's own channel too; the CLI and the channel use the admin
  // token trainctld writes at its first start.
  bool tls = false;
  // False: the constructor starts only the daemon, and the test calls StartAgents() (e.g. once
  // it has written a script under dir() that an agent flag names).
  bool start_agents = true;
  // Over 0: trainctld's data dir is a tmpfs of this many MiB (mounted before the daemon starts,
  // unmounted by the destructor), which a test can fill up. Needs root: see CanMountTmpfs().
  int data_dir_tmpfs_mb = 0;
  // How many ports trainctld's --port-range holds (PortBlock rounds up to 128s).
  int port_range_size = 512;
};

// Whether this process may mount a tmpfs (root, or CAP_SYS_ADMIN), as data_dir_tmpfs_mb needs.
bool CanMountTmpfs();

// Whether /usr/bin/python3 can import torch (Debian's python3-torch), for tests of real PyTorch
// jobs; WARNs when it cannot, and such a test passes with the warning. Looks the module up
// without importing it, which would take a second and a half.
bool HaveTorch();

// Writes zeros to the file `path` until its file system is full (a full data dir).
void FillUp(const std::string& path);

// "node-<i>": the name of the fixture's i-th agent.
std::string NodeName(int i);

class MiniCluster {
 public:
  explicit MiniCluster(int agents = 2, AgentOptions opts = {});
  explicit MiniCluster(ClusterOptions opts);
  ~MiniCluster();

  const std::string& dir() const { return dir_; }
  // trainctld's --port-range.
  const PortBlock& ports() const { return ports_; }
  // trainctld's --data-dir.
  std::string DataDir() const { return dir_ + "/scheduler"; }
  const std::string& address() const { return address_; }
  // The REST API's HOST:PORT (DATA_DIR/trainctld.http-addr).
  const std::string& http_address() const { return http_address_; }

  // A spec template with WORKLOAD replaced by the test workload binary and DIR by dir().
  std::string Spec(const std::string& yaml) const;

  // Writes a file under dir() and returns its path.
  std::string WriteFile(const std::string& name, const std::string& content);

  // Runs build/bin/trainctl --server <address> args... with a timeout.
  CliResult Cli(const std::vector<std::string>& args,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // Cli with `--token TOKEN` instead of the fixture's admin token (with ClusterOptions::tls).
  CliResult CliAs(const std::string& token, const std::vector<std::string>& args,
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // The admin token trainctld wrote at its first start with TLS (DATA_DIR/admin.token); the
  // fixture's CLI and own channel use it.
  std::string AdminTokenPath() const { return dir_ + "/scheduler/admin.token"; }

  // Runs `trainctld pki ARGS...` with a timeout.
  CliResult Pki(const std::vector<std::string>& args);
  // Where the PKI of ClusterOptions::tls lives.
  std::string PkiDir() const { return dir_ + "/pki"; }
  // Runs any program with a timeout; its output goes to files under dir().
  CliResult Run(const std::vector<std::string>& argv,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // Submits through the CLI; REQUIREs success and returns the job id.
  std::string Submit(const std::string& spec_yaml);

  v1::JobService::Stub& jobs() { return *jobs_; }
  v1::ClusterService::Stub& cluster() { return *cluster_; }

  v1::Job GetJob(const std::string& id);
  // Polls GetJob until `pred` holds; FAILs the test with the last state seen otherwise.
  v1::Job WaitForJob(const std::string& id, const std::function<bool(const v1::Job&)>& pred,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
  v1::Job WaitForState(const std::string& id, v1::JobState state,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Waits until the job is in any terminal state.
  v1::Job WaitForEnd(const std::string& id,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60));
  void WaitForConnectedNodes(int n);

  // ClusterService.GetNode; REQUIREs success.
  v1::Node GetNode(const std::string& name);
  // Polls GetNode until `pred` holds; FAILs the test with the last node seen otherwise.
  v1::Node WaitForNode(const std::string& name, const std::function<bool(const v1::Node&)>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));
  v1::Node WaitForNodeState(const std::string& name, v1::NodeState state,
                            std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // ClusterService.CordonNode and UncordonNode; REQUIRE success.
  v1::Node CordonNode(const std::string& name, const std::string& reason = "test");
  v1::Node UncordonNode(const std::string& name);
  // ClusterService.ListEvents with these filters ("" matches all), oldest first.
  std::vector<v1::Event> ListEvents(const std::string& job_id, const std::string& node,
                                    const std::string& type);

  // The scheduler daemon.
  void StartDaemon();
  void KillDaemon(int sig);
  Process& daemon() { return *daemon_; }
  Process& agent(int i) { return *agents_[i]; }
  std::string AgentWorkDir(int i) const;
  // Agent i's --state-dir: its work dir unless AgentOptions::tmpfs_state.
  std::string AgentStateDir(int i) const;
  // Everything agent i has logged, over all its starts.
  std::string AgentLog(int i) const;

  // Starts agent i as node-<i> with the same work dir and flags as before (e.g. after
  // KillAgent); it does not wait for it to connect.
  void StartAgent(int i);
  // Starts every agent that is not running and waits until all of them are connected.
  void StartAgents();
  // Sends `sig` to agent i and REQUIREs that it exits.
  void KillAgent(int i, int sig);
  // Runs `trainctl-agent --stop-replicas` on agent i's work dir: stops every replica started
  // there, whether or not the agent runs (the destructor does it for every agent).
  CliResult StopReplicas(int i, const std::string& grace = "0");
  // Replaces agent i's own flags (ClusterOptions::agent_args) for its next start.
  void SetAgentArgs(int i, std::vector<std::string> args);

 private:
  void Connect();

  std::string dir_;
  std::string address_;
  std::string http_address_;
  ClusterOptions opts_;
  // trainctld's --port-range, taken once per cluster and kept across restarts.
  PortBlock ports_{opts_.port_range_size};
  std::unique_ptr<Process> daemon_;
  std::vector<std::unique_ptr<Process>> agents_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::ClusterService::Stub> cluster_;
};

}  // namespace trainctl::testing
