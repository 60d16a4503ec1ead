// The connected agents' streams, by node name, and the log reads in flight through them.
//
// The reconcile loop sends commands with Send(node, msg); an agent session attaches itself when
// its agent registers and detaches when its stream ends. A newer stream of the same node replaces
// the older one. Log reads are requests on the agent's stream answered by LogData; each waits at
// most kLogReadTimeout.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
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
  void Attach(const std::string& node, std::shared_ptr<AgentChannel> channel);
  // Removes `channel` if it is still the node's stream; returns whether it was.
  bool Detach(const std::string& node, const AgentChannel* channel);
  bool IsConnected(const std::string& node);

  // Sends to the node's current stream; a message for an unconnected node is dropped (the core
  // resends what matters when the agent registers again).
  void Send(const std::string& node, const v1::SchedulerMessage& msg);

  // Asks `node` for a piece of a run's log; `done` runs exactly once, on some thread.
  void RequestLog(const std::string& node, v1::ReadLog req, LogCallback done);
  // Completes the request LogData answers.
  void CompleteLog(const v1::LogData& data);
  // Fails requests older than kLogReadTimeout, and those whose node went away.
  void ExpireLogRequests();

 private:
  struct PendingLog {
    std::string node;
    std::chrono::steady_clock::time_point deadline;
    LogCallback done;
  };

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<AgentChannel>> channels_;  // guarded by mu_
  std::map<uint64_t, PendingLog> pending_logs_;                    // guarded by mu_
  uint64_t next_request_id_ = 1;                                   // guarded by mu_
};

}  // namespace trainctl::server
