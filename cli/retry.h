// How the CLI tries a call again, the one loop of every command that does: a unary call a
// standby answered (Client::Unary, FindLeader), a submit that did not get through, a log follow
// or a job watch that broke. Each try says what comes next: done, again at once (a standby named
// the leader), or again after a backoff pause (200ms, doubling, at most 2s). With an end, the
// tries keep within it.
//
//   grpc::Status status;
//   RetryLoop retry(kRpcTimeout, RetryLoop::AtTheEnd::kGiveUp);
//   retry.Run([&] {
//     status = Call();
//     return status.ok() ? RetryLoop::kDone : RetryLoop::kAfterBackoff;
//   });
//
// Time (the clock and sleeping) is a parameter, so that tests need not wait.
// Thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

namespace trainctl::cli {

// The backoff: 200ms, doubling, at most 2s. gRPC's reconnect backoff keeps in step with it.
inline constexpr int64_t kInitialBackoffMs = 200;
inline constexpr int64_t kMaxBackoffMs = 2000;

// The backoff after one of `current_ms` (0: none yet).
int64_t NextBackoffMs(int64_t current_ms);

class RetryLoop {
 public:
  using Clock = std::chrono::steady_clock;

  // What a try says comes next.
  enum Next {
    kDone,          // no more tries
    kNow,           // another try at once
    kAfterBackoff,  // another try after the next backoff pause
  };

  // What a pause that would reach the end does.
  enum class AtTheEnd {
    kGiveUp,    // Run returns false instead; a try at once past the end is not made either
    kCutShort,  // the pause lasts until the end (none once it passed), and the next try is made:
                // it is the try's to see that the time is up
  };

  // The clock and how to sleep; tests pass a fake.
  struct Time {
    std::function<Clock::time_point()> now;
    std::function<void(std::chrono::milliseconds)> sleep;
  };
  // steady_clock and std::this_thread::sleep_for.
  static Time RealTime();

  // Tries without an end.
  explicit RetryLoop(Time time = RealTime());
  // Tries within `within` from now.
  RetryLoop(std::chrono::milliseconds within, AtTheEnd at_the_end, Time time = RealTime());

  // Calls `attempt` until it returns kDone, pausing before a try after kAfterBackoff;
  // `before_pause`, when given, is told of each pause first (to say that a retry follows).
  // Returns true when a try said kDone, false when Run gave up at the end (AtTheEnd::kGiveUp).
  bool Run(const std::function<Next()>& attempt,
           const std::function<void(std::chrono::milliseconds)>& before_pause = nullptr);

  // A try got through: the next pause is the first one again.
  void Reset() { backoff_ms_ = 0; }
  // Sleeps `pause` on this RetryLoop's time: a poll interval after a try that got through.
  void Sleep(std::chrono::milliseconds pause) const { time_.sleep(pause); }

 private:
  // The pause before the next try after kAfterBackoff; nullopt: give up.
  std::optional<std::chrono::milliseconds> NextPause();

  const Time time_;
  const std::optional<Clock::time_point> end_;
  const AtTheEnd at_the_end_ = AtTheEnd::kGiveUp;
  int64_t backoff_ms_ = 0;
};

}  // namespace trainctl::cli
