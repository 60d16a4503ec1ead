// Runs `trainctl nodes`, `events` and `describe` against the fake server (fake_server.h) and
// checks what they print. The fake dates its heartbeats and events back from the time of each
// request, so ages are fixed; absolute times are not.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/spec_parse.h"
#include "common/time_util.h"
#include "tests/cli/fake_server.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

// The lines of `text` with their first column (the event time) cut off.
std::string WithoutFirstColumn(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    const size_t cut = line.find("   ");
    out += (cut == std::string::npos ? line : line.substr(line.find_first_not_of(' ', cut))) + "\n";
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

TEST_CASE("nodes shows state, health, free/allocatable resources and heartbeats",
          "[binary][cluster]") {
  Result nodes = Fake().Run("nodes");
  INFO(nodes.err);
  REQUIRE(nodes.exit_status == 0);
  CHECK(nodes.out ==
        "NAME     STATE      HEALTH      CPU       MEMORY          GPUS   REPLICAS   HEARTBEAT\n"
        "node-a   READY      HEALTHY     3.5/4     3968/4096Mi     6/8    2          2m ago\n"
        "node-b   LOST       UNKNOWN     4/4       4096/4096Mi     0/0    0          60m ago\n"
        "node-c   ISOLATED   UNHEALTHY   7.5/7.5   16000/16000Mi   8/8    0          5s ago\n");

  Result wide = Fake().Run("nodes -o wide");
  REQUIRE(wide.exit_status == 0);
  CHECK(wide.out ==
        "NAME     STATE      HEALTH      ADDRESS         CPU       MEMORY          GPUS   "
        "REPLICAS   HEARTBEAT   AGENT   REASON\n"
        "node-a   READY      HEALTHY     10.0.0.1:7071   3.5/4     3968/4096Mi     6/8    "
        "2          2m ago      0.2.0\n"
        "node-b   LOST       UNKNOWN     10.0.0.2:7071   4/4       4096/4096Mi     0/0    "
        "0          60m ago     0.2.0   no heartbeat for 30s\n"
        "node-c   ISOLATED   UNHEALTHY   10.0.0.3:7071   7.5/7.5   16000/16000Mi   8/8    "
        "0          5s ago      0.2.0   failed preflight check disk-size root: 3.1 GB free, need "
        "> 32 GB\n");

  for (const char* format : {"json", "yaml"}) {
    Result listed = Fake().Run(absl::StrCat("nodes -o ", format));
    REQUIRE(listed.exit_status == 0);
    v1::ListNodesResponse response;  // {"nodes": [...]}, the proto's JSON mapping
    REQUIRE(ParseYamlToMessage(listed.out, &response).ok());
    REQUIRE(response.nodes_size() == 3);
    CHECK(response.nodes(0).connected());
    CHECK(response.nodes(1).free().memory_mb() == 4096);
    CHECK(response.nodes(2).state() == v1::NODE_STATE_ISOLATED);
    CHECK(response.nodes(2).checks(0).items(1).measured() == "3.1 GB free");
  }
  CHECK_THAT(Fake().Run("nodes -o json").out,
             Catch::Contains("\"health\": \"NODE_HEALTH_UNHEALTHY\""));
  CHECK(Fake().Run("nodes extra").exit_status == 2);
  Result bad = Fake().Run("nodes -o xml");
  CHECK(bad.exit_status == 2);
  CHECK(bad.err ==
        "error: INVALID_ARGUMENT: unknown output format \"xml\"; use table, wide, json "
        "or yaml\n");
}

TEST_CASE("events lists the log oldest first and filters it", "[binary][cluster]") {
  Result all = Fake().Run("events");
  INFO(all.err);
  REQUIRE(all.exit_status == 0);
  CHECK_THAT(all.out, Catch::Matches("TIME   .*\n(20[0-9-]{8}T[0-9:]{8}Z   .*\n){9}"));
  CHECK(WithoutFirstColumn(all.out) ==
        "TYPE               JOB           REPLICA    NODE     REASON\n"
        "NodeRegistered     -             -          node-a   agent 0.1.0\n"
        "NodeRegistered     -             -          node-c   agent 0.2.0\n"
        "JobQueued          j-described   -          -        submitted\n"
        "ReplicaStarted     j-described   worker-0   node-b   pid 4321\n"
        "NodeIsolated       -             -          node-c   failed preflight check disk-size "
        "root: 3.1 GB free, need > 32 GB\n"
        "NodeFlapping       -             -          node-c   isolated 3 times within 1h\n"
        "ReplicaExited      j-described   worker-0   node-b   killed by signal 9\n"
        "JobFailed          j-described   -          -        worker-0 killed\n"
        "NodeDisconnected   -             -          node-b   no heartbeat for 30s\n");

  Result job = Fake().Run("events j-described --node node-b");
  CHECK(WithoutFirstColumn(job.out) ==
        "TYPE             JOB           REPLICA    NODE     REASON\n"
        "ReplicaStarted   j-described   worker-0   node-b   pid 4321\n"
        "ReplicaExited    j-described   worker-0   node-b   killed by signal 9\n");
  CHECK(Fake().LastEventsRequest().job_id() == "j-described");

  // Columns no event fills are left out.
  Result type = Fake().Run("events --type NodeRegistered");
  CHECK(WithoutFirstColumn(type.out) ==
        "TYPE             NODE     REASON\n"
        "NodeRegistered   node-a   agent 0.1.0\n"
        "NodeRegistered   node-c   agent 0.2.0\n");

  Result node = Fake().Run("events --node node-c --type NodeIsolated");
  CHECK(WithoutFirstColumn(node.out) ==
        "TYPE           NODE     REASON\n"
        "NodeIsolated   node-c   failed preflight check disk-size root: 3.1 GB free, need > 32 "
        "GB\n");
  CHECK(Fake().LastEventsRequest().node() == "node-c");
  CHECK(Fake().LastEventsRequest().type() == "NodeIsolated");

  // The newest two of the events of the last 10 minutes.
  const int64_t before_ms = WallNowMs();
  Result recent = Fake().Run("events --since 10m --limit 2 -o json");
  const int64_t after_ms = WallNowMs();
  REQUIRE(recent.exit_status == 0);
  // "10m" is sent as a time: now - 10 minutes, now being when trainctl ran.
  const int64_t since_ms = TimestampToMs(Fake().LastEventsRequest().since());
  CHECK(since_ms >= before_ms - 10 * 60 * 1000);
  CHECK(since_ms <= after_ms - 10 * 60 * 1000);
  v1::ListEventsResponse response;
  REQUIRE(ParseYamlToMessage(recent.out, &response).ok());
  REQUIRE(response.events_size() == 2);
  CHECK(response.events(0).type() == "JobFailed");
  CHECK(response.events(1).type() == "NodeDisconnected");
  CHECK(Fake().LastEventsRequest().limit() == 2);

  Result rfc3339 = Fake().Run("events --since 2000-01-01T00:00:00Z -o yaml");
  REQUIRE(ParseYamlToMessage(rfc3339.out, &response).ok());
  CHECK(response.events_size() == 9);
  CHECK(Fake().LastEventsRequest().since().seconds() == 946684800);

  Result offset = Fake().Run("events --since 2000-01-01T01:00:00+01:00 -o json");
  REQUIRE(offset.exit_status == 0);
  CHECK(Fake().LastEventsRequest().since().seconds() == 946684800);

  Result none = Fake().Run("events --since 2999-01-01T00:00:00Z");
  CHECK(none.exit_status == 0);
  CHECK(none.out.empty());
  CHECK(none.err == "No events found.\n");
}

TEST_CASE("events rejects a bad --since or --limit", "[binary][cluster]") {
  Result since = Fake().Run("events --since yesterday");
  CHECK(since.exit_status == 2);
  CHECK_THAT(since.err, Catch::StartsWith(
                            "error: INVALID_ARGUMENT: --since must be a duration back from now"));

  for (const char* limit : {"0", "10001", "ten"}) {
    Result bad = Fake().Run(absl::StrCat("events --limit ", limit));
    CHECK(bad.exit_status == 2);
    CHECK_THAT(bad.err, Catch::StartsWith("error: INVALID_ARGUMENT: --limit must be"));
  }
}

TEST_CASE("describe shows the job, its replicas, attempts and latest events", "[binary][cluster]") {
  Result described = Fake().Run("describe j-described");
  INFO(described.err);
  REQUIRE(described.exit_status == 0);
  CHECK_THAT(described.out, Catch::StartsWith("ID:             j-described\n"
                                              "Name:           resnet\n"
                                              "Project:        vision\n"
                                              "Priority:       10\n"
                                              "State:          FAILED\n"
                                              "Error:          Replica worker-0 ran out of "
                                              "memory and exited with a non-zero status of "
                                              "137. (code 8)\n"
                                              "Reason:         OUT_OF_MEMORY\n"
                                              "Error replica:  worker-0\n"
                                              "Error node:     node-b\n"
                                              "Created:        2025-12-31T23:59:00Z ("));
  CHECK_THAT(
      described.out,
      Catch::EndsWith(
          "Checkpoints:    /ckpt/j-described\n"
          "Retry budgets:  job retries 0/3 used, internal retries 1/2, capacity retries 0/3, "
          "redispatches 0/3; replica restarts up to 5 per attempt\n"
          "Host faults:    re-dispatch the job to other hosts, up to 3 times "
          "(faultTolerance.jobRetryNum 3, the default)\n"
          "\n"
          "Last output:\n"
          "  step 1200 loss 0.41\n"
          "  torch.cuda.OutOfMemoryError: CUDA out of memory\n"
          "\n"
          "Replicas:\n"
          "  NAME       RANK   NODE     STATE     RESTARTS        EXIT                  MESSAGE\n"
          "  chief-0    0      node-a   STOPPED   0               signal 15 (SIGTERM)   stopped: "
          "job ended\n"
          "  worker-0   1      node-b   FAILED    2 (1 charged)   OOM (SIGKILL)         ran out "
          "of memory (OUT_OF_MEMORY)\n"
          "\n"
          "Attempts:\n"
          "  NUMBER   STATE    STARTED                ENDED                  CLASS           "
          "RULE                      REPLICA    NODE     DECISION    BUDGETS-LEFT"
          "                                        REASON\n"
          "  1        FAILED   2026-01-01T00:00:00Z   2026-01-01T00:05:00Z   INTERNAL        "
          "default: internal error   worker-0   node-c   RETRY_JOB   retries 3, internal 1, "
          "capacity 3, redispatches 3   node-c disconnected\n"
          "  2        FAILED   2026-01-01T00:10:00Z   2026-01-01T00:15:00Z   OUT_OF_MEMORY   "
          "default: out of memory    worker-0   node-b   FAIL_JOB    retries 3, internal 1, "
          "capacity 3, redispatches 3   worker-0 ran out of memory\n"
          "\n"
          "Events:\n"
          "  AGE   TYPE             REPLICA    NODE     REASON\n"
          "  30m   JobQueued        -          -        submitted\n"
          "  20m   ReplicaStarted   worker-0   node-b   pid 4321\n"
          "  5m    ReplicaExited    worker-0   node-b   killed by signal 9\n"
          "  2m    JobFailed        -          -        worker-0 killed\n"));
  const v1::ListEventsRequest request = Fake().LastEventsRequest();
  CHECK(request.job_id() == "j-described");
  CHECK(request.limit() == 20);

  Result quiet = Fake().Run("describe j-ok");
  CHECK(quiet.exit_status == 0);
  CHECK(quiet.out ==
        "ID:             j-ok\n"
        "Priority:       0\n"
        "State:          RUNNING\n"
        "Retry budgets:  redispatches 0/3 used\n"
        "Host faults:    re-dispatch the job to other hosts, up to 3 times "
        "(faultTolerance.jobRetryNum 3, the default)\n"
        "\n"
        "Events:  <none>\n");

  // get tells the same failure briefly: no budgets, no output, no attempt classes.
  Result get = Fake().Run("get j-described");
  CHECK_THAT(get.out, Catch::Contains("Reason:         OUT_OF_MEMORY\n"
                                      "Error replica:  worker-0\n"
                                      "Error node:     node-b\n"));
  CHECK_THAT(get.out, Catch::Contains("  OOM (SIGKILL)   "));
  CHECK_THAT(get.out, !Catch::Contains("Last output") && !Catch::Contains("Retry budgets") &&
                          !Catch::Contains("OUT_OF_MEMORY   "));

  Result missing = Fake().Run("describe j-nope");
  CHECK(missing.exit_status == 2);
  CHECK(missing.out.empty());
  CHECK(missing.err == "error: NOT_FOUND: job j-nope not found\n");
}

TEST_CASE("describe says when a job queued for a retry and a restarting replica start",
          "[binary][cluster]") {
  Result described = Fake().Run("describe j-retrying");
  INFO(described.err);
  REQUIRE(described.exit_status == 0);
  CHECK_THAT(described.out,
             Catch::Matches("ID:             j-retrying\n"
                            "Priority:       0\n"
                            "State:          QUEUED\n"
                            "Queue reason:   RETRY: attempt 2 starts once attempt 1's replicas "
                            "have stopped and its backoff ends\n"
                            "Next attempt:   in 5s \\(20[0-9-]{8}T[0-9:]{8}Z\\)\n"
                            "Retry budgets:  job retries 1/3 used, redispatches 0/3\n"
                            "Host faults:    re-dispatch the job to other hosts, up to 3 times "
                            "\\(faultTolerance.jobRetryNum 3, the default\\)\n"
                            "\n"
                            "Replicas:\n"
                            "  NAME       RANK   NODE     STATE        RESTARTS   EXIT   MESSAGE\n"
                            "  worker-0   0      node-a   RESTARTING   1          6      exited "
                            "with status 6 \\(TRANSIENT\\); restarts in 4s\n"
                            "\n"
                            "Events:  <none>\n"));
}

TEST_CASE("help lists nodes, node, events and describe", "[binary][cluster]") {
  Result help = Fixture::RunBinary("--help");
  CHECK(help.exit_status == 0);
  for (const char* command : {"describe", "nodes", "node", "events"}) {
    CHECK_THAT(help.out, Catch::Contains(absl::StrCat("\n  ", command, " ")));
    Result own = Fixture::RunBinary(absl::StrCat(command, " --help"));
    CHECK(own.exit_status == 0);
    CHECK_THAT(own.out, Catch::StartsWith(absl::StrCat("Usage:\n  trainctl ", command)));
  }

  Result events = Fixture::RunBinary("events --help");
  for (const char* type : {"NodeRegistered", "NodeReconnected", "NodeDisconnected", "NodeLost",
                           "NodeReturned", "NodeIsolated", "NodeFlapping", "NodeHealthy",
                           "NodeCordoned", "NodeUncordoned", "NodeDrainStarted", "NodeDrained",
                           "NodeShutdown", "ReplicaMoved", "JobRedispatched", "JobExiting"}) {
    CHECK_THAT(events.out, Catch::Contains(type));
  }
  CHECK_THAT(events.out, Catch::Contains("10m: the last 10 minutes"));
  CHECK_THAT(events.out, Catch::Contains("RFC3339"));
}

}  // namespace
}  // namespace trainctl::cli
