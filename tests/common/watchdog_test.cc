// The daemons' watchdog (common/watchdog.h): pings at most once per interval from the loop's own
// calls, none without systemd's watchdog, and a stall reported once per stall.
#include "common/watchdog.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace trainctl {
namespace {

// Polls `cond` every 5 ms until it holds or 10 s pass.
bool WatchdogEventually(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

// What the watchdog sent and reported.
struct Sink {
  absl::Mutex mu;
  std::vector<std::string> notes ABSL_GUARDED_BY(mu);
  std::vector<std::string> stalls ABSL_GUARDED_BY(mu);

  Watchdog::Options Options(absl::Duration ping, absl::Duration stall) {
    Watchdog::Options o;
    o.loop_name = "test loop";
    o.ping_interval = ping;
    o.stall_after = stall;
    o.notify = [this](const char* note) {
      absl::MutexLock lock(&mu);
      notes.emplace_back(note);
    };
    o.on_stall = [this](const std::string& message) {
      absl::MutexLock lock(&mu);
      stalls.push_back(message);
    };
    return o;
  }
  size_t Notes() {
    absl::MutexLock lock(&mu);
    return notes.size();
  }
  size_t Stalls() {
    absl::MutexLock lock(&mu);
    return stalls.size();
  }
};

TEST_CASE("a passing loop pings WATCHDOG=1, at most once per interval", "[watchdog]") {
  Sink sink;
  Watchdog watchdog(sink.Options(absl::Milliseconds(20), absl::Seconds(30)));
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(WatchdogEventually([&] {
    watchdog.Alive();
    return sink.Notes() >= 3;
  }));
  // Many more calls than pings: each ping waited out its interval.
  for (int i = 0; i < 1000; ++i) watchdog.Alive();
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK(sink.Notes() <= static_cast<size_t>(elapsed_ms / 20) + 1);
  absl::MutexLock lock(&sink.mu);
  for (const std::string& note : sink.notes) CHECK(note == "WATCHDOG=1");
}

TEST_CASE("without systemd's watchdog nothing is sent", "[watchdog]") {
  Sink sink;
  Watchdog watchdog(sink.Options(absl::ZeroDuration(), absl::Seconds(30)));
  for (int i = 0; i < 100; ++i) watchdog.Alive();
  CHECK(sink.Notes() == 0);
}

TEST_CASE("a loop that stops passing is reported as stalled, once per stall", "[watchdog]") {
  Sink sink;
  Watchdog watchdog(sink.Options(absl::Milliseconds(25), absl::Milliseconds(100)));
  watchdog.Alive();
  // The loop is wedged: no Alive(), so no pings, and the stall is reported.
  REQUIRE(WatchdogEventually([&] { return sink.Stalls() == 1; }));
  const size_t pings = sink.Notes();
  {
    absl::MutexLock lock(&sink.mu);
    CHECK_THAT(sink.stalls[0], Catch::Contains("the test loop is stalled: it has not passed for"));
    CHECK_THAT(sink.stalls[0], Catch::Contains("systemd restarts the daemon at WatchdogSec"));
  }
  CHECK(watchdog.stalls() == 1);
  CHECK(watchdog.stalled());
  // It passes again (and pings again), then stalls again: a second report.
  REQUIRE(WatchdogEventually([&] {
    watchdog.Alive();
    return !watchdog.stalled() && sink.Notes() > pings;
  }));
  REQUIRE(WatchdogEventually([&] { return sink.Stalls() == 2; }));
  CHECK(watchdog.stalls() == 2);
}

}  // namespace
}  // namespace trainctl
