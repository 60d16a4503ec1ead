// The connected agents' streams, by node name, and the log reads in flight through them.
//
// The reconcile loop sends commands with Send(node, msg); an agent session attaches itself when
// its agent registers and detaches when its stream ends. A second stream claiming a connected
// node's name takes over only from the same agent process (its agent_instance: a reconnect the
// old stream has not noticed yet) or once the old stream has been silent for `takeover_after`
// (two missed heartbeats); any other claim is refused, so a rogue client cannot unseat a live
// agent and stop its replicas. Log reads are requests on the agent's stream answered by LogData;
// each waits at most kLogReadTimeout. Image prepulls (`trainctl node prepull`) are requests
// answered by ImagePrepulled, stack captures (`trainctl stacks --now`) requests answered by a
// StacksReport; each waits until the deadline its caller gives.
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
#include "model/model.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::server {

// The sending side of one agent stream. Implemented by the stream's reactor.
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  // Queues a command (its Take() is written when its turn comes, so a queued launch holds no
  // copy of its pool's spec); dropped silently once the stream is closing.
  virtual void Enqueue(sched::Command cmd) = 0;
  void Send(const v1::SchedulerMessage& msg) { Enqueue({"", msg, nullptr}); }
  // Ends the stream with `status`.
  virtual void Close(const std::string& why) = 0;
};

class AgentRegistry {
 public:
  using LogCallback = std::function<void(absl::StatusOr<v1::LogData>)>;
  // The agent's answer to a prepull, or one made here: `error` set when it did not answer.
  using PrepullCallback = std::function<void(const v1::ImagePrepulled&)>;
  using StacksCallback = std::function<void(const v1::StacksReport&)>;
  static constexpr std::chrono::seconds kLogReadTimeout{10};

  // `takeover_after`: how long a connected node's stream must have been silent before a stream
  // of another agent instance may take the node over; twice the heartbeat interval.
  explicit AgentRegistry(std::chrono::milliseconds takeover_after = std::chrono::seconds(4))
      : takeover_after_(takeover_after) {}

  // Makes `channel` the node's stream for agent process `instance` and closes the one it
  // replaces, if any; see the file comment for when it may. ALREADY_EXISTS, and nothing changes,
  // when the node is connected through a live stream of another instance.
  absl::Status Attach(const std::string& node, std::shared_ptr<AgentChannel> channel,
                      const std::string& instance) ABSL_LOCKS_EXCLUDED(mu_);
  // A message arrived on `channel`. Returns whether it is still the node's stream (false: the
  // stream was replaced or disconnected, and its messages must be ignored).
  bool Heard(const std::string& node, const AgentChannel* channel) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes `channel` if it is still the node's stream; returns whether it was.
  bool Detach(const std::string& node, const AgentChannel* channel) ABSL_LOCKS_EXCLUDED(mu_);
  bool IsConnected(const std::string& node) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the node's stream and closes it with `why` (its certificate was revoked).
  void Disconnect(const std::string& node, const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes and closes every stream (trainctld rebuilt its state: every agent registers again).
  void DisconnectAll(const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);

  // Sends to the node's current stream; a message for an unconnected node is dropped (the core
  // resends what matters when the agent registers again).
  void Send(sched::Command cmd) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends `message` to every connected node (best effort, like Send).
  void Broadcast(const v1::SchedulerMessage& message) ABSL_LOCKS_EXCLUDED(mu_);

  // Asks `node` for a piece of a run's log; `done` runs exactly once, on some thread.
  void RequestLog(const std::string& node, v1::ReadLog req, LogCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Completes the request LogData answers.
  void CompleteLog(const v1::LogData& data) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks `node` to pull an image into its cache (its request id set here); `done` runs exactly
  // once, on some thread: with the agent's answer, or at once with the error "not connected",
  // or with "no answer before the deadline" once `deadline` passed, or with "its agent
  // disconnected before it answered" when the node's stream went away.
  void RequestPrepull(const std::string& node, v1::PrepullImage req,
                      std::chrono::steady_clock::time_point deadline, PrepullCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Completes the request ImagePrepulled answers, if it still waits.
  void CompletePrepull(const v1::ImagePrepulled& answer) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks `node` to capture a running replica's stacks now (DumpStacks, its request id set here);
  // `done` runs exactly once, on some thread, with the agent's StacksReport, or with one whose
  // stacks.error says why there is none (not connected, no answer before `deadline`, the agent
  // disconnected).
  void RequestStacks(const std::string& node, v1::DumpStacks req,
                     std::chrono::steady_clock::time_point deadline, StacksCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Completes the request a StacksReport answers, if it still waits.
  void CompleteStacks(const v1::StacksReport& answer) ABSL_LOCKS_EXCLUDED(mu_);

  // Fails log reads older than kLogReadTimeout, prepulls past their deadline, and both when
  // their node went away. The reconcile loop calls it after every turn.
  void ExpireRequests() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct PendingLog {
    std::string node;
    std::chrono::steady_clock::time_point deadline;
    LogCallback done;
  };

  // A request answered by its node's agent by a deadline: a prepull or a stack capture.
  template <typename Callback>
  struct PendingAnswer {
    std::string node;
    std::chrono::steady_clock::time_point deadline;
    Callback done;
  };
  using PendingPrepull = PendingAnswer<PrepullCallback>;
  using PendingStacks = PendingAnswer<StacksCallback>;

  // Files `req` (its request id set here) in `pending` with `done` (moved) when `node` is
  // connected, and returns the node's stream; null (and `done` untouched) when it is not.
  template <typename Request, typename Callback>
  std::shared_ptr<AgentChannel> Track(const std::string& node, Request* req,
                                      std::chrono::steady_clock::time_point deadline,
                                      Callback* done,
                                      std::map<uint64_t, PendingAnswer<Callback>>* pending)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the callback `answer` completes, if its request still waits in `pending`.
  template <typename Answer, typename Callback>
  void Complete(const Answer& answer, std::map<uint64_t, PendingAnswer<Callback>>* pending)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes from `pending` the requests past their deadline or whose node went away, with why.
  template <typename Callback>
  std::vector<std::pair<std::string, Callback>> TakeUnanswered(
      std::map<uint64_t, PendingAnswer<Callback>>* pending,
      std::chrono::steady_clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A node's stream, the agent process behind it, and when it was last heard from.
  struct Stream {
    std::shared_ptr<AgentChannel> channel;
    std::string instance;
    std::chrono::steady_clock::time_point heard;
  };

  const std::chrono::milliseconds takeover_after_;
  absl::Mutex mu_;
  std::map<std::string, Stream> channels_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, PendingLog> pending_logs_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, PendingPrepull> pending_prepulls_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, PendingStacks> pending_stacks_ ABSL_GUARDED_BY(mu_);
  // Log reads and prepulls draw their request ids from it.
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace trainctl::server
