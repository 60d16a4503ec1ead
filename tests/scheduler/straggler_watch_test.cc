// StragglerWatch (scheduler/straggler_watch.h) on a fake clock: a steady gang has no straggler; a
// rank at a quarter of the others' rate is one once a window has passed, and stops being one when
// it catches up; reports in bursts are judged by their average; a restart's lower step starts
// the rank's history afresh; a rank that stops advancing falls to a rate of 0.
#include "scheduler/straggler_watch.h"

#include <catch2/catch.hpp>

namespace trainctl::sched {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

// Advances `ranks` (name -> steps per second) by one second at a time for `seconds`, each rank
// reporting its step every second, starting at `*t` with steps from `*steps`.
void Train(StragglerWatch* w, const std::map<std::string, double>& ranks, int seconds,
           absl::Time* t, std::map<std::string, double>* steps) {
  for (int i = 0; i < seconds; ++i) {
    *t += absl::Seconds(1);
    for (const auto& [name, rate] : ranks) {
      (*steps)[name] += rate;
      w->Report(name, static_cast<int64_t>((*steps)[name]), *t);
    }
  }
}

TEST_CASE("stragglers: a steady gang has none, a rank at a quarter rate is one after a window") {
  StragglerWatch w({0.7, absl::Seconds(60)});
  absl::Time t = kT0;
  std::map<std::string, double> steps;
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 10}}, 120, &t, &steps);
  CHECK(w.Evaluate(t).empty());

  // worker-1 slows to a quarter: not judged at once, but once the window is mostly slow.
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 2.5}}, 10, &t, &steps);
  CHECK(w.Evaluate(t).empty());
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 2.5}}, 60, &t, &steps);
  std::vector<StragglerWatch::Verdict> v = w.Evaluate(t);
  REQUIRE(v.size() == 1);
  CHECK(v[0].replica == "worker-1");
  CHECK(v[0].straggling);
  CHECK(v[0].rate == Approx(2.5).margin(0.1));
  CHECK(v[0].median == Approx(10).margin(0.1));
  CHECK(w.Evaluate(t).empty());  // said once
  CHECK(w.straggling().count("worker-1") == 1);

  // It catches up: no longer a straggler, said once.
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 10}}, 60, &t, &steps);
  v = w.Evaluate(t);
  REQUIRE(v.size() == 1);
  CHECK_FALSE(v[0].straggling);
  CHECK(w.straggling().empty());
}

TEST_CASE("stragglers: reports in bursts are judged by their average rate") {
  StragglerWatch w({0.7, absl::Seconds(300)});
  absl::Time t = kT0;
  int64_t steady = 0;
  int64_t bursty = 0;
  for (int s = 1; s <= 900; ++s) {
    t = kT0 + absl::Seconds(s);
    steady += 10;
    w.Report("chief-0", steady, t);
    w.Report("worker-0", steady, t);
    if (s % 30 == 0) {  // every 30 s, 300 steps at once
      bursty += 300;
      w.Report("worker-1", bursty, t);
    }
    if (s > 300) CHECK(w.Evaluate(t + absl::Seconds(29)).empty());
  }
}

TEST_CASE("stragglers: a restart starts a rank's history afresh, a stalled rank falls to 0") {
  StragglerWatch w({0.7, absl::Seconds(60)});
  absl::Time t = kT0;
  std::map<std::string, double> steps;
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 1}}, 120, &t, &steps);
  REQUIRE(w.Evaluate(t).size() == 1);
  // worker-1 restarts from a checkpoint at a lower step: no longer judged until a window passed.
  steps["worker-1"] = 50;
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 10}}, 1, &t, &steps);
  CHECK_FALSE(w.RateOf("worker-1", t).has_value());
  std::vector<StragglerWatch::Verdict> v = w.Evaluate(t);
  REQUIRE(v.size() == 1);
  CHECK_FALSE(v[0].straggling);
  Train(&w, {{"chief-0", 10}, {"worker-0", 10}, {"worker-1", 10}}, 120, &t, &steps);
  CHECK(w.Evaluate(t).empty());

  // chief-0 stops reporting (stuck): after a window its rate is 0 and it is the straggler.
  Train(&w, {{"worker-0", 10}, {"worker-1", 10}}, 61, &t, &steps);
  v = w.Evaluate(t);
  REQUIRE(v.size() == 1);
  CHECK(v[0].replica == "chief-0");
  CHECK(v[0].rate == 0);
  // Forgotten (its run ended): nothing is judged of it.
  w.Forget("chief-0");
  CHECK(w.straggling().empty());
  CHECK(w.Evaluate(t).empty());
}

TEST_CASE("stragglers: one rank alone, or none covering the window, judges nobody") {
  StragglerWatch w({0.7, absl::Seconds(60)});
  absl::Time t = kT0;
  std::map<std::string, double> steps;
  Train(&w, {{"chief-0", 10}}, 120, &t, &steps);
  CHECK(w.Evaluate(t).empty());
  Train(&w, {{"chief-0", 10}, {"worker-0", 1}}, 30, &t, &steps);  // worker-0 too new
  CHECK(w.Evaluate(t).empty());
  // Many reports within a window keep the samples bounded.
  for (int i = 0; i < 10'000; ++i) w.Report("chief-0", 1'000'000 + i, t + absl::Milliseconds(i));
  CHECK(w.RateOf("chief-0", t + absl::Seconds(10)).has_value());
}

}  // namespace
}  // namespace trainctl::sched
