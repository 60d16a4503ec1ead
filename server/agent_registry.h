// The connected agents' streams, by node name, and the log reads in flight through them.
//
// The reconcile loop sends commands with Send(node, msg); an agent session attaches itself when
// its agent registers and detaches when its stream ends. A newer stream of the same node replaces
// the older one. Log reads are requests on the agent's stream answered by LogData; each waits at
// most kLogReadTimeout.
//
// Thread-safety: every method may be called from any thread. No callback (a channel's Send or
// Close, a LogCallback) runs with the registry's lock held, so they may call back into it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::server {

// The sending side of one agent stream. Implemented by the stream's reactor.
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  // Queues a message; dropped silently once the stream is closing.
  virtual void Send(const v1::SchedulerMessage& msg) = 0;
  // Ends the stream with `status`.
  virtual void Close(const std::string& why) = 0;
};

class AgentRegistry {
 public:
  using LogCallback = std::function<void(absl::StatusOr<v1::LogData>)>;
  static constexpr std::chrono::seconds kLogReadTimeout{10};

  // Makes `channel` the node's stream; closes the one it replaces, if any.
  void Attach(const std::string& node, std::shared_ptr<AgentChannel> channel)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes `channel` if it is still the node's stream; returns whether it was.
  bool Detach(const std::string& node, const AgentChannel* channel) ABSL_LOCKS_EXCLUDED(mu_);
  bool IsConnected(const std::string& node) ABSL_LOCKS_EXCLUDED(mu_);

  // Sends to the node's current stream; a message for an unconnected node is dropped (the core
  // resends what matters when the agent registers again).
  void Send(const std::string& node, const v1::SchedulerMessage& msg) ABSL_LOCKS_EXCLUDED(mu_);

  // Asks `node` for a piece of a run's log; `done` runs exactly once, on some thread.
  void RequestLog(const std::string& node, v1::ReadLog req, LogCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Completes the request LogData answers.
  void CompleteLog(const v1::LogData& data) ABSL_LOCKS_EXCLUDED(mu_);
  // Fails requests older than kLogReadTimeout, and those whose node went away.
  void ExpireLogRequests() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct PendingLog {
    std::string node;
    std::chrono::steady_clock::time_point deadline;
    LogCallback done;
  };

  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<AgentChannel>> channels_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, PendingLog> pending_logs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace trainctl::server
