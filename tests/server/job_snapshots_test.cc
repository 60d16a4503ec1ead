// JobSnapshots: reads served from what the loop published — listing, queue status from the
// published queue, replacement, and watchers that miss no update.
#include "server/job_snapshots.h"

#include <catch2/catch.hpp>
#include <map>
#include <vector>

#include "common/time_util.h"

namespace trainctl::server {
namespace {

JobSnapshots::JobPtr MakeJob(const std::string& id, int64_t create_ms, v1::JobState state,
                             const std::string& project = "default") {
  auto job = std::make_shared<v1::Job>();
  job->set_id(id);
  job->set_project(project);
  job->set_state(state);
  *job->mutable_create_time() = MsToTimestamp(create_ms);
  v1::WorkerPool* pool = job->mutable_spec()->add_worker_pools();
  pool->set_name("chief");
  pool->mutable_resources()->set_gpus(2);
  v1::Replica* r = job->add_replicas();
  r->set_name("chief-0");
  r->set_pool("chief");
  return job;
}

// Records every job pushed to it.
class Recorder : public JobWatcher {
 public:
  bool Push(const v1::Job& job) override {
    seen.push_back(job);
    return !done;
  }
  std::vector<v1::Job> seen;
  bool done = false;
};

TEST_CASE("list pages newest first and filters by state and project") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  std::vector<JobSnapshots::JobPtr> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(MakeJob("j-" + std::to_string(i), 1000 + 10 * i,
                           i == 3 ? v1::JOB_STATE_RUNNING : v1::JOB_STATE_SUCCEEDED,
                           i == 4 ? "team-a" : "default"));
  }
  snapshots.Publish(jobs, nullptr);

  v1::ListJobsRequest req;
  req.set_page_size(2);
  absl::StatusOr<v1::ListJobsResponse> page1 = snapshots.List(req, 0);
  REQUIRE(page1.ok());
  REQUIRE(page1->jobs_size() == 2);
  CHECK(page1->jobs(0).id() == "j-4");
  CHECK(page1->jobs(1).id() == "j-3");
  REQUIRE(!page1->next_page_token().empty());
  req.set_page_token(page1->next_page_token());
  absl::StatusOr<v1::ListJobsResponse> page2 = snapshots.List(req, 0);
  CHECK(page2->jobs(0).id() == "j-2");
  req.set_page_token(page2->next_page_token());
  absl::StatusOr<v1::ListJobsResponse> page3 = snapshots.List(req, 0);
  CHECK(page3->jobs_size() == 1);
  CHECK(page3->next_page_token().empty());

  v1::ListJobsRequest running;
  running.add_states(v1::JOB_STATE_RUNNING);
  REQUIRE(snapshots.List(running, 0)->jobs_size() == 1);
  CHECK(snapshots.List(running, 0)->jobs(0).id() == "j-3");
  v1::ListJobsRequest team;
  team.set_project("team-a");
  CHECK(snapshots.List(team, 0)->jobs_size() == 1);

  v1::ListJobsRequest bad;
  bad.set_page_size(5000);
  CHECK(snapshots.List(bad, 0).status().message() == "pageSize must be 1..1000, got 5000");
  for (const char* token : {"nonsense", "-1000:", "abc:j-1"}) {
    v1::ListJobsRequest foreign;
    foreign.set_page_token(token);
    CHECK(snapshots.List(foreign, 0).status().message() ==
          "pageToken is not one this server returned");
  }
}

TEST_CASE("list filters by labels: every KEY=VALUE of the selector must match") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  auto labelled = [](const std::string& id, int64_t ms, std::map<std::string, std::string> labels) {
    auto job = std::make_shared<v1::Job>(*MakeJob(id, ms, v1::JOB_STATE_RUNNING));
    job->mutable_spec()->mutable_labels()->insert(labels.begin(), labels.end());
    return JobSnapshots::JobPtr(job);
  };
  snapshots.Publish({labelled("j-1", 1000, {{"team", "vision"}, {"stage", "prod"}}),
                     labelled("j-2", 2000, {{"team", "vision"}, {"stage", "dev"}}),
                     labelled("j-3", 3000, {{"team", "nlp"}}), labelled("j-4", 4000, {})},
                    nullptr);
  auto ids = [&](const std::string& selector) {
    v1::ListJobsRequest req;
    req.set_label_selector(selector);
    absl::StatusOr<v1::ListJobsResponse> resp = snapshots.List(req, 0);
    REQUIRE(resp.ok());
    std::vector<std::string> out;
    for (const v1::Job& j : resp->jobs()) out.push_back(j.id());
    return out;
  };
  CHECK(ids("") == std::vector<std::string>{"j-4", "j-3", "j-2", "j-1"});
  CHECK(ids("team=vision") == std::vector<std::string>{"j-2", "j-1"});
  CHECK(ids("team=vision,stage=prod") == std::vector<std::string>{"j-1"});
  CHECK(ids("team=") == std::vector<std::string>{});  // an empty value matches only itself
  CHECK(ids("owner=alice") == std::vector<std::string>{});
  for (const char* bad : {"team", "=vision", "team=vision,,stage=prod"}) {
    INFO(bad);
    v1::ListJobsRequest req;
    req.set_label_selector(bad);
    absl::StatusOr<v1::ListJobsResponse> resp = snapshots.List(req, 0);
    CHECK(resp.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(resp.status().message()),
               Catch::StartsWith("labelSelector must be KEY=VALUE[,KEY=VALUE...], got \""));
  }
}

