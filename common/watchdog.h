// Watchdog: proof of life from the loop that does a daemon's work (trainctld's reconcile loop,
// trainctl-agent's replica monitor), for systemd and for the log.
//
// The loop calls Alive() on every pass. Alive() sends systemd "WATCHDOG=1" (sd_notify) at most
// every quarter of the unit's WatchdogSec, from the loop's own thread: a loop that is wedged stops
// the pings, and systemd kills and restarts the daemon, however healthy its other threads are.
// A thread of the watchdog's own also notices the silence and logs it once per stall, with the
// loop's name and how long it has been silent, so a stall shows in the log with or without
// systemd; and logs again when the loop comes back.
//
//   Watchdog watchdog(Watchdog::FromSystemd("reconcile loop", absl::Seconds(30)));
//   loop.set_alive(watchdog.AliveCallback());
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace trainctl {

class Watchdog {
 public:
  struct Options {
    // For the log: "reconcile loop".
    std::string loop_name;
    // Ping this often at most; zero: no pings (no systemd watchdog).
    absl::Duration ping_interval = absl::ZeroDuration();
    // Silence this long is a stall, logged.
    absl::Duration stall_after = absl::Seconds(30);
    // Sends one notification ("WATCHDOG=1"); sd_notify by default (FromSystemd).
    std::function<void(const char*)> notify;
    // Called with each stall's message as it is logged (tests).
    std::function<void(const std::string&)> on_stall;
  };

  // Options from systemd's environment (WATCHDOG_USEC, WATCHDOG_PID via sd_watchdog_enabled):
  // pings every quarter of WatchdogSec, and a stall is reported at half of it. Without a
  // watchdog, no pings, and a stall is reported after `stall_without_systemd`.
  static Options FromSystemd(std::string loop_name, absl::Duration stall_without_systemd);

  explicit Watchdog(Options options);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The loop passed again. Cheap: a clock read, and a notification when one is due.
  void Alive();
  // Alive() as a callback for the loop.
  std::function<void()> AliveCallback() {
    return [this] { Alive(); };
  }
  // Stalls reported so far, and whether the loop is in one now (as the monitor last saw it; true
  // only once the stall was logged and given to on_stall).
  int64_t stalls() const { return stalls_.load(); }
  bool stalled() const { return stalled_.load(); }

 private:
  void Monitor();

  const Options options_;
  // Steady-clock ns of the last Alive() and of the last ping.
  std::atomic<int64_t> last_alive_ns_;
  std::atomic<int64_t> last_ping_ns_{0};
  std::atomic<int64_t> stalls_{0};
  std::atomic<bool> stalled_{false};
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread monitor_;
};

}  // namespace trainctl
