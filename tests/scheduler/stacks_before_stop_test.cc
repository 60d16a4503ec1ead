// Which stops ask the agent to capture stacks first (StopReplica.capture_stacks, from
// scheduling.captureStacks), and what the core does with the stacks an agent reports
// (Core::StacksCaptured): kept with the job from the run's own node only.
#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/job_validation.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// The capture reasons of the stops `fx` sends, in order.
std::vector<std::string> CaptureReasons(const Effects& fx) {
  std::vector<std::string> out;
  for (const v1::StopReplica& s : Stops(fx)) out.push_back(s.capture_stacks());
  return out;
}

// Runs a hung replica into its stop; returns the effects of the tick that stopped it.
Effects HangUntilStopped(Fixture& f, v1::CaptureStacks mode, std::vector<v1::LaunchReplica>* l) {
  v1::JobSpec spec = Spec(0);
  spec.mutable_scheduling()->mutable_hang_timeout()->set_seconds(60);
  spec.mutable_scheduling()->set_capture_stacks(mode);
  std::string id;
  *l = f.SubmitAndPlace(spec, &id);
  f.StartAll(*l);
  Effects fx;
  f.core.Tick(FromMs(f.now + 61'000), &fx);
  return fx;
}

TEST_CASE("stacks: the stop of a hung replica asks for its stacks, unless captureStacks NEVER") {
  Fixture f;
  std::vector<v1::LaunchReplica> launches;
  CHECK(CaptureReasons(HangUntilStopped(f, v1::CAPTURE_STACKS_UNSPECIFIED, &launches)) ==
        std::vector<std::string>{"hung"});
  Fixture never;
  CHECK(CaptureReasons(HangUntilStopped(never, v1::CAPTURE_STACKS_NEVER, &launches)) ==
        std::vector<std::string>{""});
}

TEST_CASE("stacks: a gang restart's stops capture nothing under AUTO, and do under ALWAYS") {
  for (v1::CaptureStacks mode : {v1::CAPTURE_STACKS_AUTO, v1::CAPTURE_STACKS_ALWAYS}) {
    Fixture f;
    v1::JobSpec spec = Spec(2);
    spec.mutable_scheduling()->set_capture_stacks(mode);
    std::string id;
    std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(spec, &id);
    f.StartAll(launches);
    Effects fx;
    // SIGSEGV is transient: the gang restarts in place, its survivors stopped first.
    f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedSignal(launches[1].run_id(), 11),
                         FromMs(++f.now), &fx);
    const std::string want = mode == v1::CAPTURE_STACKS_ALWAYS ? "gang restart" : "";
    CHECK(CaptureReasons(fx) == std::vector<std::string>{want, want});
  }
}

TEST_CASE("stacks: the stops of an attempt that ends ask for stacks, those of a success do not") {
  Fixture f;
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Spec(2), &id);
  f.StartAll(launches);
  Effects fx;
  // Status 3 is the user's error: the job fails, and its other replicas are stopped.
  f.core.ReplicaExited(f.NodeOf(launches[2]), ExitedCode(launches[2].run_id(), 3), FromMs(++f.now),
                       &fx);
  f.core.Tick(FromMs(f.now + 10'000), &fx);  // past the settle window
  CHECK(f.Job(id).state() == v1::JOB_STATE_FAILED);
  CHECK(CaptureReasons(fx) == std::vector<std::string>{"attempt ended", "attempt ended"});

  Fixture ok;
  launches = ok.SubmitAndPlace(Spec(1), &id);
  ok.StartAll(launches);
  Effects done;
  ok.core.ReplicaExited(ok.NodeOf(launches[0]), ExitedCode(launches[0].run_id(), 0),
                        FromMs(++ok.now), &done);
  CHECK(ok.Job(id).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(CaptureReasons(done) == std::vector<std::string>{""});
}

TEST_CASE("stacks: a report from the run's node is kept with an event, another node's is not") {
  Fixture f;
  std::vector<v1::LaunchReplica> launches;
  HangUntilStopped(f, v1::CAPTURE_STACKS_AUTO, &launches);
  v1::ReplicaStacks stacks;
  stacks.set_run_id(launches[0].run_id());
  stacks.set_reason("hung");
  stacks.set_summary("load_batch (train.py:3)");
  stacks.add_processes()->set_text("Traceback (most recent call first):\n");

  const std::string node = f.NodeOf(launches[0]);
  const std::string other = node == "node-a" ? "node-b" : "node-a";
  Effects stray;
  f.core.StacksCaptured(other, stacks, FromMs(++f.now), &stray);
  CHECK(stray.stacks.empty());

  Effects fx;
  f.core.StacksCaptured(node, stacks, FromMs(++f.now), &fx);
  REQUIRE(fx.stacks.size() == 1);
  CHECK(fx.stacks[0].job_id() == launches[0].job_id());
  CHECK(fx.stacks[0].attempt() == 1);
  CHECK(fx.stacks[0].replica() == "chief-0");
  CHECK(fx.stacks[0].node() == node);
  CHECK(
      HasEvent(fx, "StacksCaptured", "stacks before the stop (hung): in load_batch (train.py:3)"));

  // An attempt keeps the texts of its first 64 captures; later ones keep their summaries only.
  for (int i = 1; i < Core::kStackTextsPerAttempt; ++i) {
    Effects more;
    f.core.StacksCaptured(node, stacks, FromMs(++f.now), &more);
    REQUIRE(more.stacks.size() == 1);
    CHECK(more.stacks[0].processes(0).text() == "Traceback (most recent call first):\n");
  }
  Effects capped;
  f.core.StacksCaptured(node, stacks, FromMs(++f.now), &capped);
  REQUIRE(capped.stacks.size() == 1);
  CHECK(capped.stacks[0].processes(0).text().empty());
  CHECK(capped.stacks[0].truncated());
  CHECK(capped.stacks[0].summary() == "load_batch (train.py:3)");
  CHECK(HasEvent(capped, "StacksCaptured", "texts dropped: 64 captures of attempt 1 kept theirs"));

  // A malformed or unknown run changes nothing.
  Effects none;
  stacks.set_run_id("nope");
  f.core.StacksCaptured(node, stacks, FromMs(++f.now), &none);
  stacks.set_run_id("j-missing/1/chief-0/0");
  f.core.StacksCaptured(node, stacks, FromMs(++f.now), &none);
  CHECK(none.empty());
}

TEST_CASE("stacks: captureStacks defaults to AUTO and refuses an unknown value") {
  v1::JobSpec spec = Spec(0);
  ApplyDefaults(&spec);
  CHECK(spec.scheduling().capture_stacks() == v1::CAPTURE_STACKS_AUTO);
  spec.mutable_scheduling()->set_capture_stacks(static_cast<v1::CaptureStacks>(9));
  absl::Status s = ValidateJobSpec(spec);
  CHECK(s.message() == "scheduling.captureStacks must be AUTO, ALWAYS or NEVER, got 9");
}

}  // namespace
}  // namespace trainctl::sched
