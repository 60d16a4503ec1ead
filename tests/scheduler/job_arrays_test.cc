// Job arrays (scheduler/job_arrays.h, core_arrays.cc; common/array_ids.h): the index syntax and
// element ids; through Core, an array starts its elements in index order, never more than its
// parallelism admitted at once, each with its index in its env and args; it ends SUCCEEDED,
// FAILED or CANCELLED from its elements' ends and tells the jobs waiting on it; cancel stops the
// rest; hold and release of the array and of an element not started; reads of elements not
// started; at most kArrayStartWindow elements wait in the queue at once; and the array's row
// survives a restore.
#include "scheduler/job_arrays.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/array_ids.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

TEST_CASE("array ids: indices, steps, lists and their errors") {
  CHECK(ParseArrayIndices("0-9:3,20").value() == std::vector<int32_t>{0, 3, 6, 9, 20});
  CHECK(ParseArrayIndices("9,1,5").value() == std::vector<int32_t>{1, 5, 9});
  CHECK(ParseArrayIndices("0-99").value().size() == 100);
  CHECK_THAT(std::string(ParseArrayIndices("5-3").status().message()), Catch::Contains("'5-3'"));
  CHECK_THAT(std::string(ParseArrayIndices("1,2,1").status().message()),
             Catch::Contains("names index 1 twice"));
  CHECK_THAT(std::string(ParseArrayIndices("0-9:0").status().message()), Catch::Contains("step"));
  CHECK_THAT(std::string(ParseArrayIndices("0-1000000").status().message()),
             Catch::Contains("999999"));
  CHECK_THAT(std::string(ParseArrayIndices("0-200000").status().message()),
             Catch::Contains("more than 100000"));
  CHECK_FALSE(ParseArrayIndices("").ok());
  CHECK_FALSE(ParseArrayIndices("a").ok());

  CHECK(ParseElementId("j-0abc-7")->array == "j-0abc");
  CHECK(ParseElementId("j-0abc-7")->index == 7);
  CHECK_FALSE(ParseElementId("j-0123456789").has_value());  // a job id, not an element
  CHECK_FALSE(ParseElementId("j-0abc-").has_value());
  const auto range = ParseElementRange("j-0abc-[3-5,9]");
  REQUIRE(range.ok());
  REQUIRE(range->has_value());
  CHECK((*range)->array == "j-0abc");
  CHECK((*range)->indices == std::vector<int32_t>{3, 4, 5, 9});
  CHECK_FALSE(ParseElementRange("j-0abc-7").value().has_value());
  CHECK_FALSE(ParseElementRange("j-0abc-[5-3]").ok());
  CHECK(ParseArrayShorthand("0-99%8")->parallelism == 8);
  CHECK(ParseArrayShorthand("0-99%8")->indices == "0-99");
  CHECK(ParseArrayShorthand("1,5")->parallelism == 0);
  CHECK_THAT(std::string(ParseArrayShorthand("0-9%0").status().message()),
             Catch::Contains("parallelism"));
}

TEST_CASE("array spec: validated, and each element's spec made its own") {
  v1::JobSpec spec = Spec(0);
  spec.mutable_array()->set_indices("0-3");
  spec.mutable_array()->set_parallelism(-1);
  CHECK_THAT(std::string(ValidateArraySpec(spec).message()),
             Catch::Contains("spec.array.parallelism must be 0..100000"));
  spec.mutable_array()->set_parallelism(2);
  spec.mutable_array()->set_indices("3-1");
  CHECK_THAT(std::string(ValidateArraySpec(spec).message()), Catch::Contains("spec.array.indices"));
  spec.mutable_array()->set_indices("0-3");
  CHECK(ValidateArraySpec(spec).ok());
  v1::WorkerPool* pool = spec.mutable_worker_pools(0);
  pool->add_args("--lr-index={{index}}");
  (*pool->mutable_env())["SHARD"] = "shard-{{index}}";
  spec.set_checkpoint_dir("/ckpt/sweep/{{index}}");
  const v1::Dependency dep;
  *spec.add_depends_on() = dep;
  const v1::JobSpec e = ElementSpec(spec, 7);
  CHECK(e.display_name() == "test-7");
  CHECK_FALSE(e.has_array());
  CHECK(e.depends_on().empty());
  CHECK(e.worker_pools(0).args(0) == "--lr-index=7");
  CHECK(e.worker_pools(0).env().at("SHARD") == "shard-7");
  CHECK(e.checkpoint_dir() == "/ckpt/sweep/7");
}

