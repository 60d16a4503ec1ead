// Progress reports in the core: the step and time a replica reports are kept, written to the job's
// row at most once per ProgressWriteInterval, and forgotten when a new run starts.
#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/job_lifecycle.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

v1::ReplicaProgress StepReport(const v1::LaunchReplica& launch, int64_t time_ms, int64_t step) {
  v1::ReplicaProgress p;
  p.set_run_id(launch.run_id());
  p.set_time_ms(time_ms);
  p.set_step(step);
  return p;
}

TEST_CASE("progress: the step is kept, and reports write the row at most every 30 s") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(0), &id);
  f.StartAll(launches);
  const std::string node = f.NodeOf(launches[0]);

  Effects first;
  f.core.ReplicaProgress(node, StepReport(launches[0], f.now + 1'000, 100), FromMs(f.now + 1'000),
                         &first);
  CHECK(first.jobs.count(id) == 1);  // the first report is written
  CHECK(f.Job(id).replicas(0).step() == 100);

  // A report 10 s later changes memory (what GetJob shows) but writes nothing.
  Effects second;
  f.core.ReplicaProgress(node, StepReport(launches[0], f.now + 11'000, 200), FromMs(f.now + 11'000),
                         &second);
  CHECK(second.jobs.empty());
  CHECK(f.Job(id).replicas(0).step() == 200);
  CHECK(TimestampToMs(f.Job(id).replicas(0).last_progress_time()) == f.now + 11'000);

  // A report naming no step keeps the last one; 30 s after the last write, the row is written.
  Effects third;
  f.core.ReplicaProgress(node, StepReport(launches[0], f.now + 31'000, 0), FromMs(f.now + 31'000),
                         &third);
  CHECK(third.jobs.count(id) == 1);
  CHECK(f.Job(id).replicas(0).step() == 200);

  // Through the API the same; a checkpoint is always written (it ends a preemption's grace).
  Effects api;
  REQUIRE(
      f.core.ReportProgress(id, "chief-0", 300, /*checkpoint=*/false, FromMs(f.now + 32'000), &api)
          .ok());
  CHECK(api.jobs.empty());
  CHECK(f.Job(id).replicas(0).step() == 300);
  Effects checkpoint;
  REQUIRE(f.core
              .ReportProgress(id, "chief-0", 0, /*checkpoint=*/true, FromMs(f.now + 33'000),
                              &checkpoint)
              .ok());
  CHECK(checkpoint.jobs.count(id) == 1);
  CHECK(f.Job(id).has_last_checkpoint_time());
}

TEST_CASE("progress: a short hang timeout writes more often, a new run forgets the step") {
  RetryPolicy policy;
  CHECK(ProgressWriteInterval(policy) == absl::Seconds(30));
  policy.hang_timeout_ms = 8'000;
  CHECK(ProgressWriteInterval(policy) == absl::Seconds(2));

  Fixture f;
  v1::JobSpec spec = Spec(0);
  spec.mutable_scheduling()->mutable_hang_timeout()->set_seconds(8);
  spec.mutable_scheduling()->set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
  std::string id;
  auto launches = f.SubmitAndPlace(spec, &id);
  f.StartAll(launches);
  const std::string node = f.NodeOf(launches[0]);
  Effects fx;
  f.core.ReplicaProgress(node, StepReport(launches[0], f.now + 1'000, 7), FromMs(f.now + 1'000),
                         &fx);
  Effects soon;
  f.core.ReplicaProgress(node, StepReport(launches[0], f.now + 3'500, 8), FromMs(f.now + 3'500),
                         &soon);
  CHECK(soon.jobs.count(id) == 1);  // 2.5 s after the last write: due with a 2 s interval

  // The run fails and the replica restarts in place: the new run has no step and no progress yet.
  Effects ended;
  f.core.ReplicaExited(node, ExitedCode(launches[0].run_id(), 1), FromMs(f.now + 4'000), &ended);
  const v1::Job job = f.Job(id);
  const v1::Replica& r = job.replicas(0);
  CHECK(r.restart_count() == 1);
  CHECK(r.step() == 0);
  CHECK_FALSE(r.has_last_progress_time());
}

}  // namespace
}  // namespace trainctl::sched
