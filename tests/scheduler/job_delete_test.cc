// Deleting jobs from the core (Core::DeleteJob): only a job that ended and holds nothing goes,
// with everything the core indexed of it. Forgetting one (Core::ForgetJob) drops it from memory
// on the same terms and writes nothing; DeleteStoredJob deletes one only the database holds.
#include <catch2/catch.hpp>

#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// The JobDeleted events of `fx`.
std::vector<Event> Deletions(const Effects& fx) {
  std::vector<Event> out;
  for (const Event& e : fx.events) {
    if (e.type == "JobDeleted") out.push_back(e);
  }
  return out;
}

TEST_CASE(
    "an unknown job is NOT_FOUND, a live one FAILED_PRECONDITION, and both stay as they are") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(1), &id);
  f.StartAll(launches);
  Effects fx;
  CHECK(f.core.DeleteJob("j-nope", "by alice", FromMs(++f.now), &fx).code() ==
        absl::StatusCode::kNotFound);
  absl::Status live = f.core.DeleteJob(id, "by alice", FromMs(++f.now), &fx);
  CHECK(live.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(live.message() ==
        "job " + id + " is RUNNING; only a job that ended can be deleted (cancel it first)");
  CHECK(f.core.FindJob(id) != nullptr);
  CHECK(fx.deleted_jobs.empty());
  CHECK(fx.events.empty());
}

TEST_CASE("a job that ended while a replica is still stopping is deleted once it stopped") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(ReplicaScope(Spec(1)), &id);
  f.StartAll(launches);
  // The worker's user error fails the job; the chief is asked to stop.
  Effects fx;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedCode(launches[1].run_id(), 3), FromMs(++f.now),
                       &fx);
  REQUIRE(f.Job(id).state() == v1::JOB_STATE_FAILED);
  absl::Status stopping = f.core.DeleteJob(id, "", FromMs(++f.now), &fx);
  CHECK(stopping.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(stopping.message() == "job " + id +
                                  " is FAILED but its replica chief-0 is still STOPPING; delete "
                                  "it once that replica ended");
  f.core.ReplicaExited(f.NodeOf(launches[0]), ExitedSignal(launches[0].run_id(), 15),
                       FromMs(++f.now), &fx);

  Effects del;
  REQUIRE(f.core.DeleteJob(id, "by alice", FromMs(++f.now), &del).ok());
  CHECK(f.core.FindJob(id) == nullptr);
  CHECK(del.deleted_jobs == std::vector<std::string>{id});
  // Its runs' logs can no longer be located.
  std::string node, run_id;
  bool finished = false;
  CHECK(f.core.LocateRun(id, "chief-0", 0, -1, &node, &run_id, &finished).code() ==
        absl::StatusCode::kNotFound);
  // The deletion is recorded by an event not tied to the job, which outlives it.
  const std::vector<Event> events = Deletions(del);
  REQUIRE(events.size() == 1);
  CHECK(events[0].job_id.empty());
  CHECK(events[0].reason == "job " + id + " (project default, FAILED) deleted: by alice");
  // Deleting it again: NOT_FOUND.
  CHECK(f.core.DeleteJob(id, "", FromMs(++f.now), &del).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a job changed and deleted in one turn leaves no row of it to write") {
  Core core{TestOptions(1)};  // no nodes: the job stays queued
  Effects fx;
  const std::string id = AsView(core.SubmitJob(Spec(1), FromMs(5), &fx))->id();
  REQUIRE(AsView(core.CancelJob(id, FromMs(6), &fx))->state() == v1::JOB_STATE_CANCELLED);
  REQUIRE(fx.jobs.count(id) == 1);
  REQUIRE(core.DeleteJob(id, "", FromMs(7), &fx).ok());
  CHECK(fx.jobs.count(id) == 0);
  for (const auto& [job_id, number] : fx.attempts) CHECK(job_id != id);
  CHECK(fx.deleted_jobs == std::vector<std::string>{id});
  // Retention passes no reason: no event.
  CHECK(Deletions(fx).empty());
}

TEST_CASE("a deleted job's request id creates a new job") {
  Core core{TestOptions(1)};
  Effects fx;
  const CreateRequestKey key{"req-1", "hash-a"};
  const std::string first = AsView(core.SubmitJob(Spec(1), FromMs(5), &fx, "alice", key))->id();
  REQUIRE(AsView(core.CancelJob(first, FromMs(6), &fx)).ok());
  REQUIRE(core.DeleteJob(first, "by alice", FromMs(7), &fx).ok());
  absl::StatusOr<v1::Job> second = AsView(core.SubmitJob(Spec(1), FromMs(8), &fx, "alice", key));
  REQUIRE(second.ok());
  CHECK(second->id() != first);
  CHECK(second->state() == v1::JOB_STATE_QUEUED);
}

TEST_CASE("a forgotten job leaves memory and its request id, and no row or event is written") {
  Core core{TestOptions(1)};
  Effects fx;
  const CreateRequestKey key{"req-1", "hash-a"};
  const std::string id = AsView(core.SubmitJob(Spec(1), FromMs(5), &fx, "alice", key))->id();
  absl::Status live = core.ForgetJob(id);
  CHECK(live.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(core.FindJob(id) != nullptr);
  REQUIRE(AsView(core.CancelJob(id, FromMs(6), &fx)).ok());
  Effects before = fx;
  REQUIRE(core.ForgetJob(id).ok());
  CHECK(core.FindJob(id) == nullptr);
  CHECK(core.FindRequest("alice", "req-1", FromMs(7)) == nullptr);
  CHECK(fx.deleted_jobs.empty());
  CHECK(fx.events.size() == before.events.size());
  CHECK(core.ForgetJob(id).code() == absl::StatusCode::kNotFound);
  CHECK(core.CheckUsage().ok());
}

TEST_CASE("a job only the database holds is deleted with an event, a live one is refused") {
  Core core{TestOptions(1)};
  v1::Job stored;
  stored.set_id("j-stored");
  stored.set_project("team-a");
  stored.set_state(v1::JOB_STATE_SUCCEEDED);
  Effects fx;
  REQUIRE(core.DeleteStoredJob(stored, "by alice", FromMs(5), &fx).ok());
  CHECK(fx.deleted_jobs == std::vector<std::string>{"j-stored"});
  const std::vector<Event> deleted = Deletions(fx);
  REQUIRE(deleted.size() == 1);
  CHECK(deleted[0].reason == "job j-stored (project team-a, SUCCEEDED) deleted: by alice");

  stored.set_state(v1::JOB_STATE_RUNNING);
  Effects refused;
  CHECK(core.DeleteStoredJob(stored, "by alice", FromMs(6), &refused).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(refused.deleted_jobs.empty());
}

}  // namespace
}  // namespace trainctl::sched