// One 4-cpu node; each element takes 1 cpu, so four would fit at once.
struct ArrayFixture {
  Core core{TestOptions(17)};
  int64_t now = 1'000'000;
  // The runs started so far (launches in an earlier step's effects are started once).
  std::set<std::string> started_runs;
  int32_t most_admitted = 0;

  ArrayFixture() {
    Effects fx;
    core.AgentRegistered(Reg("node-a"), FromMs(now), &fx);
  }

  std::string Submit(const std::string& indices, int32_t parallelism, Effects* fx,
                     const std::vector<v1::Dependency>& deps = {}) {
    v1::JobSpec spec = Spec(0, /*cpu=*/1);
    spec.mutable_worker_pools(0)->add_args("--index={{index}}");
    spec.mutable_array()->set_indices(indices);
    spec.mutable_array()->set_parallelism(parallelism);
    for (const v1::Dependency& d : deps) *spec.add_depends_on() = d;
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, FromMs(++now), fx);
    REQUIRE(job.ok());
    return (*job)->id;
  }

  const Job& J(const std::string& id) { return *core.FindJob(id); }

  int32_t Admitted(const std::string& array) {
    int32_t n = 0;
    for (int32_t index : J(array).array->started) {
      const Job* e = core.FindJob(ElementIdOf(array, index));
      if (e != nullptr && IsAdmitted(e->state)) ++n;
    }
    return n;
  }

  // Schedules; starts what was launched; returns the launches.
  std::vector<v1::LaunchReplica> Run(const std::string& array, Effects* fx) {
    core.Schedule(FromMs(++now), fx);
    std::vector<v1::LaunchReplica> launches;
    for (v1::LaunchReplica& l : Launches(*fx)) {
      if (!started_runs.insert(l.run_id()).second) continue;
      core.ReplicaStarted("node-a", Started(l.run_id()), FromMs(++now), fx);
      launches.push_back(std::move(l));
    }
    core.Schedule(FromMs(++now), fx);
    most_admitted = std::max(most_admitted, Admitted(array));
    return launches;
  }

  // Element `index`'s replica exits with `code`.
  void Exit(const std::string& array, int32_t index, int code, Effects* fx) {
    const Job& e = J(ElementIdOf(array, index));
    core.ReplicaExited("node-a", ExitedCode(e.RunIdOf(e.replicas[0]), code), FromMs(++now), fx);
    core.Schedule(FromMs(++now), fx);
  }
};

v1::Dependency ArrayDep(const std::string& job, v1::DependencyCondition c) {
  v1::Dependency d;
  d.set_job(job);
  d.set_condition(c);
  return d;
}

TEST_CASE("arrays: elements start in order, at most parallelism at once, each with its index") {
  ArrayFixture f;
  Effects fx;
  const std::string a = f.Submit("0-9", 3, &fx);
  CHECK(HasEvent(fx, "ArraySubmitted", "job array of 10 elements (indices 0-9), at most 3"));
  const std::string after =
      f.Submit("0", 0, &fx, {ArrayDep(a, v1::DEPENDENCY_CONDITION_SUCCEEDED)});
  CHECK(f.J(a).replicas.empty());
  std::map<int32_t, int> runs;
  Effects step;
  for (int round = 0; round < 20 && !IsTerminal(f.J(a).state); ++round) {
    for (const v1::LaunchReplica& l : f.Run(a, &step)) {
      const int32_t index = std::stoi(l.env().at("TRAINCTL_ARRAY_INDEX"));
      CHECK(l.env().at("TRAINCTL_ARRAY_COUNT") == "10");
      CHECK(l.env().at("TRAINCTL_ARRAY_ID") == a);
      CHECK(std::find(l.argv().begin(), l.argv().end(), absl::StrCat("--index=", index)) !=
            l.argv().end());
      runs[index]++;
    }
    CHECK(f.Admitted(a) <= 3);
    // The lowest running element ends.
    for (int32_t index : f.J(a).array->started) {
      if (f.J(ElementIdOf(a, index)).state == v1::JOB_STATE_RUNNING) {
        f.Exit(a, index, 0, &step);
        break;
      }
    }
  }
  CHECK(f.most_admitted == 3);
  REQUIRE(runs.size() == 10);
  for (const auto& [index, n] : runs) CHECK(n == 1);
  CHECK(f.J(a).state == v1::JOB_STATE_SUCCEEDED);
  CHECK(HasEvent(step, "JobSucceeded", "RUNNING -> SUCCEEDED: every one of its 10 elements"));
  CHECK(View(f.core, a).array().succeeded() == 10);
  // The job waiting on the array (its elements all succeeded) is met; it is an array itself.
  CHECK(f.J(after).dependencies[0].met());
  CHECK(f.core.CheckUsage().ok());
}

