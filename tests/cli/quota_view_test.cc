#include "cli/quota_view.h"

#include <catch2/catch.hpp>

#include "common/spec_parse.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

v1::Job QueuedJob(const std::string& id, int32_t position,
                  const std::vector<std::string>& blockers) {
  v1::Job job;
  job.set_id(id);
  job.set_display_name("train " + id);
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  *job.mutable_create_time() = MsToTimestamp(kNowMs - 3600 * 1000);
  job.mutable_queue_status()->set_position(position);
  for (const std::string& message : blockers) {
    job.mutable_queue_status()->add_blockers()->set_message(message);
  }
  return job;
}

v1::Project MakeProject(const std::string& name) {
  v1::Project p;
  p.set_name(name);
  p.mutable_quota()->set_project(name);
  return p;
}

TEST_CASE("BlockerSummary shows the first blocker and how many more there are", "[quota_view]") {
  CHECK(BlockerSummary(QueuedJob("j", 1, {})) == "-");
  CHECK(BlockerSummary(QueuedJob("j", 1, {"QUOTA: a"})) == "QUOTA: a");
  CHECK(BlockerSummary(QueuedJob("j", 1, {"QUOTA: a", "CAPACITY: b", "PRIORITY: c"})) ==
        "QUOTA: a (+2 more)");
}

TEST_CASE("WaitingText counts from the last queueing, else from creation", "[quota_view]") {
  v1::Job job = QueuedJob("j", 1, {});
  CHECK(WaitingText(job, kNowMs) == "60m");
  *job.mutable_queue_time() = MsToTimestamp(kNowMs - 42000);
  CHECK(WaitingText(job, kNowMs) == "42s");
  CHECK(WaitingText(v1::Job(), kNowMs) == "-");
}

TEST_CASE("RenderQueue shows one row per job in the order given", "[quota_view]") {
  v1::ListQueueResponse response;
  *response.add_jobs() = QueuedJob("j-1", 1, {"QUOTA: project team-a needs 8 gpus"});
  v1::Job second = QueuedJob("j-2", 2, {"CAPACITY: no node has 8 free gpus", "PRIORITY: 1 job"});
  second.set_priority(-3);
  *response.add_jobs() = second;
  CHECK(RenderQueue(response.jobs(), kNowMs) ==
        "POSITION   ID    NAME        PROJECT   PRIORITY   WAITING   REASON\n"
        "1          j-1   train j-1   team-a    0          60m       QUOTA: project team-a needs 8 "
        "gpus\n"
        "2          j-2   train j-2   team-a    -3         60m       CAPACITY: no node has 8 free "
        "gpus (+1 more)\n");
  auto json = FormatQueue(response, OutputFormat::kJson, kNowMs);
  REQUIRE(json.ok());
  v1::ListQueueResponse back;
  REQUIRE(ParseYamlToMessage(*json, &back).ok());
  CHECK(back.jobs_size() == 2);
  CHECK(back.jobs(1).queue_status().blockers(1).message() == "PRIORITY: 1 job");
}

