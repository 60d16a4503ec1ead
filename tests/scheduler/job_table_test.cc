// JobTable on its own: ids, creation order, current runs, the active set, listing and where the
// log of a run lives.
#include "scheduler/job_table.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

// A QUEUED job of `project` with replicas chief-0 and worker-0, created `created_s` after kT0.
Job MakeJob(const std::string& id, int created_s, const std::string& project = "p",
            v1::JobState state = v1::JOB_STATE_QUEUED) {
  Job job;
  job.id = id;
  job.project = project;
  job.state = state;
  job.create_time = kT0 + absl::Seconds(created_s);
  for (const char* name : {"chief-0", "worker-0"}) {
    Replica r;
    r.name = name;
    r.node = "node-a";
    job.replicas.push_back(r);
  }
  return job;
}

// `job` placed: attempt `attempt` current, each replica on node-a at restart `restart`.
Job Placed(Job job, int attempt, int restart = 0,
           v1::ReplicaState state = v1::REPLICA_STATE_RUNNING) {
  for (int i = 1; i <= attempt; ++i) {
    Attempt a;
    a.number = i;
    job.attempts.push_back(a);
  }
  job.state = v1::JOB_STATE_RUNNING;
  for (Replica& r : job.replicas) {
    r.restart_count = restart;
    r.state = state;
  }
  return job;
}

