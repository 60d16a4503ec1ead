// How `get` and `queue` show the cluster's reservation: the reserved nodes and the expected start
// of the job that holds it (a START column while one does), and an unknown start.
#include <catch2/catch.hpp>

#include "cli/job_view.h"
#include "cli/quota_view.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

v1::Job Queued(const std::string& id, int32_t position) {
  v1::Job job;
  job.set_id(id);
  job.set_display_name("train");
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  *job.mutable_create_time() = MsToTimestamp(kNowMs - kMinuteMs);
  job.mutable_queue_status()->set_position(position);
  return job;
}

TEST_CASE("get shows the reserved nodes and the expected start, queue a START column",
          "[reservation_view]") {
  v1::Job gang = Queued("j-gang", 1);
  v1::QueueStatus* qs = gang.mutable_queue_status();
  qs->add_reserved_nodes("node-a");
  qs->add_reserved_nodes("node-b");
  *qs->mutable_expected_start_time() = MsToTimestamp(kNowMs + 4 * kMinuteMs);
  qs->add_blockers()->set_message("CAPACITY: no node has 4 free cpu cores for chief-0");
  const std::string start = FormatRfc3339(kNowMs + 4 * kMinuteMs);
  CHECK(ExpectedStartText(gang, kNowMs) == start + " (in 4m)");
  CHECK_THAT(
      RenderJobSummary(gang, kNowMs),
      Catch::Contains("Reserved:  node-a, node-b; expected to start at " + start + " (in 4m)\n"));

  v1::Job small = Queued("j-small", 1);
  small.set_project("team-b");
  small.mutable_queue_status()->add_blockers()->set_message(
      "RESERVATION: the room it fits in (node-a, node-b) is kept for j-gang");
  CHECK(ExpectedStartText(small, kNowMs).empty());
  CHECK(RenderJobSummary(small, kNowMs).find("Reserved:") == std::string::npos);

  v1::ListQueueResponse response;
  *response.add_jobs() = gang;
  *response.add_jobs() = small;
  const std::string table = RenderQueue(response.jobs(), kNowMs);
  CHECK_THAT(table, Catch::StartsWith("POSITION   ID        NAME    PROJECT   PRIORITY   WAITING   "
                                      "START"));
  CHECK_THAT(table, Catch::Contains(start + " (in 4m)"));
  CHECK_THAT(table, Catch::Contains("60s       -    "));

  // Unknown: a job it waits for has no timeout.
  gang.mutable_queue_status()->clear_expected_start_time();
  CHECK(ExpectedStartText(gang, kNowMs) == "unknown");
  CHECK_THAT(RenderJobSummary(gang, kNowMs),
             Catch::Contains("node-a, node-b; start unknown (a job it waits for has no "
                             "scheduling.timeout)"));
  // No reservation anywhere: no START column.
  response.mutable_jobs(0)->mutable_queue_status()->clear_reserved_nodes();
  CHECK(RenderQueue(response.jobs(), kNowMs).find("START") == std::string::npos);
}

}  // namespace
}  // namespace trainctl::cli
