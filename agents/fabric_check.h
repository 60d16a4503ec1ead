// The agent's parts of the fabric check before a multi-node gang starts (CheckFabric,
// docs/operators/gang-health.md): the listener other agents probe, the probe of one peer's
// listener, and the run of the operator's --gang-check-program. The Agent drives them
// (agent_fabric.cc); the scheduler judges the results and blames a node.
//
// The listener (FabricListener) serves TCP on --gang-check-port (0: a free port picked at start,
// sent to the scheduler as Register.fabric_port) on the wildcard address, IPv6 and IPv4 where
// the host has IPv6, else IPv4. Each connection is served on a short-lived thread of its own, at
// most kFabricMaxConnections at once (more are closed at once); a read that waits
// kFabricIdleTimeout, or a connection older than kFabricConnectionLimit, ends it, so a stuck or
// endless client never holds a thread.
//
// The protocol, one probe per connection:
//   1. The client sends the line kFabricMagic ("trainctl-fabric 1\n"); a server that reads
//      anything else closes the connection.
//   2. kFabricPings times: the client sends 8 bytes, the server sends them back. latency_ms is
//      the median of the round trips.
//   3. The client sends data in chunks until kFabricBulkBytes (64 MiB) or kFabricBulkTime
//      (250 ms) have gone, whichever comes first, then shuts its side down (SHUT_WR). The server
//      counts the bytes up to the EOF and answers the count, 8 bytes big-endian, then closes.
//      gbps is that count over the time from the first byte sent to the count's arrival.
//
//   FabricListener listener;
//   TC_RETURN_IF_ERROR(listener.Start(0));                 // listener.port(): 41234
//   v1::FabricProbe p = ProbeFabric("10.0.0.2:41234", absl::Now() + absl::Seconds(30), 1.0);
//   // p.ok(), p.latency_ms(), p.gbps(), or p.detail(): "connect to 10.0.0.2:41234: Connection
//   // refused", "no answer within 5s", "0.3 Gbit/s, below --gang-check-min-tcp-gbps 1"
//
// The program (RunFabricProgram) is a shell command line run with /bin/sh -c through RunTool
// (tool_run.h) in a process group of its own, with the agent's environment plus the check's
// variables (TRAINCTL_CHECK_RANK, MASTER_ADDR, ...); the whole group is killed at the check's
// deadline. It passes when it exits 0 and, with a minimum set, reports enough bandwidth: the last
// line of its stdout that is a JSON object with a numeric "gbps" member ({"gbps": 93.1}) says how
// much. Only the first 16 MiB of its stdout are read for that line.
//
// Thread-safety: FabricListener's methods may be called from any thread; the functions keep no
// state and block their caller until they are done.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/unique_fd.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::agent {

inline constexpr char kFabricMagic[] = "trainctl-fabric 1\n";
inline constexpr int kFabricPings = 8;
inline constexpr size_t kFabricPingBytes = 8;
inline constexpr int64_t kFabricBulkBytes = int64_t{64} << 20;
inline constexpr absl::Duration kFabricBulkTime = absl::Milliseconds(250);
// The listener's bounds.
inline constexpr int kFabricMaxConnections = 64;
inline constexpr absl::Duration kFabricIdleTimeout = absl::Seconds(5);
inline constexpr absl::Duration kFabricConnectionLimit = absl::Seconds(30);
// The longest one probe takes, whatever time its check has left.
inline constexpr absl::Duration kFabricProbeLimit = absl::Seconds(5);

// The agent's fabric check settings (the --gang-check-* flags).
struct FabricCheckOptions {
  // --gang-check-port: the listener's port; 0: a free one, picked at start.
  int port = 0;
  // --gang-check-program: a shell command line; "": none.
  std::string program;
  // --gang-check-min-gbps: the least bandwidth the program must report; 0: not judged.
  double min_gbps = 0;
  // --gang-check-min-tcp-gbps: the least bandwidth of the built-in probe; 0: reported only.
  double min_tcp_gbps = 0;
};

class FabricListener {
 public:
  FabricListener() = default;
  FabricListener(const FabricListener&) = delete;
  FabricListener& operator=(const FabricListener&) = delete;
  // Stop().
  ~FabricListener();

  // Binds the wildcard address on `port` (0: a free one) and starts serving. An error names the
  // port and the reason ("bind port 7090: Address already in use"). Call once.
  absl::Status Start(int port) ABSL_LOCKS_EXCLUDED(mu_);
  // The bound port; 0 before Start() succeeded.
  int port() const { return port_.load(); }
  // Connections being served now.
  int Active() const ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the listening socket, ends the connections being served and joins every thread.
  // Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Connection {
    UniqueFd fd;
    std::thread thread;
    bool done = false;
  };
  void AcceptLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void Serve(Connection* connection) ABSL_LOCKS_EXCLUDED(mu_);
  // Joins the threads of connections that ended, and forgets them.
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::atomic<int> port_{0};
  UniqueFd listen_fd_;
  // Written to by Stop() to wake the accept loop.
  UniqueFd wake_read_;
  UniqueFd wake_write_;
  std::thread acceptor_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Stable addresses: each thread holds its own.
  std::list<Connection> connections_ ABSL_GUARDED_BY(mu_);
};

// Probes the fabric check listener at `host_port` ("10.0.0.2:7090", "[fd00::2]:7090",
// "node-2:7090") within min(deadline, now + kFabricProbeLimit). `min_gbps` > 0: a sample below
// it fails. `to` and `from` are left for the caller.
trainctl::v1::FabricProbe ProbeFabric(const std::string& host_port, absl::Time deadline,
                                      double min_gbps);

struct FabricProgramRequest {
  // A shell command line, run with /bin/sh -c.
  std::string command;
  // Added to (or replacing in) the agent's environment.
  std::map<std::string, std::string> env;
  // When the program's process group is killed.
  absl::Time deadline = absl::InfinitePast();
  // The check's whole timeout, as the message of a killed program names it.
  absl::Duration check_timeout;
  // --gang-check-min-gbps; 0: the bandwidth is not judged.
  double min_gbps = 0;
  // Optional, not owned: once true, the program is killed (the agent is going away).
  const std::atomic<bool>* cancelled = nullptr;
};

// Runs the program to its end or the deadline. The result's `node` is left for the caller.
trainctl::v1::FabricProgramRun RunFabricProgram(const FabricProgramRequest& request);

// A measurement in messages (Gbit/s, ms): three significant digits ("93.1", "0.312", "1230").
std::string FormatMeasure(double value);

}  // namespace trainctl::agent
