// The quota-gated queue end to end (R1, R17): quotas through the CLI, real jobs waiting and
// running, and why each waits.
#include <google/protobuf/util/json_util.h>
#include <signal.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A job of `project` that runs until DIR/go-<job id> exists.
std::string GatedJob(const std::string& project, double cpu = 0.1, const std::string& extra = "") {
  return absl::StrCat(R"(
displayName: gated
project: )",
                      project, R"(
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'while [ ! -e DIR/go-$TRAINCTL_JOB_ID ]; do sleep 0.05; done']
  resources: {cpu: )",
                      cpu, R"(}
)",
                      extra);
}

int CountIn(MiniCluster& c, const std::vector<std::string>& ids,
            std::initializer_list<v1::JobState> states) {
  int n = 0;
  for (const std::string& id : ids) {
    v1::JobState s = c.GetJob(id).state();
    for (v1::JobState want : states) n += s == want ? 1 : 0;
  }
  return n;
}

void SetQuota(MiniCluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"quota", "set"};
  argv.insert(argv.end(), args.begin(), args.end());
  CliResult r = c.Cli(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

std::vector<std::string> QueueOrder(MiniCluster& c) {
  CliResult r = c.Cli({"queue", "-o", "json"});
  REQUIRE(r.exit_code == 0);
  v1::ListQueueResponse resp;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &resp).ok());
  std::vector<std::string> ids;
  for (const v1::Job& j : resp.jobs()) ids.push_back(j.id());
  return ids;
}

TEST_CASE("a quota of 2 running jobs runs 5 jobs 2 at a time, and all finish",
          "[integration][queue]") {
  MiniCluster c(2);
  SetQuota(c, {"team-a", "--max-running-jobs", "2"});
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(c.Submit(c.Spec(GatedJob("team-a"))));
  std::set<std::string> done;
  while (done.size() < ids.size()) {
    // Never more than 2 admitted at any moment; release the oldest running one.
    std::string release;
    REQUIRE(Eventually([&] {
      int admitted = CountIn(c, ids, {v1::JOB_STATE_PENDING, v1::JOB_STATE_RUNNING});
      REQUIRE(admitted <= 2);
      for (const std::string& id : ids) {
        if (done.count(id) == 0 && c.GetJob(id).state() == v1::JOB_STATE_RUNNING) {
          release = id;
          return admitted == std::min<int>(2, ids.size() - done.size());
        }
      }
      return false;
    }));
    const int queued = CountIn(c, ids, {v1::JOB_STATE_QUEUED});
    CHECK(queued ==
          static_cast<int>(ids.size() - done.size()) - std::min<int>(2, ids.size() - done.size()));
    if (queued > 0) {
      CliResult q = c.Cli({"queue"});
      CHECK(q.out.find("QUOTA: project team-a runs 2 of 2 jobs") != std::string::npos);
    }
    c.WriteFile("go-" + release, "");
    c.WaitForState(release, v1::JOB_STATE_SUCCEEDED);
    done.insert(release);
  }
  CHECK(CountIn(c, ids, {v1::JOB_STATE_SUCCEEDED}) == 5);
}

TEST_CASE("raising a quota admits a waiting job at once", "[integration][queue]") {
  MiniCluster c(1);
  SetQuota(c, {"team-b", "--cpu", "1"});
  std::string first = c.Submit(c.Spec(GatedJob("team-b", 1)));
  c.WaitForState(first, v1::JOB_STATE_RUNNING);
  std::string second = c.Submit(c.Spec(GatedJob("team-b", 1)));
  v1::Job waiting = c.WaitForJob(second, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_QUEUED && j.queue_status().blockers_size() > 0;
  });
  CHECK(waiting.queue_status().blockers(0).kind() == "QUOTA");
  CHECK(waiting.queue_status().blockers(0).message() ==
        "QUOTA: project team-b needs 1 cpu cores, 1 of 1 in use by 1 job");
  SetQuota(c, {"team-b", "--cpu", "2"});
  c.WaitForState(second, v1::JOB_STATE_RUNNING);
  c.WriteFile("go-" + first, "");
  c.WriteFile("go-" + second, "");
  c.WaitForState(first, v1::JOB_STATE_SUCCEEDED);
  c.WaitForState(second, v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("a job larger than its quota waits with a QUOTA reason", "[integration][queue]") {
  MiniCluster c(1);
  SetQuota(c, {"team-c", "--cpu", "1"});
  std::string id = c.Submit(c.Spec(GatedJob("team-c", 2)));
  v1::Job job =
      c.WaitForJob(id, [](const v1::Job& j) { return j.queue_status().blockers_size() > 0; });
  CHECK(job.state() == v1::JOB_STATE_QUEUED);
  CHECK(job.queue_status().blockers(0).kind() == "QUOTA");
  CHECK(job.queue_status().blockers(0).resource() == "cpu");
  CHECK(job.queue_status().blockers(0).needed() == 2);
  CHECK(job.queue_status().blockers(0).limit() == 1);
  CliResult queue = c.Cli({"queue"});
  CHECK(queue.out.find(id) != std::string::npos);
  CHECK(queue.out.find("needs 2 cpu cores but its quota is 1 cpu cores") != std::string::npos);
  CliResult describe = c.Cli({"describe", id});
  CHECK(describe.out.find("QUOTA: project team-c needs 2 cpu cores") != std::string::npos);
}

TEST_CASE("a queue timeout fails a waiting job with how long it waited and for what",
          "[integration][queue]") {
  MiniCluster c(1);
  SetQuota(c, {"team-d", "--max-running-jobs", "1"});
  std::string first = c.Submit(c.Spec(GatedJob("team-d")));
  c.WaitForState(first, v1::JOB_STATE_RUNNING);
  std::string late = c.Submit(c.Spec(GatedJob("team-d", 0.1, "scheduling:\n  queueTimeout: 1s\n")));
  v1::Job job = c.WaitForState(late, v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 4);
  CHECK(job.error().message().find("in the queue (queueTimeout 1s)") != std::string::npos);
  CHECK(job.error().message().find("QUOTA: project team-d runs 1 of 1 jobs") != std::string::npos);
  c.WriteFile("go-" + first, "");
}

TEST_CASE("queued jobs survive a scheduler restart in the same order", "[integration][queue]") {
  MiniCluster c(1);
  SetQuota(c, {"team-e", "--max-running-jobs", "1"});
  std::string running = c.Submit(c.Spec(GatedJob("team-e")));
  c.WaitForState(running, v1::JOB_STATE_RUNNING);
  std::vector<std::string> queued;
  for (int priority : {0, 5, 0, 9}) {
    queued.push_back(
        c.Submit(c.Spec(GatedJob("team-e", 0.1)) + "priority: " + std::to_string(priority) + "\n"));
  }
  std::vector<std::string> before = QueueOrder(c);
  CHECK(before == std::vector<std::string>{queued[3], queued[1], queued[0], queued[2]});
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  c.WaitForConnectedNodes(1);
  CHECK(QueueOrder(c) == before);
  CHECK(c.GetJob(running).state() == v1::JOB_STATE_RUNNING);
  c.WriteFile("go-" + running, "");
  c.WaitForState(queued[3], v1::JOB_STATE_RUNNING);  // the highest priority goes next
  for (const std::string& id : queued) c.WriteFile("go-" + id, "");
  for (const std::string& id : queued) c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace trainctl::testing
