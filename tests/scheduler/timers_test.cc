// Timers: the earliest wakeup asked for, taken once it is due.
#include "scheduler/timers.h"

#include <catch2/catch.hpp>

#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

TEST_CASE("Timers: nothing asked for is never due") {
  Timers timers;
  CHECK_FALSE(timers.next().has_value());
  CHECK_FALSE(timers.TakeDue(absl::InfiniteFuture()));
}

TEST_CASE("Timers: keeps the earliest wakeup, whatever the order asked") {
  Timers timers;
  timers.WakeAt(kT0 + absl::Seconds(10));
  timers.WakeAt(kT0 + absl::Seconds(5));
  timers.WakeAt(kT0 + absl::Seconds(20));  // later: the pass at +5s re-arms it if still needed
  CHECK(timers.next() == kT0 + absl::Seconds(5));
}

TEST_CASE("Timers: TakeDue is true once the wakeup is due, and clears it") {
  Timers timers;
  timers.WakeAt(kT0);
  CHECK_FALSE(timers.TakeDue(kT0 - absl::Milliseconds(1)));
  CHECK(timers.next() == kT0);  // not due: kept
  CHECK(timers.TakeDue(kT0));
  CHECK_FALSE(timers.next().has_value());
  CHECK_FALSE(timers.TakeDue(kT0 + absl::Hours(1)));  // taken once

  timers.WakeAt(kT0 + absl::Seconds(1));
  CHECK(timers.TakeDue(kT0 + absl::Hours(1)));  // a late tick takes it too
}

}  // namespace
}  // namespace trainctl::sched
