// Job arrays end to end: a real trainctld and one real agent whose 4 cpus could hold four
// elements at once. A 20-element array with parallelism 3 never runs more than 3 elements at once
// (as its elements see it, and as the array's counts say), runs every index once with its index
// in its env and args, and ends SUCCEEDED with its counts; `list` shows it as one row, `list
// --array` its elements, `get` an element not started. Cancelling an array stops its running
// elements and starts no more. A 10,000-element submit is one request: its time and trainctld's
// RSS before and after are measured (and printed), and only the started elements are jobs.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace job_arrays_test {

ClusterOptions OneAgent() {
  ClusterOptions o;
  o.agents = 1;
  return o;
}

// An array whose elements take 1 cpu each. Each element marks itself live in DIR/live, records
// how many were live with it, waits for DIR/go (when `gated`) or a moment, and records its index
// as its env and args carry it.
std::string ArraySpec(const MiniCluster& c, const std::string& indices, int parallelism,
                      bool gated) {
  const std::string wait = gated ? "while [ ! -e DIR/go ]; do sleep 0.05; done" : "sleep 0.3";
  return c.Spec(absl::StrCat(
      "displayName: sweep\narray: {indices: '", indices, "', parallelism: ", parallelism,
      "}\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
      "  command: [/bin/sh, -c, 'mkdir -p DIR/live; touch DIR/live/$TRAINCTL_ARRAY_INDEX; "
      "ls DIR/live | wc -l >> DIR/concurrent; ",
      wait,
      "; echo \"$TRAINCTL_ARRAY_INDEX $1 $LR $TRAINCTL_ARRAY_COUNT\" >> DIR/ran; "
      "rm DIR/live/$TRAINCTL_ARRAY_INDEX', sh]\n"
      "  args: ['{{index}}']\n  env: {LR: 'lr-{{index}}'}\n"
      "  resources: {cpu: 1, memoryMb: 32}\n"));
}

