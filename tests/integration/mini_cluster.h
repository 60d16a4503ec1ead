// An in-machine trainctl cluster for integration tests and benchmarks: a real trainctld and
// real trainctl-agents as separate processes, each with its own work dir and node name, talking
// gRPC over loopback on free ports, plus helpers to run the real `trainctl` CLI.
//
//   MiniCluster c(2);                                  // daemon + node-0, node-1
//   auto r = c.Cli({"submit", "-f", c.WriteFile("job.yaml", spec)});
//   v1::Job job = c.WaitForJob(id, [](auto& j) { return j.state() == ...; });
//
// Every wait polls with a deadline; nothing sleeps "long enough". The destructor stops every
// process it started, by PID.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::testing {

// Where the built binaries are (set by CMake).
std::string BinDir();

// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
bool Eventually(const std::function<bool()>& cond,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

// True while a process with this pid exists (and is not a zombie).
bool PidAlive(pid_t pid);

// The whole file, or "" when it cannot be read.
std::string ReadTextFile(const std::string& path);

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
  // More flags for every agent, e.g. {"--inject-launch-failures", "-1"}.
  std::vector<std::string> extra_args;
};

class MiniCluster {
 public:
  explicit MiniCluster(int agents = 2, AgentOptions opts = {});
  ~MiniCluster();

  const std::string& dir() const { return dir_; }
  const std::string& address() const { return address_; }

  // A spec template with WORKLOAD replaced by the test workload binary and DIR by dir().
  std::string Spec(const std::string& yaml) const;

  // Writes a file under dir() and returns its path.
  std::string WriteFile(const std::string& name, const std::string& content);

  // Runs build/bin/trainctl --server <address> args... with a timeout.
  CliResult Cli(const std::vector<std::string>& args,
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

  // The scheduler daemon.
  void StartDaemon();
  void KillDaemon(int sig);
  Process& daemon() { return *daemon_; }
  Process& agent(int i) { return *agents_[i]; }
  std::string AgentWorkDir(int i) const;

 private:
  void Connect();
  void StartAgent(int i);

  std::string dir_;
  std::string address_;
  AgentOptions opts_;
  int num_agents_;
  std::unique_ptr<Process> daemon_;
  std::vector<std::unique_ptr<Process>> agents_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::ClusterService::Stub> cluster_;
};

}  // namespace trainctl::testing
