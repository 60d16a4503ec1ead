#include "common/watchdog.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trainctl {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Watchdog::Options Watchdog::FromSystemd(std::string loop_name,
                                        absl::Duration stall_without_systemd) {
  Options options;
  options.loop_name = std::move(loop_name);
  options.stall_after = stall_without_systemd;
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    options.ping_interval = absl::Microseconds(usec) / 4;
    options.stall_after = absl::Microseconds(usec) / 2;
  }
  options.notify = [](const char* state) { sd_notify(0, state); };
  return options;
}

Watchdog::Watchdog(Options options) : options_(std::move(options)), last_alive_ns_(SteadyNs()) {
  monitor_ = std::thread([this] { Monitor(); });
}

Watchdog::~Watchdog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  monitor_.join();
}

void Watchdog::Alive() {
  const int64_t now = SteadyNs();
  last_alive_ns_.store(now, std::memory_order_relaxed);
  if (options_.ping_interval <= absl::ZeroDuration() || !options_.notify) return;
  int64_t last = last_ping_ns_.load(std::memory_order_relaxed);
  if (now - last < absl::ToInt64Nanoseconds(options_.ping_interval)) return;
  if (!last_ping_ns_.compare_exchange_strong(last, now)) return;
  options_.notify("WATCHDOG=1");
}

void Watchdog::Monitor() {
  const int64_t stall_ns = absl::ToInt64Nanoseconds(options_.stall_after);
  // Checked a few times per stall period, so a stall is seen soon after it qualifies.
  const absl::Duration poll =
      std::clamp(options_.stall_after / 4, absl::Milliseconds(10), absl::Seconds(1));
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), poll)) {
    const int64_t silent_ns = SteadyNs() - last_alive_ns_.load(std::memory_order_relaxed);
    if (!stalled_.load() && silent_ns >= stall_ns) {
      stalls_.fetch_add(1);
      const std::string message = absl::StrCat(
          "the ", options_.loop_name, " is stalled: it has not passed for ",
          absl::FormatDuration(absl::Trunc(absl::Nanoseconds(silent_ns), absl::Milliseconds(1))),
          options_.ping_interval > absl::ZeroDuration()
              ? "; it sends systemd no watchdog pings, and systemd restarts the daemon at "
                "WatchdogSec"
              : "");
      spdlog::error("{}", message);
      if (options_.on_stall) options_.on_stall(message);
      // Only now: whoever sees stalled() finds the stall reported.
      stalled_.store(true);
    } else if (stalled_.load() && silent_ns < stall_ns) {
      stalled_.store(false);
      spdlog::warn("the {} passes again", options_.loop_name);
    }
  }
}

}  // namespace trainctl