TEST_CASE("arrays: one failed element fails the array, and the counts and shown state follow") {
  ArrayFixture f;
  Effects fx;
  const std::string a = f.Submit("0-1", 0, &fx);
  CHECK(View(f.core, a).state() == v1::JOB_STATE_QUEUED);
  f.Run(a, &fx);
  const v1::Job running = View(f.core, a);
  CHECK(running.state() == v1::JOB_STATE_RUNNING);
  CHECK(running.array().running() == 2);
  CHECK(running.array().started_indices() == "0-1");
  f.Exit(a, 0, 0, &fx);
  f.Exit(a, 1, 1, &fx);  // a user error: no retry by default
  f.core.Schedule(FromMs(++f.now), &fx);
  const Job& done = f.J(a);
  INFO(View(f.core, ElementIdOf(a, 1)).DebugString());
  CHECK(done.state == v1::JOB_STATE_FAILED);
  CHECK_THAT(done.error.message, Catch::Contains("1 element of 2 failed"));
  CHECK(View(f.core, a).array().failed() == 1);
}

TEST_CASE("arrays: cancel stops the running elements and starts no more, and waiters learn of it") {
  ArrayFixture f;
  Effects fx;
  const std::string a = f.Submit("0-9", 2, &fx);
  f.Run(a, &fx);
  // A job waits on an element that has not started.
  const std::string on_element =
      f.Submit("0", 0, &fx, {ArrayDep(ElementIdOf(a, 7), v1::DEPENDENCY_CONDITION_ENDED)});
  Effects cancel;
  REQUIRE(f.core.CancelJob(a, FromMs(++f.now), &cancel).ok());
  CHECK(HasEvent(cancel, "ArrayCancelled", "8 elements will not start, 2 elements cancelled"));
  CHECK(Stops(cancel).size() == 2);
  CHECK(View(f.core, a).state() == v1::JOB_STATE_CANCELLING);
  Effects stopped = ConfirmStops(f.core, ElementIdOf(a, 0), cancel, ++f.now);
  Effects stopped1 = ConfirmStops(f.core, ElementIdOf(a, 1), cancel, ++f.now);
  Effects sched;
  f.core.Schedule(FromMs(++f.now), &stopped1);
  f.core.Schedule(FromMs(++f.now), &stopped);
  CHECK(f.J(a).state == v1::JOB_STATE_CANCELLED);
  CHECK(f.J(a).array->started.size() == 2);
  CHECK(f.J(on_element).dependencies[0].met());
  CHECK(f.J(on_element).dependencies[0].ended() == v1::JOB_STATE_CANCELLED);
  // The element not started reads as cancelled.
  const std::optional<v1::Job> seven = SynthesizeElement(View(f.core, a), 7);
  REQUIRE(seven.has_value());
  CHECK(seven->state() == v1::JOB_STATE_CANCELLED);
  CHECK(f.core.CheckUsage().ok());
}