TEST_CASE("a state filter that names no job state is refused") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  for (int bad : {0, 99}) {
    v1::ListJobsRequest req;
    req.add_states(v1::JOB_STATE_RUNNING);
    req.add_states(static_cast<v1::JobState>(bad));
    absl::StatusOr<v1::ListJobsResponse> resp = snapshots.List(req, 0);
    CHECK(resp.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(resp.status().message() ==
          "states must hold job states (QUEUED..CANCELLED), got " + std::to_string(bad));
  }
}

TEST_CASE("a page ends before it outgrows kMaxPageBytes, and holds one job at least") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  std::vector<JobSnapshots::JobPtr> jobs;
  for (int i = 0; i < 5; ++i) {
    auto job = std::const_pointer_cast<v1::Job>(
        MakeJob("j-" + std::to_string(i), 1000 + i, v1::JOB_STATE_SUCCEEDED));
    // Just under 0.9 MiB each, and the last one alone over the page's bytes.
    const size_t bytes = i == 4 ? JobSnapshots::kMaxPageBytes + 1 : (900 << 10);
    (*job->mutable_spec()->mutable_worker_pools(0)->mutable_env())["BIG"] = std::string(bytes, 'x');
    jobs.push_back(job);
  }
  snapshots.Publish(jobs, nullptr);
  v1::ListJobsRequest req;
  std::vector<int> sizes;
  do {
    absl::StatusOr<v1::ListJobsResponse> page = snapshots.List(req, 0);
    REQUIRE(page.ok());
    sizes.push_back(page->jobs_size());
    req.set_page_token(page->next_page_token());
  } while (!req.page_token().empty());
  // j-4 alone; then j-3, j-2, j-1 (2.7 MiB); then j-0.
  CHECK(sizes == std::vector<int>{1, 3, 1});
}

TEST_CASE("the basic view leaves out commands, env and attempts, and pages by its own bytes") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  std::vector<JobSnapshots::JobPtr> jobs;
  for (int i = 0; i < 5; ++i) {
    auto job = std::const_pointer_cast<v1::Job>(
        MakeJob("j-" + std::to_string(i), 1000 + i, v1::JOB_STATE_SUCCEEDED));
    v1::WorkerPool* pool = job->mutable_spec()->mutable_worker_pools(0);
    (*pool->mutable_env())["BIG"] = std::string(900 << 10, 'x');
    pool->add_command("/bin/train");
    pool->set_replica_count(3);
    job->add_attempts()->set_number(1);
    jobs.push_back(job);
  }
  snapshots.Publish(jobs, nullptr);
  v1::ListJobsRequest req;
  req.set_view(v1::JOB_VIEW_BASIC);
  absl::StatusOr<v1::ListJobsResponse> page = snapshots.List(req, 0);
  REQUIRE(page.ok());
  // 4.5 MiB in full, a few hundred bytes in this view: one page.
  CHECK(page->jobs_size() == 5);
  CHECK(page->next_page_token().empty());
  const v1::Job& basic = page->jobs(0);
  CHECK(basic.spec().worker_pools(0).env().empty());
  CHECK(basic.spec().worker_pools(0).command().empty());
  CHECK(basic.spec().worker_pools(0).replica_count() == 3);
  CHECK(basic.attempts().empty());
  CHECK(basic.id() == "j-4");
  // The full view is the default, paged by its bytes.
  req.clear_view();
  page = snapshots.List(req, 0);
  REQUIRE(page.ok());
  CHECK(page->jobs_size() == 3);
  CHECK(page->jobs(0).spec().worker_pools(0).env().at("BIG").size() == (900 << 10));
}

