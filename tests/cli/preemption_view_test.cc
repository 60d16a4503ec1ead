// How `get`, `describe` and `queue` show preemption: the job a waiting job is preempting, a
// preemption under way and a past one, the count, the last checkpoint, each replica's step.
#include <catch2/catch.hpp>

#include "cli/describe_view.h"
#include "cli/job_view.h"
#include "cli/quota_view.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

v1::Job Victim(v1::JobState state) {
  v1::Job job;
  job.set_id("j-borrow");
  job.set_display_name("borrow");
  job.set_project("team-b");
  job.set_state(state);
  job.set_preemptions(1);
  v1::Preemption* p = job.mutable_preemption();
  p->set_preempting_job("j-urgent");
  p->set_reason("project team-a reclaims 4 gpus it lent");
  *p->mutable_decision_time() = MsToTimestamp(kNowMs - kMinuteMs);
  *p->mutable_deadline() = MsToTimestamp(kNowMs + 4 * kMinuteMs);
  p->set_attempt(1);
  *job.mutable_last_checkpoint_time() = MsToTimestamp(kNowMs - 30'000);
  v1::Replica* r = job.add_replicas();
  r->set_name("chief-0");
  r->set_node("n1");
  r->set_state(v1::REPLICA_STATE_RUNNING);
  r->set_step(1200);
  return job;
}

TEST_CASE("get shows a preemption under way, then a past one", "[preemption_view]") {
  const std::string running = RenderJobSummary(Victim(v1::JOB_STATE_RUNNING), kNowMs);
  CHECK_THAT(running, Catch::Contains("Preemptions:      1\n"));
  CHECK_THAT(running, Catch::Contains(
                          "Preempted:        by j-urgent (project team-a reclaims 4 gpus it "
                          "lent); replicas checkpoint and stop by 2026-01-01T00:04:00Z (in 4m)"));
  CHECK_THAT(running, Catch::Contains("Last checkpoint:  2025-12-31T23:59:30Z (30s ago)"));

  const std::string queued = RenderJobSummary(Victim(v1::JOB_STATE_QUEUED), kNowMs);
  CHECK_THAT(queued, Catch::Contains("Preempted:        by j-urgent at 2025-12-31T23:59:00Z, "
                                     "attempt 1 (project team-a reclaims 4 gpus it lent)"));
}

TEST_CASE("describe shows each replica's step", "[preemption_view]") {
  const std::string out = RenderJobDescription(Victim(v1::JOB_STATE_RUNNING), kNowMs);
  CHECK_THAT(out, Catch::Contains("STEP"));
  CHECK_THAT(out, Catch::Contains("1200"));
  v1::Job no_steps = Victim(v1::JOB_STATE_RUNNING);
  no_steps.mutable_replicas(0)->set_step(0);
  CHECK_THAT(RenderJobDescription(no_steps, kNowMs), !Catch::Contains("STEP"));
}

TEST_CASE("get and queue show a waiting job that preempts others, and which", "[preemption_view]") {
  v1::Job urgent;
  urgent.set_id("j-urgent");
  urgent.set_display_name("urgent");
  urgent.set_project("team-a");
  urgent.set_priority(10);
  urgent.set_state(v1::JOB_STATE_QUEUED);
  *urgent.mutable_create_time() = MsToTimestamp(kNowMs - kMinuteMs);
  v1::QueueStatus* qs = urgent.mutable_queue_status();
  qs->set_position(1);
  qs->add_preempting("j-borrow");
  qs->add_preempting("j-other");
  qs->add_blockers()->set_message(
      "PREEMPTING: waiting for j-borrow, j-other to checkpoint and stop to make room for it");
  CHECK_THAT(RenderJobSummary(urgent, kNowMs), Catch::Contains("Preempting:  j-borrow, j-other\n"));

  v1::ListQueueResponse response;
  *response.add_jobs() = urgent;
  CHECK(RenderQueue(response.jobs(), kNowMs) ==
        "POSITION   ID         NAME     PROJECT   PRIORITY   WAITING   REASON\n"
        "1          j-urgent   urgent   team-a    10         60s       PREEMPTING: waiting for "
        "j-borrow, j-other to checkpoint and stop to make room for it\n");
}

}  // namespace
}  // namespace trainctl::cli