// DIR/name's text; "" when it does not exist.
std::string ReadText(const MiniCluster& c, const std::string& name) {
  std::ifstream in(c.dir() + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int Admitted(const v1::Job& array) {
  return array.array().pending() + array.array().running() + array.array().cancelling();
}

TEST_CASE("job arrays: 20 elements, parallelism 3: never more than 3, every index once",
          "[integration][arrays]") {
  MiniCluster c(OneAgent());
  const std::string id = c.Submit(ArraySpec(c, "0-19", 3, /*gated=*/false));
  // A job that needs every element to succeed.
  const std::string after =
      c.Submit(c.Spec("displayName: after\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
                      "  command: [/bin/true]\n  resources: {cpu: 1, memoryMb: 32}\n"
                      "dependsOn: [{job: " +
                      id + ", condition: SUCCEEDED}]\n"));
  int most = 0;
  const v1::Job done = c.WaitForJob(
      id,
      [&](const v1::Job& j) {
        most = std::max(most, Admitted(j));
        return j.state() == v1::JOB_STATE_SUCCEEDED || j.state() == v1::JOB_STATE_FAILED;
      },
      std::chrono::seconds(90));
  INFO(done.DebugString());
  CHECK(done.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(done.array().count() == 20);
  CHECK(done.array().succeeded() == 20);
  CHECK(done.array().waiting() == 0);
  CHECK(most <= 3);
  // As the elements saw it: never more than 3 live at once.
  for (absl::string_view line :
       absl::StrSplit(ReadText(c, "concurrent"), '\n', absl::SkipEmpty())) {
    int n = 0;
    REQUIRE(absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n));
    CHECK(n <= 3);
  }
  // Every index once, its index in its env (TRAINCTL_ARRAY_INDEX, LR) and its args.
  std::map<int, int> seen;
  for (absl::string_view line : absl::StrSplit(ReadText(c, "ran"), '\n', absl::SkipEmpty())) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    REQUIRE(f.size() == 4);
    int index = -1;
    REQUIRE(absl::SimpleAtoi(f[0], &index));
    CHECK(f[1] == f[0]);
    CHECK(f[2] == "lr-" + f[0]);
    CHECK(f[3] == "20");
    seen[index]++;
  }
  CHECK(seen.size() == 20);
  for (const auto& [index, n] : seen) CHECK(n == 1);
  // `list` shows the array as one row; `list --array` its 20 elements.
  v1::ListJobsRequest all;
  v1::ListJobsResponse listed;
  {
    grpc::ClientContext ctx;
    REQUIRE(c.jobs().ListJobs(&ctx, all, &listed).ok());
  }
  // The array and the job after it; no element.
  REQUIRE(listed.jobs_size() == 2);
  for (const v1::Job& j : listed.jobs()) CHECK_FALSE(j.has_element());
  CHECK(listed.jobs(1).id() == id);
  v1::ListJobsRequest elements;
  elements.set_array(id);
  elements.set_page_size(8);
  std::set<std::string> ids;
  for (int page = 0; page < 5; ++page) {
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    REQUIRE(c.jobs().ListJobs(&ctx, elements, &resp).ok());
    for (const v1::Job& j : resp.jobs()) {
      CHECK(j.element().array() == id);
      ids.insert(j.id());
    }
    if (resp.next_page_token().empty()) break;
    elements.set_page_token(resp.next_page_token());
  }
  CHECK(ids.size() == 20);
  CHECK(ids.count(id + "-7") == 1);
  CHECK(c.GetJob(id + "-7").state() == v1::JOB_STATE_SUCCEEDED);
  // The job waiting on the array ran once every element had succeeded.
  const v1::Job ran = c.WaitForEnd(after);
  CHECK(ran.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(ran.start_time().seconds() * 1000 + ran.start_time().nanos() / 1'000'000 >=
        done.end_time().seconds() * 1000 + done.end_time().nanos() / 1'000'000);
}

TEST_CASE("job arrays: an element not started reads as waiting, and cancelling the array stops all",
          "[integration][arrays]") {
  MiniCluster c(OneAgent());
  const std::string id = c.Submit(ArraySpec(c, "0-19", 3, /*gated=*/true));
  c.WaitForJob(id, [](const v1::Job& j) { return j.array().running() == 3; });
  // An element not started is read from the array: QUEUED behind the limit.
  CliResult get = c.Cli({"get", id + "-10"});
  INFO(get.out << get.err);
  REQUIRE(get.exit_code == 0);
  const v1::Job waiting = c.GetJob(id + "-10");
  CHECK(waiting.state() == v1::JOB_STATE_QUEUED);
  REQUIRE(waiting.queue_status().blockers_size() == 1);
  CHECK(waiting.queue_status().blockers(0).kind() == "ARRAY_LIMIT");
  // `list --array`: the waiting row first (one row for 17 elements), then the 3 started.
  {
    v1::ListJobsRequest req;
    req.set_array(id);
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    REQUIRE(c.jobs().ListJobs(&ctx, req, &resp).ok());
    REQUIRE(resp.jobs_size() == 4);
    CHECK(resp.jobs(0).id() == id + "-[3-19]");
  }
  // A range of elements held through the CLI: one call each.
  CliResult hold = c.Cli({"hold", id + "-[10-11]"});
  INFO(hold.out << hold.err);
  REQUIRE(hold.exit_code == 0);
  CHECK(c.GetJob(id + "-11").queue_status().blockers(0).kind() == "HELD");
  CHECK(c.GetJob(id + "-12").queue_status().blockers(0).kind() == "ARRAY_LIMIT");
  // Pages of one: the waiting row alone first, then the newest element.
  {
    v1::ListJobsRequest req;
    req.set_array(id);
    req.set_page_size(1);
    grpc::ClientContext ctx;
    v1::ListJobsResponse first;
    REQUIRE(c.jobs().ListJobs(&ctx, req, &first).ok());
    REQUIRE(first.jobs_size() == 1);
    CHECK(first.jobs(0).id() == id + "-[3-19]");
    REQUIRE_FALSE(first.next_page_token().empty());
    req.set_page_token(first.next_page_token());
    grpc::ClientContext ctx2;
    v1::ListJobsResponse second;
    REQUIRE(c.jobs().ListJobs(&ctx2, req, &second).ok());
    REQUIRE(second.jobs_size() == 1);
    CHECK(second.jobs(0).id() == id + "-2");
  }
  CliResult cancel = c.Cli({"cancel", id});
  INFO(cancel.out << cancel.err);
  REQUIRE(cancel.exit_code == 0);
  const v1::Job ended = c.WaitForEnd(id);
  CHECK(ended.state() == v1::JOB_STATE_CANCELLED);
  CHECK(ended.array().started_indices() == "0-2");
  CHECK(ended.array().cancelled() == 20);
  for (int i = 0; i < 3; ++i) {
    CHECK(c.GetJob(absl::StrCat(id, "-", i)).state() == v1::JOB_STATE_CANCELLED);
  }
  CHECK(c.GetJob(id + "-10").state() == v1::JOB_STATE_CANCELLED);
  CHECK(ReadText(c, "ran").empty());
  // `wait` on an element that never started ends: it was cancelled.
  CliResult wait = c.Cli({"wait", id + "-15"});
  INFO(wait.out << wait.err);
  CHECK(wait.exit_code == 1);
  // Ended: deleted with its elements.
  CliResult del = c.Cli({"delete", id});
  INFO(del.out << del.err);
  REQUIRE(del.exit_code == 0);
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_id(id + "-1");
  v1::Job gone;
  CHECK(c.jobs().GetJob(&ctx, req, &gone).error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("job arrays: an array goes on across a SIGKILL of trainctld, every index once",
          "[integration][arrays]") {
  MiniCluster c(OneAgent());
  const std::string id = c.Submit(ArraySpec(c, "0-7", 2, /*gated=*/true));
  c.WaitForJob(id, [](const v1::Job& j) { return j.array().running() == 2; });
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  CHECK(c.GetJob(id).array().running() + c.GetJob(id).array().pending() == 2);
  c.WriteFile("go", "");
  const v1::Job done = c.WaitForJob(
      id, [](const v1::Job& j) { return j.state() == v1::JOB_STATE_SUCCEEDED; },
      std::chrono::seconds(90));
  CHECK(done.array().succeeded() == 8);
  std::map<std::string, int> seen;
  for (absl::string_view line : absl::StrSplit(ReadText(c, "ran"), '\n', absl::SkipEmpty())) {
    seen[std::string(line.substr(0, line.find(' ')))]++;
  }
  CHECK(seen.size() == 8);
  for (const auto& [index, n] : seen) CHECK(n == 1);
}

TEST_CASE("job arrays: a 10,000-element submit is one request and only started elements are jobs",
          "[integration][arrays]") {
  MiniCluster c(OneAgent());
  const int64_t before = ProcessMemoryKb(c.daemon().pid(), "VmRSS");
  const auto start = std::chrono::steady_clock::now();
  const std::string id = c.Submit(ArraySpec(c, "0-9999", 2, /*gated=*/true));
  const double submit_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const v1::Job array = c.WaitForJob(id, [](const v1::Job& j) { return j.array().running() == 2; });
  const int64_t after = ProcessMemoryKb(c.daemon().pid(), "VmRSS");
  WARN("10,000-element array: submit (trainctl submit, one CreateJob) took "
       << submit_ms << " ms; trainctld RSS " << before / 1024 << " MiB before, " << after / 1024
       << " MiB after (2 elements started)");
  CHECK(array.array().count() == 10'000);
  CHECK(array.array().waiting() == 9'998);
  CHECK(array.array().started_indices() == "0-1");
  CHECK(c.GetJob(id + "-9999").state() == v1::JOB_STATE_QUEUED);
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  CHECK(c.WaitForEnd(id).array().cancelled() == 10'000);
}

}  // namespace job_arrays_test
}  // namespace trainctl::testing
