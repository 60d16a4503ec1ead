// Hold, release, update and requeue (scheduler/core_queue_ops.cc) and dependencies
// (scheduler/dependencies.h), through Core: a held job is not admitted and holds back nobody in a
// STRICT_FIFO project, and runs once released; an update reorders the queue and is validated as at
// submit; a requeue ends the attempt as a preemption without a preemptor, charged to nothing; a job
// waiting on a dependency holds back nobody, ends FAILED at once when its condition can never hold
// (or waits under KEEP_WAITING), and runs once it holds; dependencies on unknown jobs are refused
// and those on jobs only the store remembers resolve; the standings survive a restore.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// One 4-cpu node; every job takes all of it, so one runs at a time and the rest queue.
struct QueueFixture {
  Core core{TestOptions(11)};
  int64_t now = 1'000'000;

  QueueFixture() {
    Effects fx;
    core.AgentRegistered(Reg("node-a"), FromMs(now), &fx);
  }

  std::string Submit(Effects* fx, int priority = 0, const std::vector<v1::Dependency>& deps = {},
                     v1::DependencyPolicy policy = v1::DEPENDENCY_POLICY_UNSPECIFIED,
                     const std::map<std::string, v1::JobState>& stored = {}) {
    v1::JobSpec spec = Spec(0, /*cpu=*/4);
    spec.set_priority(priority);
    for (const v1::Dependency& d : deps) *spec.add_depends_on() = d;
    spec.set_dependency_policy(policy);
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, FromMs(++now), fx, "", {}, stored);
    REQUIRE(job.ok());
    return (*job)->id;
  }

  const Job& J(const std::string& id) { return *core.FindJob(id); }

  // Schedules; starts what was launched; returns the launches.
  std::vector<v1::LaunchReplica> Run(Effects* fx) {
    core.Schedule(FromMs(++now), fx);
    std::vector<v1::LaunchReplica> launches = Launches(*fx);
    for (const v1::LaunchReplica& l : launches) {
      core.ReplicaStarted("node-a", Started(l.run_id()), FromMs(++now), fx);
    }
    return launches;
  }

  // The job's one replica exits with `code`.
  void Exit(const std::string& id, int code, Effects* fx) {
    const Job& job = J(id);
    core.ReplicaExited("node-a", ExitedCode(job.RunIdOf(job.replicas[0]), code), FromMs(++now), fx);
    core.Schedule(FromMs(++now), fx);
  }
};

v1::Dependency Dep(const std::string& job, v1::DependencyCondition c) {
  v1::Dependency d;
  d.set_job(job);
  d.set_condition(c);
  return d;
}

