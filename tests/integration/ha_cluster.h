// An in-machine trainctl cluster with high availability, for the tests of tests/integration/
// ha_test.cc: several real trainctld sharing one PostgreSQL database (--store), each on fixed
// loopback ports of its own that it keeps across restarts, and real agents given every
// trainctld's address (--scheduler a,b). Which trainctld leads is found by asking: the leader
// answers, standbys answer UNAVAILABLE naming it.
//
//   HaOptions o;
//   o.store = storage::NewPgDatabase();
//   HaCluster c(o);                    // trainctld 0 and 1, node-0 and node-1
//   int leader = c.WaitForLeader();
//   c.daemon(leader).Signal(SIGKILL);
//   int next = c.WaitForLeader(std::chrono::seconds(10), /*not_this=*/leader);
//
// Every wait polls with a deadline. The destructor stops every process it started, by PID, and
// the replicas its agents started.
#pragma once

#include <grpcpp/client_context.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::testing {

struct HaOptions {
  // A PostgreSQL connection URI (storage::NewPgDatabase()); required.
  std::string store;
  int daemons = 2;
  int agents = 2;
  // Every trainctld's --lease-duration.
  std::string lease = "2s";
  // More flags for every trainctld.
  std::vector<std::string> daemon_args;
};

class HaCluster {
 public:
  // Starts every trainctld (in order, each once the one before it serves its ports) and every
  // agent, and waits until the agents are connected to the leader.
  explicit HaCluster(HaOptions options);
  ~HaCluster();

  const std::string& dir() const { return dir_; }
  // A spec template with WORKLOAD and DIR replaced, as MiniCluster::Spec.
  std::string Spec(const std::string& yaml) const;
  // trainctld k's gRPC address, and all of them as --server and --scheduler take them.
  const std::string& address(int k) const { return addresses_[k]; }
  std::string Addresses() const;
  std::string DataDir(int k) const;

  // Starts trainctld k (again) on its ports; waits until it serves them (as leader or standby).
  void StartDaemon(int k);
  Process& daemon(int k) { return *daemons_[k]; }
  // Everything trainctld k has logged over all its starts.
  std::string DaemonLog(int k) const;
  // The trainctld that answers a call (not UNAVAILABLE), polled until `timeout`; -1 when none
  // did. `not_this`: a trainctld that does not count (a leader just stopped).
  int WaitForLeader(std::chrono::milliseconds timeout = std::chrono::seconds(20),
                    int not_this = -1);

  // Runs `trainctl --server <every address> args...`.
  CliResult Cli(const std::vector<std::string>& args,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));
  std::string Submit(const std::string& spec_yaml);

  // GetJob on the leader, polled until `pred` holds; FAILs with the last state seen otherwise.
  v1::Job WaitForJob(const std::string& id, const std::function<bool(const v1::Job&)>& pred,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Waits until the leader counts `n` nodes READY and connected.
  void WaitForConnectedNodes(int n, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Agent i (node-<i>) and its --work-dir.
  Process& agent(int i) { return *agents_[i]; }
  std::string AgentWorkDir(int i) const;

  v1::JobService::Stub& jobs(int k) { return *jobs_[k]; }
  v1::ClusterService::Stub& cluster(int k) { return *cluster_[k]; }

 private:
  void StartAgent(int i);
  // Asks each running trainctld in turn (`ask` makes one call with `ctx`, a 2 s deadline) until
  // one answers (`ask` returns a value, not nullopt: it served the call); that answer, else
  // false.
  bool AskLeader(const std::function<std::optional<bool>(int k, grpc::ClientContext& ctx)>& ask);

  HaOptions options_;
  std::string dir_;
  PortBlock ports_{512};  // trainctld's --port-range
  std::vector<std::string> addresses_;
  std::vector<std::string> http_addresses_;
  std::vector<std::unique_ptr<Process>> daemons_;
  std::vector<std::unique_ptr<Process>> agents_;
  std::vector<std::unique_ptr<v1::JobService::Stub>> jobs_;
  std::vector<std::unique_ptr<v1::ClusterService::Stub>> cluster_;
};

}  // namespace trainctl::testing
