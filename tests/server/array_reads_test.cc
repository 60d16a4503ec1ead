// The reads of a job array's elements (server/job_snapshots.cc, scheduler/job_arrays.h): `list`
// leaves elements out and `list --array` shows only them, with one row first for those not
// started; `get` of an element not started is made from the array; a watcher of such an element
// sees it change with its array (cancelled before it started) and, once it starts, as a job of
// its own.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "server/job_snapshots.h"

namespace trainctl::server {
namespace {

// An array j-arr of indices 0-5 with parallelism 2: `started` started (their jobs are published
// separately), `cancelled` cancelled before they started.
JobSnapshots::JobPtr Array(const std::string& started, const std::string& cancelled = "",
                           v1::JobState state = v1::JOB_STATE_RUNNING) {
  auto job = std::make_shared<v1::Job>();
  job->set_id("j-arr");
  job->set_display_name("sweep");
  job->set_project("default");
  job->set_state(state);
  *job->mutable_create_time() = MsToTimestamp(1000);
  job->mutable_spec()->set_display_name("sweep");
  job->mutable_spec()->mutable_array()->set_indices("0-5");
  job->mutable_spec()->mutable_array()->set_parallelism(2);
  v1::WorkerPool* pool = job->mutable_spec()->add_worker_pools();
  pool->set_name("chief");
  pool->add_args("--i={{index}}");
  v1::ArrayStatus* s = job->mutable_array();
  s->set_count(6);
  s->set_started_indices(started);
  s->set_cancelled_indices(cancelled);
  s->set_running(2);
  s->set_waiting(4 - (cancelled.empty() ? 0 : 1));
  return job;
}

JobSnapshots::JobPtr Element(int index, int64_t create_ms) {
  auto job = std::make_shared<v1::Job>();
  job->set_id("j-arr-" + std::to_string(index));
  job->set_project("default");
  job->set_state(v1::JOB_STATE_RUNNING);
  *job->mutable_create_time() = MsToTimestamp(create_ms);
  job->mutable_element()->set_array("j-arr");
  job->mutable_element()->set_index(index);
  job->mutable_element()->set_count(6);
  return job;
}

class ElementRecorder : public JobWatcher {
 public:
  bool Push(const v1::Job& job) override {
    seen.push_back(job);
    return true;
  }
  std::vector<v1::Job> seen;
};

TEST_CASE("array reads: list leaves elements out, list --array shows them and one waiting row") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  snapshots.Publish({Array("0-1"), Element(0, 2000), Element(1, 3000)}, nullptr);
  absl::StatusOr<v1::ListJobsResponse> all = snapshots.List(v1::ListJobsRequest(), 0);
  REQUIRE(all.ok());
  REQUIRE(all->jobs_size() == 1);
  CHECK(all->jobs(0).id() == "j-arr");
  CHECK(all->jobs(0).queue_status().blockers(0).kind() == "ARRAY_LIMIT");

  v1::ListJobsRequest req;
  req.set_array("j-arr");
  absl::StatusOr<v1::ListJobsResponse> elements = snapshots.List(req, 0);
  REQUIRE(elements.ok());
  REQUIRE(elements->jobs_size() == 3);
  CHECK(elements->jobs(0).id() == "j-arr-[2-5]");
  CHECK(elements->jobs(0).display_name() == "sweep (4 elements not started)");
  CHECK(elements->jobs(0).state() == v1::JOB_STATE_QUEUED);
  CHECK(elements->jobs(1).id() == "j-arr-1");
  CHECK(elements->jobs(2).id() == "j-arr-0");
  // Only running elements asked for: no waiting row.
  req.add_states(v1::JOB_STATE_RUNNING);
  CHECK(snapshots.List(req, 0)->jobs_size() == 2);
  // A job that is not an array is refused by name.
  v1::ListJobsRequest wrong;
  wrong.set_array("j-arr-0");
  CHECK_THAT(std::string(snapshots.List(wrong, 0).status().message()),
             Catch::Contains("job j-arr-0 is not a job array"));
}

TEST_CASE("array reads: get and watch of an element not started") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  snapshots.Publish({Array("0-1"), Element(0, 2000), Element(1, 3000)}, nullptr);
  absl::StatusOr<v1::Job> four = snapshots.Get("j-arr-4", 0);
  REQUIRE(four.ok());
  CHECK(four->state() == v1::JOB_STATE_QUEUED);
  CHECK(four->element().array() == "j-arr");
  CHECK(four->element().index() == 4);
  CHECK(four->spec().worker_pools(0).args(0) == "--i=4");
  CHECK(four->queue_reason().rfind("ARRAY_LIMIT: 2 elements of array j-arr", 0) == 0);
  CHECK(absl::IsNotFound(snapshots.Get("j-arr-9", 0).status()));  // not one of its indices
  CHECK(absl::IsNotFound(snapshots.Get("j-nope-1", 0).status()));

  auto watch4 = std::make_shared<ElementRecorder>();
  auto watch5 = std::make_shared<ElementRecorder>();
  REQUIRE(snapshots.Watch("j-arr-4", watch4).ok());
  REQUIRE(snapshots.Watch("j-arr-5", watch5).ok());
  REQUIRE(watch4->seen.size() == 1);
  CHECK(watch4->seen[0].state() == v1::JOB_STATE_QUEUED);
  // Element 5 is cancelled before it started; element 4 starts as a job of its own.
  snapshots.Publish({Array("0-1,4", "5"), Element(4, 4000)}, nullptr);
  REQUIRE(watch5->seen.size() == 2);
  CHECK(watch5->seen[1].state() == v1::JOB_STATE_CANCELLED);
  REQUIRE(watch4->seen.size() == 2);
  CHECK(watch4->seen[1].state() == v1::JOB_STATE_RUNNING);
  CHECK(watch4->seen[1].create_time().seconds() == 4);
}

}  // namespace
}  // namespace trainctl::server