TEST_CASE("JobTable: ids are j- and 10 lowercase characters, repeatable from a seed") {
  JobTable a(42);
  JobTable b(42);
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    // Distinct, as NextCreateTime makes them.
    const absl::Time t = absl::FromUnixSeconds(1795000000) + absl::Milliseconds(i);
    const std::string id = a.NewId(t);
    CHECK(id == b.NewId(t));
    REQUIRE(id.size() == 12);
    CHECK(id.rfind("j-", 0) == 0);
    for (char c : id.substr(2)) CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')));
    seen.insert(id);
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("JobTable: a job the database holds keeps later creation times, and ids, after it") {
  JobTable jobs(3);
  // A restarted daemon whose clock stepped back behind a job it no longer holds in memory.
  jobs.NoteCreated(kT0 + absl::Hours(1));
  jobs.NoteCreated(kT0);  // an older one changes nothing
  const absl::Time t = jobs.NextCreateTime(kT0);
  CHECK(t == kT0 + absl::Hours(1) + absl::Milliseconds(1));
}

TEST_CASE("JobTable: ids sort as their creation times do") {
  JobTable jobs(7);
  // Milliseconds since 2020 in base 36, digits first.
  CHECK(jobs.NewId(absl::FromUnixSeconds(1577836800)).substr(0, 10) == "j-00000000");
  CHECK(jobs.NewId(absl::FromUnixSeconds(1577836800) + absl::Milliseconds(36 + 35)).substr(0, 10) ==
        "j-0000001z");
  CHECK(jobs.NewId(absl::FromUnixSeconds(0)).substr(0, 10) == "j-00000000");  // before 2020
  std::string last;
  absl::Time t = absl::FromUnixSeconds(1795000000);  // 2026-11-18
  for (int i = 0; i < 2000; ++i) {
    t = jobs.NextCreateTime(t + absl::Milliseconds(i % 7 == 0 ? 50 : 0));
    const std::string id = jobs.NewId(t);
    CHECK(id > last);
    last = id;
  }
}

TEST_CASE("JobTable: a clock before 2020 still gives every job an id of its own") {
  JobTable jobs(3);
  std::set<std::string> ids;
  absl::Time t = absl::FromUnixSeconds(1000);  // every id falls in millisecond 0
  for (int i = 0; i < 3000; ++i) {
    t = jobs.NextCreateTime(t);
    const std::string id = jobs.NewId(t);
    CHECK(id.substr(0, 10) == "j-00000000");
    CHECK(ids.insert(id).second);
    jobs.Insert(MakeJob(id, 0));
  }
  // 2 drawn characters give 1,296 ids; at least the others drew a third.
  CHECK(std::count_if(ids.begin(), ids.end(),
                      [](const std::string& id) { return id.size() > 12; }) >= 3000 - 1296);
}

TEST_CASE("JobTable: creation times strictly increase, within a millisecond too") {
  JobTable jobs(1);
  const absl::Time first = jobs.NextCreateTime(kT0);
  CHECK(first == kT0);
  const absl::Time second = jobs.NextCreateTime(kT0);  // the same millisecond
  const absl::Time third = jobs.NextCreateTime(kT0 + absl::Microseconds(10));
  CHECK(second == kT0 + absl::Milliseconds(1));
  CHECK(third == kT0 + absl::Milliseconds(2));
  CHECK(ToMs(first) < ToMs(second));  // distinct in the stored milliseconds too
  CHECK(jobs.NextCreateTime(kT0 - absl::Seconds(5)) == kT0 + absl::Milliseconds(3));  // a step back
  CHECK(jobs.NextCreateTime(kT0 + absl::Seconds(1)) == kT0 + absl::Seconds(1));

  JobTable restored(1);
  restored.Restore({MakeJob("j-old", 60)}, {});
  CHECK(restored.NextCreateTime(kT0) == kT0 + absl::Seconds(60) + absl::Milliseconds(1));
}

TEST_CASE("JobTable: CurrentRun matches only the replica's current run") {
  JobTable jobs(1);
  jobs.Insert(Placed(MakeJob("j-a", 0), /*attempt=*/2, /*restart=*/3));
  auto [job, r] = jobs.CurrentRun("j-a/2/worker-0/3");
  REQUIRE(job != nullptr);
  CHECK(job->id == "j-a");
  CHECK(r->name == "worker-0");
  const char* stale[] = {
      "j-a/1/worker-0/3",   // an earlier attempt
      "j-a/2/worker-0/2",   // an earlier restart
      "j-a/2/worker-9/3",   // no such replica
      "j-x/2/worker-0/3",   // no such job
      "j-a/2/worker-0",     // malformed
      "j-a/two/worker-0/3"  // malformed
  };
  for (const char* run : stale) {
    INFO(run);
    CHECK(jobs.CurrentRun(run).first == nullptr);
    CHECK(jobs.CurrentRun(run).second == nullptr);
  }
}

TEST_CASE("JobTable: the active set holds admitted jobs and jobs whose replicas hold resources") {
  JobTable jobs(1);
  jobs.Insert(MakeJob("j-queued", 0));
  jobs.Insert(Placed(MakeJob("j-running", 1), 1));
  Job retrying = Placed(MakeJob("j-retrying", 2), 1, 0, v1::REPLICA_STATE_STOPPING);
  retrying.state = v1::JOB_STATE_QUEUED;  // its last attempt's replicas still stop
  jobs.Insert(std::move(retrying));
  jobs.Insert(MakeJob("j-done", 3, "p", v1::JOB_STATE_SUCCEEDED));
  CHECK(jobs.ActiveIds() == std::vector<std::string>{"j-retrying", "j-running"});

  Job* running = jobs.Find("j-running");
  running->state = v1::JOB_STATE_SUCCEEDED;
  for (Replica& r : running->replicas) r.state = v1::REPLICA_STATE_SUCCEEDED;
  jobs.RefreshActive(*running);
  jobs.MarkActive(*jobs.Find("j-queued"));
  CHECK(jobs.ActiveIds() == std::vector<std::string>{"j-queued", "j-retrying"});
  jobs.RefreshActive(*jobs.Find("j-queued"));  // it holds nothing after all
  CHECK(jobs.active() == std::set<std::string>{"j-retrying"});
}

TEST_CASE("JobTable: the active jobs of each project") {
  JobTable jobs(1);
  jobs.Insert(Placed(MakeJob("j-a1", 0, "a"), 1));
  jobs.Insert(Placed(MakeJob("j-a2", 1, "a"), 1));
  jobs.Insert(Placed(MakeJob("j-b1", 2, "b"), 1));
  jobs.Insert(MakeJob("j-b2", 3, "b"));  // queued: not active
  const auto ids = [&jobs](const std::string& project) {
    std::set<std::string> out;
    for (const auto& [id, job] : jobs.ActiveOf(project)) {
      CHECK(job == jobs.Find(id));
      out.insert(id);
    }
    return out;
  };
  CHECK(ids("a") == std::set<std::string>{"j-a1", "j-a2"});
  CHECK(ids("b") == std::set<std::string>{"j-b1"});
  CHECK(ids("c").empty());

  Job* done = jobs.Find("j-b1");
  done->state = v1::JOB_STATE_SUCCEEDED;
  for (Replica& r : done->replicas) r.state = v1::REPLICA_STATE_SUCCEEDED;
  jobs.RefreshActive(*done);
  CHECK(ids("b").empty());
  jobs.MarkActive(*jobs.Find("j-b2"));
  CHECK(ids("b") == std::set<std::string>{"j-b2"});
  jobs.Erase("j-a1");
  CHECK(ids("a") == std::set<std::string>{"j-a2"});
  CHECK(jobs.active() == std::set<std::string>{"j-a2", "j-b2"});
}

TEST_CASE("JobTable: LocateRun finds the node of a run, or says why not") {
  JobTable jobs(1);
  jobs.Insert(MakeJob("j-queued", 0));
  jobs.Insert(Placed(MakeJob("j-a", 1), /*attempt=*/2, /*restart=*/1));
  jobs.NoteRun("j-a/1/chief-0/0", "node-old");
  jobs.NoteRun("j-a/2/chief-0/0", "node-b");
  jobs.NoteRun("j-a/2/chief-0/1", "node-c");
  std::string node, run;
  bool finished = false;

  REQUIRE(jobs.LocateRun("j-a", "chief-0", 0, -1, &node, &run, &finished).ok());
  CHECK(run == "j-a/2/chief-0/1");  // the current attempt's latest run
  CHECK(node == "node-c");
  CHECK_FALSE(finished);  // it still runs
  REQUIRE(jobs.LocateRun("j-a", "chief-0", 2, 0, &node, &run, &finished).ok());
  CHECK(node == "node-b");
  CHECK(finished);
  REQUIRE(jobs.LocateRun("j-a", "chief-0", 1, 0, &node, &run, &finished).ok());
  CHECK(node == "node-old");
  CHECK(finished);

  struct Row {
    const char* job;
    const char* replica;
    int32_t attempt, restart;
    absl::StatusCode code;
    const char* message;
  };
  const Row rows[] = {
      {"j-x", "chief-0", 0, -1, absl::StatusCode::kNotFound, "job j-x not found"},
      {"j-a", "ps-0", 0, -1, absl::StatusCode::kNotFound,
       "job j-a has no replica \"ps-0\"; its replicas are chief-0, worker-0"},
      {"j-queued", "chief-0", 0, -1, absl::StatusCode::kFailedPrecondition,
       "job j-queued has not started yet (QUEUED): no logs"},
      {"j-a", "chief-0", 2, 7, absl::StatusCode::kNotFound,
       "no run j-a/2/chief-0/7 (attempt 2, restart 7) of replica chief-0"},
  };
  for (const Row& row : rows) {
    absl::Status s =
        jobs.LocateRun(row.job, row.replica, row.attempt, row.restart, &node, &run, &finished);
    CHECK(s.code() == row.code);
    CHECK(s.message() == row.message);
  }
}

// restart < 0 names the latest run of an earlier attempt too: the highest restart launched (here
// j-a/1/chief-0/2 on node-c), not its first run.
TEST_CASE("JobTable: LocateRun finds the latest run of an earlier attempt") {
  JobTable jobs(1);
  jobs.Insert(Placed(MakeJob("j-a", 1), /*attempt=*/2));
  jobs.NoteRun("j-a/1/chief-0/0", "node-a");
  jobs.NoteRun("j-a/1/chief-0/1", "node-b");
  jobs.NoteRun("j-a/1/chief-0/2", "node-c");
  jobs.NoteRun("j-a/2/chief-0/0", "node-d");
  std::string node, run;
  bool finished = false;
  REQUIRE(jobs.LocateRun("j-a", "chief-0", 1, -1, &node, &run, &finished).ok());
  CHECK(run == "j-a/1/chief-0/2");
  CHECK(node == "node-c");
}

TEST_CASE("Touch and RecordRun record a job's row and a replica's run") {
  Job job = Placed(MakeJob("j-a", 0), 2, 1);
  job.replicas[1].node = "node-b";
  job.replicas[1].pid = 4242;
  job.replicas[1].exit_code = 3;
  job.replicas[1].start_time = kT0 + absl::Seconds(1);
  job.replicas[1].end_time = kT0 + absl::Seconds(2);
  Effects fx;
  Touch(&job, kT0 + absl::Seconds(9), &fx);
  CHECK(job.update_time == kT0 + absl::Seconds(9));
  CHECK(fx.jobs == std::set<std::string>{"j-a"});

  RecordRun(job, job.replicas[1], &fx);
  REQUIRE(fx.runs.size() == 1);
  const ReplicaRun& r = fx.runs[0];
  CHECK(r.run_id == "j-a/2/worker-0/1");
  CHECK(r.attempt == 2);
  CHECK(r.restart == 1);
  CHECK(r.node == "node-b");
  CHECK(r.pid == 4242);
  CHECK(r.exit_code == 3);
  CHECK(r.start_ms == ToMs(kT0) + 1000);
  CHECK(r.end_ms == ToMs(kT0) + 2000);
}

}  // namespace
}  // namespace trainctl::sched
