// LogShipper: the agent's thread that ships every run's log file to trainctld's copy
// (AgentService.ShipLogs, a bidirectional stream apart from the control stream, gzip on the
// wire), so that a replica's output outlives its host. What is shipped, and how answers are
// taken, is LogShipState's (log_ship_state.h); this is the transport and the timing.
//
// Every interval (--log-ship-interval, 200ms) the thread lists the logs directory, and sends one
// request (up to ~1 MiB of data, pieces of several runs) and waits for its answer before the
// next; while a request was left full it sends the next one at once. The scheduler it ships to
// is the one the agent's control stream is registered with (Options::address): while there is
// none it waits, and when that changes (a failover) it leaves its stream. A stream that fails is
// dropped; every run's offset becomes unknown (probed again on the next stream), and the thread
// dials again after a backoff (Options::initial_backoff doubling to max_backoff, +-20% jitter).
// A trainctld that does not serve ShipLogs (UNIMPLEMENTED: older than the agent; or
// FAILED_PRECONDITION: it keeps no copy) is logged once at warn and tried again every
// Options::unsupported_retry.
//
// The shipper only reads the log files, which each run's trainctl-shim writes: a slow or absent
// scheduler never slows a replica; it costs disk only (trainctl_agent_log_ship_backlog_bytes).
//
//   LogShipper shipper({.node = "node-1", .work_dir = "/var/lib/trainctl",
//                       .address = [&] { return registered_address(); },
//                       .channel = [&](const std::string& a) { return MakeChannel(a); },
//                       .ended = [&](const std::string& run) { return runtime.LogFinal(run); }});
//   shipper.Start();   // once the runtime adopted the runs of an earlier agent
//   ...
//   shipper.Stop();    // cancels the call under way, joins the thread
//
// Threads: one, started by Start(). The functions in Options are called on it with no lock of the
// shipper held. Thread-safety: every method may be called from any thread.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/agent_metrics.h"
#include "agents/log_ship_state.h"

namespace trainctl::agent {

class LogShipper {
 public:
  struct Options {
    // The agent's node name: the first request of each stream carries it.
    std::string node;
    // The agent's --work-dir.
    std::string work_dir;
    // How often new log bytes are looked for (--log-ship-interval).
    absl::Duration interval = absl::Milliseconds(200);
    // Backoff between streams: from initial_backoff doubling to max_backoff, +-20% jitter.
    absl::Duration initial_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
    // How often a scheduler that does not serve ShipLogs is tried again.
    absl::Duration unsupported_retry = absl::Minutes(1);
    // What one request carries at most (LogShipState::Options).
    int64_t max_request_bytes = int64_t{1} << 20;
    int max_probes = 256;
    // How long a run answered with `retry` waits.
    absl::Duration retry_after = absl::Seconds(5);
    // The address of the scheduler the agent's control stream is registered with; "" while
    // there is none. Required.
    std::function<std::string()> address;
    // A channel to an address (with the agent's TLS). Required.
    std::function<std::shared_ptr<grpc::Channel>(const std::string& address)> channel;
    // Whether the run can write no more to its log (ReplicaRuntime::LogFinal). Required.
    LogShipState::EndedFn ended;
    // Where shipped bytes, the backlog and stream errors are counted (not owned); null: nowhere.
    AgentMetrics* metrics = nullptr;
  };

  explicit LogShipper(Options options);
  LogShipper(const LogShipper&) = delete;
  LogShipper& operator=(const LogShipper&) = delete;
  // Stop().
  ~LogShipper();

  // Starts the thread. Call once.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the thread: cancels the call under way and joins it. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The agent's control stream was registered with the scheduler at `address`: a stream of the
  // shipper to another address is left at once (a failover), and a waiting shipper looks again.
  void Registered(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  // Bytes written to the logs that trainctld's copy does not hold yet, as of the last look.
  int64_t backlog_bytes() const { return backlog_.load(std::memory_order_relaxed); }
  // Streams that failed so far (not those the shipper left: Stop(), a failover).
  int64_t stream_errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  // How one stream went.
  struct Outcome {
    // The scheduler answered at least one request.
    bool answered = false;
    // Why the shipper left it; "" when the stream itself ended (an error or the scheduler).
    std::string left;
    // It failed: it ended by itself, or answered out of step (counted as an error).
    bool failed = false;
    grpc::Status status;
  };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Ships over one stream to `address` until it fails, the address changes or Stop().
  Outcome RunStream(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  // One look at the logs without a stream: keeps the backlog current.
  void ScanOnly();
  void UpdateBacklog();
  // Waits `d`, less when stopped or woken; returns whether the shipper is stopping.
  bool Wait(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits `d` between streams, less when stopped or the registered address moves away from
  // `from`; returns whether the shipper is stopping.
  bool Backoff(absl::Duration d, const std::string& from) ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  // Used by the thread only.
  LogShipState state_;
  std::atomic<int64_t> backlog_{0};
  std::atomic<int64_t> errors_{0};

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set by Registered(): the thread's wait ends.
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  // The call under way, to cancel it, and its address; null between streams.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string stream_address_ ABSL_GUARDED_BY(mu_);
  // Why Registered() cancelled the call under way; "" when it did not.
  std::string cancelled_ ABSL_GUARDED_BY(mu_);
  // Started by Start(), joined by Stop(); the thread itself never takes join_mu_.
  absl::Mutex join_mu_;
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace trainctl::agent