TEST_CASE("queue ops: a held job is not admitted, holds back nobody, and runs once released") {
  QueueFixture f;
  Effects fx;
  const std::string held = f.Submit(&fx, /*priority=*/10);
  const std::string next = f.Submit(&fx);
  REQUIRE(f.core.HoldJob(held, "alice", "waiting for the dataset", FromMs(++f.now), &fx).ok());
  CHECK(HasEvent(fx, "JobHeld", "held by alice: waiting for the dataset"));
  Effects run;
  const std::vector<v1::LaunchReplica> launches = f.Run(&run);
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].job_id() == next);  // the held job, first in line, holds back nobody
  CHECK(f.J(held).state == v1::JOB_STATE_QUEUED);
  CHECK_THAT(f.J(held).queue_reason, Catch::StartsWith("HELD: held by alice since ") &&
                                         Catch::Contains("`trainctl release " + held + "`"));
  // Errors a person can act on.
  CHECK(f.core.HoldJob(held, "bob", "", FromMs(++f.now), &fx).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(f.core.HoldJob(next, "bob", "", FromMs(++f.now), &fx).status().message() ==
        "job " + next + " is RUNNING: only a QUEUED job can be held");
  CHECK(f.core.ReleaseJob(next, "bob", FromMs(++f.now), &fx).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(f.core.HoldJob("j-nope", "bob", "", FromMs(++f.now), &fx).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(f.core.HoldJob(held, "bob", std::string(1025, 'x'), FromMs(++f.now), &fx).status().code() ==
        absl::StatusCode::kInvalidArgument);

  Effects released;
  REQUIRE(f.core.ReleaseJob(held, "bob", FromMs(++f.now), &released).ok());
  CHECK(HasEvent(released, "JobReleased", "released by bob (held by alice since"));
  CHECK_FALSE(f.J(held).held);
  f.Exit(next, 0, &released);
  CHECK(f.J(held).state == v1::JOB_STATE_PENDING);  // admitted in the pass after the exit
}

TEST_CASE("queue ops: an update reorders the queue and is validated as at submit") {
  QueueFixture f;
  Effects fx;
  const std::string running = f.Submit(&fx);
  f.Run(&fx);
  const std::string first = f.Submit(&fx);
  const std::string second = f.Submit(&fx);
  v1::UpdateJobRequest req;
  req.set_id(second);
  req.set_priority(50);
  (*req.mutable_labels())["team"] = "vision";
  Effects updated;
  REQUIRE(f.core.UpdateJob(req, "alice", FromMs(++f.now), &updated).ok());
  CHECK(HasEvent(updated, "JobUpdated", "updated by alice: priority 0 -> 50, label team=vision"));
  CHECK(f.J(second).priority == 50);
  CHECK(f.J(second).spec.labels().at("team") == "vision");
  f.Exit(running, 0, &updated);
  CHECK(f.J(second).state == v1::JOB_STATE_PENDING);  // it went ahead of `first`
  CHECK(f.J(first).state == v1::JOB_STATE_QUEUED);

  v1::UpdateJobRequest bad;
  bad.set_id(first);
  bad.set_priority(5000);
  CHECK(f.core.UpdateJob(bad, "alice", FromMs(++f.now), &fx).status().message() ==
        "priority must be -1000..1000, got 5000");
  v1::UpdateJobRequest none;
  none.set_id(first);
  CHECK(f.core.UpdateJob(none, "alice", FromMs(++f.now), &fx).status().code() ==
        absl::StatusCode::kInvalidArgument);
  v1::UpdateJobRequest late;
  late.set_id(second);
  late.set_priority(1);
  CHECK(f.core.UpdateJob(late, "alice", FromMs(++f.now), &fx).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  v1::UpdateJobRequest unlabel;
  unlabel.set_id(first);
  unlabel.add_remove_labels("absent");
  unlabel.mutable_queue_timeout()->set_seconds(3600);
  Effects timed;
  REQUIRE(f.core.UpdateJob(unlabel, "", FromMs(++f.now), &timed).ok());
  CHECK(f.J(first).spec.scheduling().queue_timeout().seconds() == 3600);
  CHECK(HasEvent(timed, "JobUpdated", "queueTimeout"));
}

TEST_CASE("queue ops: a requeue ends the attempt as a preemption without a preemptor") {
  QueueFixture f;
  Effects fx;
  const std::string id = f.Submit(&fx);
  f.Run(&fx);
  REQUIRE(f.J(id).state == v1::JOB_STATE_RUNNING);
  const Budgets before = f.J(id).budgets_used;
  Effects requeued;
  REQUIRE(f.core.RequeueJob(id, "alice", "node maintenance soon", FromMs(++f.now), &requeued).ok());
  CHECK(HasEvent(requeued, "JobRequeuing", "requeued by alice: node maintenance soon"));
  int notices = 0;
  for (const Command& c : requeued.commands) notices += c.message.has_notice();
  CHECK(notices == 1);
  CHECK(f.core.RequeueJob(id, "bob", "", FromMs(++f.now), &requeued).status().code() ==
        absl::StatusCode::kFailedPrecondition);  // under way already
  // The replica exits after its notice: the attempt ends, the job waits in its own place.
  const Job& job = f.J(id);
  Effects ended;
  f.core.ReplicaExited("node-a", ExitedSignal(job.RunIdOf(job.replicas[0]), 15), FromMs(++f.now),
                       &ended);
  CHECK(HasEvent(ended, "JobRequeued", "requeued (every replica exited)"));
  CHECK(f.J(id).budgets_used.job_retries == before.job_retries);
  CHECK(f.J(id).budgets_used.redispatches == before.redispatches);
  Effects again;
  CHECK(f.Run(&again).size() == 1);
  CHECK(f.J(id).attempts.size() == 2);
  CHECK(f.core.RequeueJob("j-nope", "", "", FromMs(++f.now), &again).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("dependencies: afterok fails at once when its job fails, afternotok runs") {
  QueueFixture f;
  Effects fx;
  const std::string a = f.Submit(&fx);
  f.Run(&fx);
  const std::string b = f.Submit(&fx, 0, {Dep(a, v1::DEPENDENCY_CONDITION_SUCCEEDED)});
  const std::string c = f.Submit(&fx, 0, {Dep(a, v1::DEPENDENCY_CONDITION_FAILED)});
  const std::string d = f.Submit(&fx);
  CHECK(f.J(b).dependencies.size() == 1);
  Effects waiting;
  f.core.Schedule(FromMs(++f.now), &waiting);
  CHECK_THAT(f.J(b).queue_reason, Catch::Equals("DEPENDENCY: waiting for " + a + " to succeed"));
  CHECK_THAT(f.J(c).queue_reason, Catch::Equals("DEPENDENCY: waiting for " + a + " to fail"));

  Effects failed;
  f.Exit(a, 1, &failed);
  CHECK(f.J(a).state == v1::JOB_STATE_FAILED);
  CHECK(f.J(b).state == v1::JOB_STATE_FAILED);
  CHECK_THAT(f.J(b).error.message,
             Catch::Equals("Dependency " + a + " ended FAILED; job " + b +
                           " needed it to succeed, so it never ran (dependencyPolicy FAIL)."));
  CHECK(f.J(b).attempts.empty());
  CHECK(HasEvent(failed, "DependencyNeverMet"));
  CHECK(f.J(c).dependencies[0].met());
  CHECK(f.J(c).state == v1::JOB_STATE_PENDING);  // it runs; d waits behind it
  CHECK(f.J(d).state == v1::JOB_STATE_QUEUED);
}

TEST_CASE(
    "dependencies: waiting jobs hold back nobody, KEEP_WAITING stays, ENDED accepts any end") {
  QueueFixture f;
  Effects fx;
  const std::string a = f.Submit(&fx);
  f.Run(&fx);
  const std::string keep = f.Submit(&fx, 100, {Dep(a, v1::DEPENDENCY_CONDITION_SUCCEEDED)},
                                    v1::DEPENDENCY_POLICY_KEEP_WAITING);
  const std::string any = f.Submit(&fx, 50, {Dep(a, v1::DEPENDENCY_CONDITION_ENDED)});
  const std::string plain = f.Submit(&fx);
  Effects cancelled;
  REQUIRE(f.core.CancelJob(a, FromMs(++f.now), &cancelled).ok());
  const Job& job = f.J(a);
  f.core.ReplicaExited("node-a", ExitedSignal(job.RunIdOf(job.replicas[0]), 15), FromMs(++f.now),
                       &cancelled);
  f.core.Schedule(FromMs(++f.now), &cancelled);
  CHECK(f.J(a).state == v1::JOB_STATE_CANCELLED);
  CHECK(f.J(keep).state == v1::JOB_STATE_QUEUED);
  CHECK_THAT(f.J(keep).queue_reason,
             Catch::Equals("DEPENDENCY: " + a + " ended CANCELLED and can never succeed"));
  // The waiting job, first by priority, holds back nobody: `any` runs.
  CHECK(f.J(any).state == v1::JOB_STATE_PENDING);
  CHECK(f.J(plain).state == v1::JOB_STATE_QUEUED);
}

TEST_CASE("dependencies: unknown jobs are refused, stored ends resolve, standings are restored") {
  QueueFixture f;
  Effects fx;
  v1::JobSpec spec = Spec(0, 4);
  *spec.add_depends_on() = Dep("j-gone", v1::DEPENDENCY_CONDITION_SUCCEEDED);
  CHECK(f.core.SubmitJob(spec, FromMs(++f.now), &fx).status().message() ==
        "spec.dependsOn[0].job: no job j-gone");
  *spec.add_depends_on() = Dep("j-gone", v1::DEPENDENCY_CONDITION_FAILED);
  CHECK(f.core.SubmitJob(spec, FromMs(++f.now), &fx, "", {}, {{"j-gone", v1::JOB_STATE_FAILED}})
            .status()
            .message() == "spec.dependsOn[1].job: job j-gone is named twice");
  // A job only the store remembers, which succeeded long ago: met at once.
  const std::string old =
      f.Submit(&fx, 0, {Dep("j-old", v1::DEPENDENCY_CONDITION_SUCCEEDED)},
               v1::DEPENDENCY_POLICY_UNSPECIFIED, {{"j-old", v1::JOB_STATE_SUCCEEDED}});
  CHECK(f.J(old).dependencies[0].met());
  // One that failed: this job fails at once.
  const std::string doomed =
      f.Submit(&fx, 0, {Dep("j-old", v1::DEPENDENCY_CONDITION_FAILED)},
               v1::DEPENDENCY_POLICY_UNSPECIFIED, {{"j-old", v1::JOB_STATE_SUCCEEDED}});
  CHECK(f.J(doomed).state == v1::JOB_STATE_FAILED);

  // A restore keeps the standings and the index: the dependency's end still reaches the waiter.
  const std::string running = old;
  f.Run(&fx);
  REQUIRE(f.J(running).state == v1::JOB_STATE_RUNNING);
  const std::string waiter = f.Submit(&fx, 0, {Dep(running, v1::DEPENDENCY_CONDITION_SUCCEEDED)});
  std::vector<Job> jobs;
  for (const std::string& id : {running, waiter}) {
    absl::StatusOr<Job> copy = JobFromProto(ToProto(f.J(id)));
    REQUIRE(copy.ok());
    jobs.push_back(*copy);
  }
  std::vector<Node> nodes = {*f.core.FindNode("node-a")};
  Core restored(TestOptions(12));
  restored.Restore(std::move(jobs), std::move(nodes), {}, {});
  Effects reg;
  v1::KnownRun run;
  run.set_run_id(f.J(running).RunIdOf(f.J(running).replicas[0]));
  run.set_running(true);
  restored.AgentRegistered(Reg("node-a", 4, 4096, 0, {run}), FromMs(++f.now), &reg);
  Effects done;
  restored.ReplicaExited("node-a", ExitedCode(run.run_id(), 0), FromMs(++f.now), &done);
  restored.Schedule(FromMs(++f.now), &done);
  CHECK(restored.FindJob(running)->state == v1::JOB_STATE_SUCCEEDED);
  CHECK(restored.FindJob(waiter)->dependencies[0].met());
  CHECK(restored.FindJob(waiter)->state == v1::JOB_STATE_PENDING);
}

}  // namespace
}  // namespace trainctl::sched