TEST_CASE("arrays: hold and release, of the array and of an element not started") {
  ArrayFixture f;
  Effects fx;
  const std::string a = f.Submit("0-5", 2, &fx);
  REQUIRE(f.core.HoldJob(ElementIdOf(a, 2), "bob", "", FromMs(++f.now), &fx).ok());
  CHECK(HasEvent(fx, "ElementHeld", "held by bob before it started"));
  f.Run(a, &fx);
  CHECK(f.J(a).array->started == std::set<int32_t>{0, 1});
  // The held element reads as HELD; the others wait on the limit.
  const v1::Job view = View(f.core, a);
  CHECK(SynthesizeElement(view, 2)->queue_status().blockers(0).kind() == "HELD");
  CHECK(SynthesizeElement(view, 3)->queue_status().blockers(0).kind() == "ARRAY_LIMIT");
  CHECK_THAT(
      SynthesizeElement(view, 3)->queue_reason(),
      Catch::Contains("2 elements of array " + a + " started and not ended (parallelism 2)"));
  CHECK_FALSE(SynthesizeElement(view, 0).has_value());  // a job of its own
  f.Exit(a, 0, 0, &fx);
  CHECK(f.J(a).array->started == std::set<int32_t>{0, 1, 3});  // 2 skipped while held
  // Holding the array stops every new start.
  REQUIRE(f.core.HoldJob(a, "bob", "quota review", FromMs(++f.now), &fx).ok());
  f.Exit(a, 1, 0, &fx);
  f.Run(a, &fx);
  CHECK(f.J(a).array->started == std::set<int32_t>{0, 1, 3});
  CHECK(WaitingBlocker(View(f.core, a)).kind == BlockerKind::kHeld);
  REQUIRE(f.core.ReleaseJob(a, "bob", FromMs(++f.now), &fx).ok());
  f.Run(a, &fx);
  CHECK(f.J(a).array->started == std::set<int32_t>{0, 1, 3, 4});
  REQUIRE(f.core.ReleaseJob(ElementIdOf(a, 2), "bob", FromMs(++f.now), &fx).ok());
  CHECK_FALSE(f.core.ReleaseJob(ElementIdOf(a, 2), "bob", FromMs(++f.now), &fx).ok());
  f.Exit(a, 3, 0, &fx);
  f.Run(a, &fx);
  CHECK(f.J(a).array->started == std::set<int32_t>{0, 1, 2, 3, 4});
  // Deleting an element not started is refused, saying how to keep it from starting.
  CHECK_THAT(std::string(f.core.DeleteJob(ElementIdOf(a, 5), "", FromMs(++f.now), &fx).message()),
             Catch::Contains("has not started"));
  CHECK(f.core.CheckUsage().ok());
}

TEST_CASE("arrays: with no parallelism, at most the start window waits in the queue") {
  ArrayFixture f;
  Effects fx;
  const std::string a = f.Submit("0-999", 0, &fx);
  f.core.Schedule(FromMs(++f.now), &fx);
  const Job& array = f.J(a);
  // Four fit on the node; the window keeps 64 more queued.
  CHECK(array.array->started.size() == static_cast<size_t>(4 + kArrayStartWindow));
  CHECK(array.array->In(v1::JOB_STATE_QUEUED) == kArrayStartWindow);
  CHECK(array.array->waiting() == 1000 - 4 - kArrayStartWindow);
  const std::optional<v1::Job> row = WaitingRow(View(f.core, a));
  REQUIRE(row.has_value());
  CHECK(row->id() == absl::StrCat(a, "-[68-999]"));
  CHECK_THAT(row->display_name(), Catch::Contains("932 elements not started"));
}

TEST_CASE("arrays: the array's row survives a restore and goes on starting elements") {
  ArrayFixture f;
  Effects fx;
  const std::string a = f.Submit("0-4", 1, &fx);
  REQUIRE(f.core.HoldJob(ElementIdOf(a, 3), "", "", FromMs(++f.now), &fx).ok());
  f.Run(a, &fx);
  f.Exit(a, 0, 0, &fx);
  std::vector<Job> jobs;
  for (const auto& [id, job] : f.core.jobs()) {
    absl::StatusOr<Job> back = JobFromProto(ToProto(job));
    REQUIRE(back.ok());
    jobs.push_back(*std::move(back));
  }
  const v1::ArrayStatus before = View(f.core, a).array();
  CHECK(before.held_indices() == "3");
  CHECK(before.succeeded() == 1);
  Core restored{TestOptions(18)};
  restored.Restore(std::move(jobs), {}, {});
  Effects rfx;
  restored.AgentRegistered(Reg("node-a"), FromMs(++f.now), &rfx);
  restored.Schedule(FromMs(++f.now), &rfx);
  CHECK(View(restored, a).array().SerializeAsString() != "");
  CHECK(restored.FindJob(a)->state == v1::JOB_STATE_QUEUED);
  CHECK(restored.FindJob(a)->array->held == std::set<int32_t>{3});
  CHECK(restored.FindJob(a)->array->started.count(1) == 1);
  CHECK(restored.FindJob(a)->array->In(v1::JOB_STATE_SUCCEEDED) == 1);
  CHECK(restored.CheckUsage().ok());
}

}  // namespace
}  // namespace trainctl::sched
