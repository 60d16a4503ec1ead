// The core's straggler part (scheduler/stragglers.h) through Core: a 3-rank gang whose worker-1
// reports steps at a quarter of the others' rate gets a StragglerDetected event naming its node,
// and a note on the replica, until it catches up (StragglerRecovered); a gang restart drops the
// notes; a one-replica job is never judged; a gang's hang names the rank that stopped first.
#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// Every rank of `launches` reports steps for `seconds` (rates by replica name, steps per second),
// one report a second, the core ticking after each.
void Train(Fixture& f, const std::string& id, const std::map<std::string, int>& rates, int seconds,
           std::map<std::string, int64_t>* steps, Effects* fx) {
  for (int i = 0; i < seconds; ++i) {
    f.now += 1'000;
    for (const auto& [name, rate] : rates) {
      (*steps)[name] += rate;
      REQUIRE(f.core.ReportProgress(id, name, (*steps)[name], false, FromMs(f.now), fx).ok());
    }
    f.core.Tick(FromMs(f.now), fx);
  }
}

TEST_CASE("stragglers: a rank at a quarter rate is reported with its node, until it catches up") {
  Fixture f;  // the default window: 5m
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Spec(2), &id);
  f.StartAll(launches);
  REQUIRE(f.Job(id).state() == v1::JOB_STATE_RUNNING);
  std::map<std::string, int64_t> steps;
  Effects fx;
  Train(f, id, {{"chief-0", 8}, {"worker-0", 8}, {"worker-1", 2}}, 200, &steps, &fx);
  CHECK_FALSE(HasEvent(fx, "StragglerDetected"));  // not a whole window yet
  Train(f, id, {{"chief-0", 8}, {"worker-0", 8}, {"worker-1", 2}}, 120, &steps, &fx);
  const std::string node = f.Job(id).replicas(2).node();
  CHECK(HasEvent(fx, "StragglerDetected",
                 "worker-1 on " + node + ": 2 steps/s over the last 5m, the gang's median 8"));
  CHECK_THAT(f.Job(id).replicas(2).straggler(), Catch::StartsWith("2 steps/s over the last 5m"));
  CHECK(f.Job(id).replicas(0).straggler().empty());
  CHECK(f.core.StragglersByProject().at("default") == 1);

  Effects later;
  Train(f, id, {{"chief-0", 8}, {"worker-0", 8}, {"worker-1", 8}}, 400, &steps, &later);
  CHECK(HasEvent(later, "StragglerRecovered", "worker-1 on " + node + " keeps up"));
  CHECK(f.Job(id).replicas(2).straggler().empty());
  CHECK(f.core.StragglersByProject().at("default") == 0);
}

TEST_CASE("stragglers: a gang restart drops the notes, a single replica is never judged") {
  Fixture f;
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Spec(2), &id);
  f.StartAll(launches);
  std::map<std::string, int64_t> steps;
  Effects fx;
  Train(f, id, {{"chief-0", 8}, {"worker-0", 8}, {"worker-1", 8}}, 30, &steps, &fx);
  // worker-1 stops advancing (it reports the same step again).
  Train(f, id, {{"chief-0", 8}, {"worker-0", 8}, {"worker-1", 0}}, 320, &steps, &fx);
  REQUIRE(HasEvent(fx, "StragglerDetected", "worker-1 on"));
  CHECK_THAT(f.Job(id).replicas(2).straggler(), Catch::Contains("steps/s over the last 5m"));
  // A transient crash restarts the gang: the job is no longer RUNNING, its notes go.
  Effects crash;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedSignal(launches[1].run_id(), 11),
                       FromMs(++f.now), &crash);
  f.core.Tick(FromMs(++f.now), &crash);
  CHECK(f.Job(id).replicas(2).straggler().empty());

  Fixture one;
  launches = one.SubmitAndPlace(Spec(0), &id);
  one.StartAll(launches);
  Effects alone;
  std::map<std::string, int64_t> single;
  Train(one, id, {{"chief-0", 1}}, 400, &single, &alone);
  CHECK_FALSE(HasEvent(alone, "StragglerDetected"));
}

TEST_CASE("stragglers: a gang's hang names the rank that stopped advancing first") {
  Fixture f;
  v1::JobSpec spec = Spec(2);
  spec.mutable_scheduling()->mutable_hang_timeout()->set_seconds(60);
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(spec, &id);
  f.StartAll(launches);
  std::map<std::string, int64_t> steps;
  Effects fx;
  // worker-1 stops at step 50 after 10 s; the others go on to step 100, then wait for it.
  Train(f, id, {{"chief-0", 5}, {"worker-0", 5}, {"worker-1", 5}}, 10, &steps, &fx);
  Train(f, id, {{"chief-0", 5}, {"worker-0", 5}}, 10, &steps, &fx);
  Effects hung;
  f.now += 55'000;  // 60 s after worker-1's last step
  f.core.Tick(FromMs(f.now), &hung);
  const std::string node = f.Job(id).replicas(2).node();
  CHECK(HasEvent(hung, "ReplicaStopping",
                 "(worker-1 on " + node +
                     " stopped advancing first, at step 50; the others reached up to 100)"));
  CHECK_THAT(f.Job(id).replicas(2).message(), Catch::Contains("stopped advancing first"));

  // Ranks that all stopped at the same step name no one.
  Job same;
  same.replicas.resize(2);
  for (Replica& r : same.replicas) {
    r.state = v1::REPLICA_STATE_RUNNING;
    r.step = 7;
  }
  CHECK(FirstToStop(same).empty());
}

}  // namespace
}  // namespace trainctl::sched
