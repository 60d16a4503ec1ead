// RetryLoop (cli/retry.h), the CLI's one loop of tries, on a fake clock: no test sleeps.
#include "cli/retry.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <vector>

namespace trainctl::cli {
namespace {

using std::chrono::milliseconds;

// A clock that moves only when the loop sleeps, and a record of the sleeps.
struct FakeTime {
  RetryLoop::Clock::time_point now{};
  std::vector<int64_t> sleeps;  // ms

  RetryLoop::Time Time() {
    return {[this] { return now; },
            [this](milliseconds pause) {
              sleeps.push_back(pause.count());
              now += pause;
            }};
  }
};

TEST_CASE("NextBackoffMs doubles from 200ms up to 2s", "[retry]") {
  std::vector<int64_t> seen;
  int64_t backoff = 0;
  for (int i = 0; i < 7; ++i) seen.push_back(backoff = NextBackoffMs(backoff));
  CHECK(seen == std::vector<int64_t>{200, 400, 800, 1600, 2000, 2000, 2000});
}

TEST_CASE("RetryLoop tries until a try is done, backing off between tries", "[retry]") {
  FakeTime time;
  RetryLoop retry(time.Time());
  int tries = 0;
  std::vector<int64_t> told;
  CHECK(retry.Run([&] { return ++tries < 7 ? RetryLoop::kAfterBackoff : RetryLoop::kDone; },
                  [&](milliseconds pause) { told.push_back(pause.count()); }));
  CHECK(tries == 7);
  CHECK(time.sleeps == std::vector<int64_t>{200, 400, 800, 1600, 2000, 2000});
  CHECK(told == time.sleeps);
}

TEST_CASE("RetryLoop tries again at once without a pause", "[retry]") {
  FakeTime time;
  RetryLoop retry(time.Time());
  int tries = 0;
  CHECK(retry.Run([&] { return ++tries < 3 ? RetryLoop::kNow : RetryLoop::kDone; }));
  CHECK(tries == 3);
  CHECK(time.sleeps.empty());
}

TEST_CASE("RetryLoop starts the backoff over after Reset", "[retry]") {
  FakeTime time;
  RetryLoop retry(time.Time());
  int tries = 0;
  retry.Run([&] {
    ++tries;
    if (tries == 4) retry.Reset();  // this try got through, and the next one fails again
    return tries < 6 ? RetryLoop::kAfterBackoff : RetryLoop::kDone;
  });
  CHECK(time.sleeps == std::vector<int64_t>{200, 400, 800, 200, 400});
}

TEST_CASE("RetryLoop gives up when a pause would reach the end", "[retry]") {
  FakeTime time;
  RetryLoop retry(milliseconds(1000), RetryLoop::AtTheEnd::kGiveUp, time.Time());
  int tries = 0;
  std::vector<int64_t> told;
  CHECK_FALSE(retry.Run(
      [&] {
        ++tries;
        return RetryLoop::kAfterBackoff;
      },
      [&](milliseconds pause) { told.push_back(pause.count()); }));
  // 200 + 400 = 600ms passed; 800 more would reach 1000ms, so the third try was the last.
  CHECK(tries == 3);
  CHECK(time.sleeps == std::vector<int64_t>{200, 400});
  CHECK(told == time.sleeps);
}

TEST_CASE("RetryLoop makes no try at once past the end when it gives up there", "[retry]") {
  FakeTime time;
  RetryLoop retry(milliseconds(1000), RetryLoop::AtTheEnd::kGiveUp, time.Time());
  int tries = 0;
  CHECK_FALSE(retry.Run([&] {
    ++tries;
    time.now += milliseconds(600);  // each try takes 600ms
    return RetryLoop::kNow;
  }));
  CHECK(tries == 2);
  CHECK(time.sleeps.empty());
}

TEST_CASE("RetryLoop cuts the last pause short at the end and tries once more", "[retry]") {
  FakeTime time;
  RetryLoop retry(milliseconds(1000), RetryLoop::AtTheEnd::kCutShort, time.Time());
  const RetryLoop::Clock::time_point end = time.now + milliseconds(1000);
  int tries = 0;
  CHECK(retry.Run([&] {
    ++tries;
    // The try sees the time is up (a watch with the deadline would end at once).
    return time.now >= end ? RetryLoop::kDone : RetryLoop::kAfterBackoff;
  }));
  CHECK(time.sleeps == std::vector<int64_t>{200, 400, 400});
  CHECK(tries == 4);
}

TEST_CASE("RetryLoop pauses no more once the end passed, when it cuts pauses short", "[retry]") {
  FakeTime time;
  RetryLoop retry(milliseconds(100), RetryLoop::AtTheEnd::kCutShort, time.Time());
  int tries = 0;
  retry.Run([&] {
    ++tries;
    time.now += milliseconds(500);  // past the end at once
    return tries < 3 ? RetryLoop::kAfterBackoff : RetryLoop::kDone;
  });
  CHECK(tries == 3);
  CHECK(time.sleeps.empty());
}

TEST_CASE("RetryLoop::Sleep sleeps on the loop's time", "[retry]") {
  FakeTime time;
  const RetryLoop retry(time.Time());
  retry.Sleep(milliseconds(300));
  CHECK(time.sleeps == std::vector<int64_t>{300});
}

}  // namespace
}  // namespace trainctl::cli