TEST_CASE("UsedOfLimitText and StrategyText", "[quota_view]") {
  CHECK(UsedOfLimitText("4", true, "8", "gpus") == "4 / 8 gpus");
  CHECK(UsedOfLimitText("4", false, "0", "gpus") == "4 / unlimited");
  CHECK(UsedOfLimitText("1", true, "3", "") == "1 / 3");
  v1::Quota q;
  CHECK(StrategyText(q) == "strict FIFO");
  q.set_queueing_strategy(v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  CHECK(StrategyText(q) == "best-effort FIFO (default starvation limit)");
  *q.mutable_starvation_limit() = MsToDuration(90000);
  CHECK(StrategyText(q) == "best-effort FIFO (starvation limit 1m30s)");
}

TEST_CASE("ResourcesText lists the non-zero amounts", "[quota_view]") {
  v1::Resources r;
  CHECK(ResourcesText(r, "nothing") == "nothing");
  r.set_gpus(1);
  CHECK(ResourcesText(r, "nothing") == "1 gpu");
  r.set_gpus(2);
  r.set_cpu(1.5);
  r.set_memory_mb(1024);
  CHECK(ResourcesText(r, "") == "2 gpus, 1.5 cpu, 1024 MiB");
}

TEST_CASE("RenderProject shows the quota, usage and borrowing", "[quota_view]") {
  v1::Project p = MakeProject("team-a");
  p.mutable_quota()->set_gpus(8);
  p.mutable_quota()->set_memory_mb(65536);
  p.mutable_quota()->set_cohort("research");
  p.mutable_quota()->set_run_as_user("trainer");
  p.mutable_quota()->set_reclaim(v1::RECLAIM_POLICY_LOWER_PRIORITY);
  p.mutable_quota()->set_preempt_within_project(v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
  p.mutable_quota()->mutable_borrowing_limit()->set_gpus(4);
  p.mutable_in_use()->set_gpus(10);
  p.mutable_in_use()->set_cpu(2.5);
  p.mutable_borrowed()->set_gpus(2);
  p.set_running_jobs(2);
  p.set_queued_jobs(5);
  p.set_replica_uid(65600);
  p.mutable_quota()->set_weight(2);
  p.mutable_usage()->set_gpu_seconds(36000);
  p.mutable_usage()->set_cpu_seconds(1800);
  p.mutable_usage()->set_share(0.0125);
  CHECK(RenderProject(p) ==
        "Project:       team-a\n"
        "Cohort:        research\n"
        "Strategy:      strict FIFO\n"
        "GPUs:          10 / 8 gpus\n"
        "CPU:           2.5 / unlimited\n"
        "Memory:        0 / 65536 MiB\n"
        "Running jobs:  2 / unlimited\n"
        "Queued jobs:   5\n"
        "Borrowed:      2 gpus\n"
        "May borrow:    4 gpus\n"
        "Weight:        2\n"
        "Usage:         10 GPU-h, 0.5 CPU-h (decayed)\n"
        "Share:         0.0125\n"
        "Reclaim:       lower-priority\n"
        "Preemption:    lower-priority within the project\n"
        "Run as:        trainer\n"
        "Project uid:   65600 (trainctl-team-a)\n");

  v1::Project fallback = MakeProject("default");
  fallback.set_default_quota(true);
  fallback.mutable_quota()->set_max_running_jobs(1);
  CHECK(RenderProject(fallback) ==
        "Project:       default (default quota)\n"
        "Cohort:        -\n"
        "Strategy:      strict FIFO\n"
        "GPUs:          0 / unlimited\n"
        "CPU:           0 / unlimited\n"
        "Memory:        0 / unlimited\n"
        "Running jobs:  0 / 1\n"
        "Queued jobs:   0\n"
        "Borrowed:      nothing\n"
        "Weight:        1\n"
        "Usage:         none (decayed)\n"
        "Share:         0\n"
        "Reclaim:       never\n"
        "Preemption:    never within the project\n"
        "Run as:        project uid\n"
        "Project uid:   none yet (given at its first job)\n");
}

TEST_CASE("ProjectRow shows used/limit, a dash for no limit", "[quota_view]") {
  v1::Project p = MakeProject("team-a");
  p.mutable_quota()->set_gpus(8);
  p.mutable_quota()->set_cpu(0.5);
  p.mutable_quota()->set_max_running_jobs(0);  // zero is a limit, not "unlimited"
  p.mutable_in_use()->set_gpus(4);
  p.mutable_in_use()->set_memory_mb(2048);
  p.set_queued_jobs(3);
  CHECK(ProjectRow(p) ==
        std::vector<std::string>{"team-a", "-", "4/8", "0/0.5", "2048/-", "0/0", "3", "1", "0"});

  v1::ListProjectsResponse response;
  *response.add_projects() = p;
  v1::Project b = MakeProject("vision");
  b.mutable_quota()->set_cohort("research");
  b.mutable_quota()->set_weight(0.5);
  b.mutable_usage()->set_share(1.25);
  *response.add_projects() = b;
  CHECK(RenderProjectList(response.projects()) ==
        "NAME     COHORT     GPUS   CPU     MEMORY   RUNNING   QUEUED   WEIGHT   SHARE\n"
        "team-a   -          4/8    0/0.5   2048/-   0/0       3        1        0\n"
        "vision   research   0/-    0/-     0/-      0/-       0        0.5      1.25\n");
  auto yaml = FormatProjects(response, OutputFormat::kYaml);
  REQUIRE(yaml.ok());
  v1::ListProjectsResponse back;
  REQUIRE(ParseYamlToMessage(*yaml, &back).ok());
  REQUIRE(back.projects_size() == 2);
  CHECK(back.projects(0).quota().cpu() == 0.5);
  CHECK(back.projects(0).quota().has_max_running_jobs());
}

}  // namespace
}  // namespace trainctl::cli
