// Reservations and backfill end to end: a gang that capacity blocks gets its room kept once it
// waited --reservation-after, and starts as soon as the jobs on that room end, though another
// project still has a stream of small jobs queued; a small job whose timeout ends before the
// gang's expected start backfills into the kept room, one without a timeout waits.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A 1-cpu job of `project` that sleeps `seconds`, with scheduling.timeout `timeout` ("" none).
std::string Small(const std::string& project, const std::string& seconds,
                  const std::string& timeout) {
  std::string spec = absl::StrCat("displayName: small\nproject: ", project,
                                  "\nworkerPools:\n- {name: chief, replicaCount: 1, command: "
                                  "[/bin/sleep, '",
                                  seconds, "'], resources: {cpu: 1}}\n");
  if (!timeout.empty()) absl::StrAppend(&spec, "scheduling: {timeout: ", timeout, "}\n");
  return spec;
}

// A gang of `replicas` 1-cpu replicas of project "big".
std::string Gang(int replicas) {
  return absl::StrCat(R"(
displayName: gang
project: big
workerPools:
- {name: chief, replicaCount: 1, command: [/bin/sleep, '1'], resources: {cpu: 1}}
- {name: worker, replicaCount: )",
                      replicas - 1, R"(, command: [/bin/sleep, '1'], resources: {cpu: 1}}
)");
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_CASE(
    "reservation: a 4-replica gang starts about one small job after its reservation while "
    "another project streams 1-replica jobs",
    "[integration][reservation]") {
  ClusterOptions o;
  o.agents = 2;
  o.agent.cpus = 2;  // room for 4 one-cpu replicas
  o.daemon_args = {"--reservation-after", "1s"};
  MiniCluster c(o);
  // A stream: more small jobs than the room runs in one go, each with a timeout (so the gang's
  // start is known) much longer than it runs.
  std::vector<std::string> stream;
  for (int i = 0; i < 4; ++i) stream.push_back(c.Submit(Small("stream", "2", "60s")));
  for (const std::string& id : stream) c.WaitForState(id, v1::JOB_STATE_RUNNING);
  // The gang is queued before the rest of the stream, so it is the first to have waited 1 s.
  const std::string gang = c.Submit(Gang(4));
  for (int i = 0; i < 16; ++i) stream.push_back(c.Submit(Small("stream", "2", "60s")));

  // Reserved once it waited 1s: both nodes, with an expected start.
  const v1::Job reserved = c.WaitForJob(
      gang, [](const v1::Job& j) { return j.queue_status().reserved_nodes_size() > 0; });
  const int64_t reserved_ms = NowMs();
  CHECK(reserved.state() == v1::JOB_STATE_QUEUED);
  CHECK(reserved.queue_status().reserved_nodes_size() == 2);
  CHECK(reserved.queue_status().has_expected_start_time());
  CliResult queue = c.Cli({"queue"});
  REQUIRE(queue.exit_code == 0);
  CHECK_THAT(queue.out, Catch::Contains("START"));
  CliResult nodes = c.Cli({"nodes", "-o", "wide"});
  REQUIRE(nodes.exit_code == 0);
  CHECK_THAT(nodes.out, Catch::Contains("RESERVED") && Catch::Contains(gang + " from "));

  // The stream's next jobs would run past the gang's start: they wait, and the gang starts as
  // soon as the running small jobs end.
  const v1::Job started = c.WaitForJob(
      gang,
      [](const v1::Job& j) { return j.has_start_time() || j.state() > v1::JOB_STATE_RUNNING; },
      std::chrono::seconds(60));
  REQUIRE(started.has_start_time());
  const int64_t gang_start = TimestampToMs(started.start_time());
  INFO("the gang started " << gang_start - reserved_ms << " ms after its reservation");
  CHECK(gang_start - reserved_ms < 2000 + 8000);  // one small job (2 s), with room for a slow host
  int queued_then = 0;
  for (const std::string& id : stream) {
    const v1::Job s = c.GetJob(id);
    // No stream job started between the reservation and the gang's start.
    if (s.has_start_time()) {
      const int64_t t = TimestampToMs(s.start_time());
      CHECK_FALSE((t > reserved_ms && t < gang_start));
    }
    if (!s.has_start_time() || TimestampToMs(s.start_time()) >= gang_start) ++queued_then;
  }
  CHECK(queued_then >= 8);  // the stream still had jobs queued
  CHECK(c.WaitForEnd(gang).state() == v1::JOB_STATE_SUCCEEDED);
  // The gang's room is not kept once it started (the stream's next job that waited may hold
  // the reservation now).
  CHECK(c.GetNode("node-0").reservation().job_id() != gang);
}

TEST_CASE(
    "reservation: a small job with a short timeout backfills into the kept room, one "
    "without a timeout does not",
    "[integration][reservation]") {
  ClusterOptions o;
  o.agents = 1;
  o.agent.cpus = 2;
  o.daemon_args = {"--reservation-after", "0s"};
  MiniCluster c(o);
  // A long job holds one cpu for up to 10 minutes (its timeout): the gang of 2 is expected to
  // start then.
  const std::string long_job = c.Submit(Small("long", "600", "10m"));
  c.WaitForState(long_job, v1::JOB_STATE_RUNNING);
  const std::string gang = c.Submit(Gang(2));
  const v1::Job reserved = c.WaitForJob(
      gang, [](const v1::Job& j) { return j.queue_status().reserved_nodes_size() == 1; });
  REQUIRE(reserved.queue_status().has_expected_start_time());

  // No timeout: it could hold the cpu past the gang's start.
  const std::string no_timeout = c.Submit(Small("c", "1", ""));
  const v1::Job waiting = c.WaitForJob(no_timeout, [](const v1::Job& j) {
    for (const v1::Blocker& b : j.queue_status().blockers()) {
      if (b.kind() == "RESERVATION") return true;
    }
    return false;
  });
  CHECK(waiting.state() == v1::JOB_STATE_QUEUED);
  CHECK_THAT(waiting.queue_reason(), Catch::StartsWith("RESERVATION: the room it fits in (node-0) "
                                                       "is kept for " +
                                                       gang));
  // A 30s timeout ends long before: it backfills, past the job without one.
  const std::string backfill = c.Submit(Small("d", "1", "30s"));
  CHECK(c.WaitForEnd(backfill).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(c.GetJob(no_timeout).state() == v1::JOB_STATE_QUEUED);
  CHECK(c.GetJob(gang).state() == v1::JOB_STATE_QUEUED);

  // The long job ends: the gang takes its room first; the job without a timeout comes after.
  REQUIRE(c.Cli({"cancel", long_job}).exit_code == 0);
  const v1::Job gang_done = c.WaitForEnd(gang);
  CHECK(gang_done.state() == v1::JOB_STATE_SUCCEEDED);
  const v1::Job after = c.WaitForEnd(no_timeout);
  CHECK(after.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(TimestampToMs(after.start_time()) >= TimestampToMs(gang_done.start_time()));
}

}  // namespace
}  // namespace trainctl::testing