TEST_CASE("a queued job's status is computed from the published queue") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  auto queue = std::make_shared<sched::QueueState>();
  queue->order = sched::MakeQueueOrder({{"default", {"j-0", "j-1"}}});
  queue->free.push_back({"node-a", {8, 8192, 1}});
  snapshots.Publish(
      {MakeJob("j-0", 1000, v1::JOB_STATE_QUEUED), MakeJob("j-1", 1001, v1::JOB_STATE_QUEUED),
       MakeJob("j-2", 1002, v1::JOB_STATE_RUNNING)},
      queue);
  absl::StatusOr<v1::Job> second = snapshots.Get("j-1", 5000);
  REQUIRE(second.ok());
  const v1::QueueStatus& qs = second->queue_status();
  CHECK(qs.position() == 2);
  REQUIRE(qs.jobs_ahead_size() == 1);
  CHECK(qs.jobs_ahead(0) == "j-0");
  REQUIRE(qs.blockers_size() == 2);
  CHECK(qs.blockers(0).kind() == "CAPACITY");
  CHECK(qs.blockers(1).message() == "PRIORITY: 1 job ahead in default");
  // Only queued jobs carry a queue status.
  CHECK(!snapshots.Get("j-2", 5000)->has_queue_status());
  CHECK(snapshots.Get("j-9", 5000).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a publication replaces a job's snapshot, a reader keeps the one it holds") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_QUEUED)}, nullptr);
  absl::StatusOr<v1::Job> before = snapshots.Get("j-0", 0);
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_RUNNING)}, nullptr);
  CHECK(before->state() == v1::JOB_STATE_QUEUED);
  CHECK(snapshots.Get("j-0", 0)->state() == v1::JOB_STATE_RUNNING);
  v1::ListJobsRequest all;
  CHECK(snapshots.List(all, 0)->jobs_size() == 1);  // replaced, not listed twice
}

TEST_CASE("a watcher gets the current snapshot, then every publication until a terminal state") {
  WatchHub hub;
  JobSnapshots snapshots(&hub);
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_PENDING)}, nullptr);
  auto watcher = std::make_shared<Recorder>();
  REQUIRE(snapshots.Watch("j-0", watcher).ok());
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_RUNNING)}, nullptr);
  snapshots.Publish({MakeJob("j-1", 1001, v1::JOB_STATE_RUNNING)}, nullptr);  // another job
  watcher->done = true;  // the stream ends after this push
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_SUCCEEDED)}, nullptr);
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_SUCCEEDED)}, nullptr);
  REQUIRE(watcher->seen.size() == 3);
  CHECK(watcher->seen[0].state() == v1::JOB_STATE_PENDING);
  CHECK(watcher->seen[1].state() == v1::JOB_STATE_RUNNING);
  CHECK(watcher->seen[2].state() == v1::JOB_STATE_SUCCEEDED);

  // A terminal job's watcher gets its one snapshot and is not subscribed.
  auto late = std::make_shared<Recorder>();
  REQUIRE(snapshots.Watch("j-0", late).ok());
  snapshots.Publish({MakeJob("j-0", 1000, v1::JOB_STATE_SUCCEEDED)}, nullptr);
  CHECK(late->seen.size() == 1);
  CHECK(snapshots.Watch("j-9", late).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a watched queued job comes with its queue status: its position, whom it preempts") {
  WatchHub hub;
  JobSnapshots snapshots(&hub, [] { return int64_t{5000}; });
  auto queue = std::make_shared<sched::QueueState>();
  queue->order = sched::MakeQueueOrder({{"default", {"j-0", "j-1"}}});
  queue->free.push_back({"node-a", {8, 8192, 1}});
  queue->preempting["j-1"] = {"j-victim"};
  snapshots.Publish(
      {MakeJob("j-0", 1000, v1::JOB_STATE_QUEUED), MakeJob("j-1", 1001, v1::JOB_STATE_QUEUED)},
      queue);
  auto watcher = std::make_shared<Recorder>();
  REQUIRE(snapshots.Watch("j-1", watcher).ok());
  snapshots.Publish({MakeJob("j-1", 1001, v1::JOB_STATE_QUEUED)}, nullptr);
  REQUIRE(watcher->seen.size() == 2);
  for (const v1::Job& seen : watcher->seen) {
    CHECK(seen.queue_status().position() == 2);
    REQUIRE(seen.queue_status().preempting_size() == 1);
    CHECK(seen.queue_status().preempting(0) == "j-victim");
  }
}

}  // namespace
}  // namespace trainctl::server
