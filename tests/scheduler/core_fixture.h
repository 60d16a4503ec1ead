// The core tests' fixture: a Core with two nodes registered and a fake clock that tests advance
// by hand, with helpers to submit, place and start jobs. For the core's tests only.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched::testing {

// A core with two nodes registered, and a fake clock that tests advance by hand.
struct Fixture {
  Core core{TestOptions(42)};
  ~Fixture() { CheckUsageOnExit(core); }
  int64_t now = 1'000'000;

  Fixture() {
    Effects fx;
    core.AgentRegistered(Reg("node-a"), FromMs(now), &fx);
    core.AgentRegistered(Reg("node-b"), FromMs(now), &fx);
  }

  v1::Job Submit(const v1::JobSpec& spec, Effects* fx) {
    absl::StatusOr<v1::Job> job = AsView(core.SubmitJob(spec, FromMs(now), fx));
    REQUIRE(job.ok());
    return *job;
  }

  // Submits and places a job; returns its launches.
  std::vector<v1::LaunchReplica> SubmitAndPlace(const v1::JobSpec& spec, std::string* id) {
    Effects fx;
    *id = Submit(spec, &fx).id();
    core.Schedule(FromMs(now), &fx);
    return Launches(fx);
  }

  v1::Job Job(const std::string& id) { return View(core, id); }

  void StartAll(const std::vector<v1::LaunchReplica>& launches) {
    for (const auto& l : launches) {
      Effects fx;
      core.ReplicaStarted(NodeOf(l), Started(l.run_id()), FromMs(++now), &fx);
    }
  }

  std::string NodeOf(const v1::LaunchReplica& l) {
    const Replica* r = core.FindJob(l.job_id())->FindReplica(l.replica_name());
    return r == nullptr ? "" : r->node;
  }
};

}  // namespace trainctl::sched::testing
