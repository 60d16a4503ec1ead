#include "cli/cluster_view.h"

#include <catch2/catch.hpp>

#include "common/spec_parse.h"
#include "common/time_util.h"
#include "google/protobuf/util/message_differencer.h"

namespace trainctl::cli {
namespace {

constexpr int64_t kNowMs = 1767225600000;  // 2026-01-01T00:00:00Z

v1::Node MakeNode(const std::string& name, bool connected, int64_t heartbeat_age_ms) {
  v1::Node node;
  node.set_name(name);
  node.set_address(name + ":7071");
  node.set_connected(connected);
  node.mutable_allocatable()->set_cpu(4);
  node.mutable_allocatable()->set_memory_mb(4096);
  node.mutable_free()->set_cpu(3.5);
  node.mutable_free()->set_memory_mb(3968);
  node.set_replicas(1);
  if (heartbeat_age_ms >= 0) {
    *node.mutable_last_heartbeat_time() = MsToTimestamp(kNowMs - heartbeat_age_ms);
  }
  return node;
}

v1::Event MakeEvent(int64_t age_ms, const std::string& type, const std::string& job,
                    const std::string& replica, const std::string& node,
                    const std::string& reason) {
  v1::Event event;
  *event.mutable_time() = MsToTimestamp(kNowMs - age_ms);
  event.set_type(type);
  event.set_job_id(job);
  event.set_replica(replica);
  event.set_node(node);
  event.set_reason(reason);
  return event;
}

TEST_CASE("NodeRow shows status, free/allocatable resources and the heartbeat age",
          "[cluster_view]") {
  CHECK(NodeRow(MakeNode("node-a", true, 3000), kNowMs) ==
        std::vector<std::string>{"node-a", "Ready", "node-a:7071", "3.5/4", "3968/4096Mi", "0/0",
                                 "1", "3s ago"});
  v1::Node gone = MakeNode("node-b", false, -1);
  gone.clear_address();
  gone.mutable_allocatable()->set_gpus(8);
  gone.mutable_free()->set_gpus(6);
  CHECK(NodeRow(gone, kNowMs) == std::vector<std::string>{"node-b", "Disconnected", "-", "3.5/4",
                                                          "3968/4096Mi", "6/8", "1", "-"});
  CHECK(NodeStatus(gone) == "Disconnected");
}

TEST_CASE("RenderNodeList renders a header and one row per node", "[cluster_view]") {
  v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("node-a", true, 3000);
  *response.add_nodes() = MakeNode("node-b", false, 5 * 60 * 1000);
  CHECK(RenderNodeList(response.nodes(), kNowMs) ==
        "NAME     STATUS         ADDRESS       CPU     MEMORY        GPUS   REPLICAS   HEARTBEAT\n"
        "node-a   Ready          node-a:7071   3.5/4   3968/4096Mi   0/0    1          3s ago\n"
        "node-b   Disconnected   node-b:7071   3.5/4   3968/4096Mi   0/0    1          5m ago\n");
}

TEST_CASE("FormatNodes wraps the nodes in a nodes list", "[cluster_view]") {
  v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("node-a", true, 3000);
  std::string json = FormatNodes(response, OutputFormat::kJson, kNowMs).value();
  v1::ListNodesResponse back;
  REQUIRE(ParseYamlToMessage(json, &back).ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(back, response));
  CHECK_THAT(FormatNodes(response, OutputFormat::kYaml, kNowMs).value(),
             Catch::StartsWith("nodes:\n  - name: node-a\n"));
  CHECK(FormatNodes(v1::ListNodesResponse(), OutputFormat::kJson, kNowMs).value() ==
        "{\n \"nodes\": []\n}\n");
}

TEST_CASE("RenderEventList keeps the order and leaves out columns no event has", "[cluster_view]") {
  v1::ListEventsResponse response;
  *response.add_events() = MakeEvent(60000, "NodeRegistered", "", "", "node-a", "agent 0.1.0");
  *response.add_events() = MakeEvent(30000, "JobQueued", "j-1", "", "", "submitted");
  *response.add_events() =
      MakeEvent(1000, "ReplicaExited", "j-1", "worker-0", "node-a", "exited with status 3");
  CHECK(RenderEventList(response.events()) ==
        "TIME                   TYPE             JOB   REPLICA    NODE     REASON\n"
        "2025-12-31T23:59:00Z   NodeRegistered   -     -          node-a   agent 0.1.0\n"
        "2025-12-31T23:59:30Z   JobQueued        j-1   -          -        submitted\n"
        "2025-12-31T23:59:59Z   ReplicaExited    j-1   worker-0   node-a   exited with status 3\n");

  response.Clear();
  *response.add_events() = MakeEvent(60000, "NodeRegistered", "", "", "node-a", "");
  *response.add_events() = MakeEvent(0, "NodeDisconnected", "", "", "node-a", "heartbeat lost");
  CHECK(RenderEventList(response.events()) ==
        "TIME                   TYPE               NODE     REASON\n"
        "2025-12-31T23:59:00Z   NodeRegistered     node-a\n"
        "2026-01-01T00:00:00Z   NodeDisconnected   node-a   heartbeat lost\n");
}

TEST_CASE("FormatEvents wraps the events in an events list", "[cluster_view]") {
  v1::ListEventsResponse response;
  *response.add_events() = MakeEvent(1000, "JobQueued", "j-1", "", "", "submitted");
  for (OutputFormat format : {OutputFormat::kJson, OutputFormat::kYaml}) {
    std::string text = FormatEvents(response, format).value();
    CHECK_THAT(text, Catch::Contains("2025-12-31T23:59:59Z"));
    v1::ListEventsResponse back;  // JSON and YAML both read back through the spec parser
    REQUIRE(ParseYamlToMessage(text, &back).ok());
    CHECK(google::protobuf::util::MessageDifferencer::Equals(back, response));
  }
  CHECK_THAT(FormatEvents(response, OutputFormat::kYaml).value(),
             Catch::StartsWith("events:\n  - "));
}

TEST_CASE("ParseSince takes a duration back from now or an RFC3339 time", "[cluster_view]") {
  struct Row {
    std::string text;
    int64_t want_ms;
  };
  for (const Row& row : std::vector<Row>{
           {"10m", kNowMs - 10 * 60 * 1000},
           {"1h30m", kNowMs - 90 * 60 * 1000},
           {"90", kNowMs - 90 * 1000},
           {"0s", kNowMs},
           {"2025-12-31T23:00:00Z", kNowMs - 3600 * 1000},
           {"2026-01-01T01:00:00+01:00", kNowMs},
           {"2025-12-31T23:59:59.5Z", kNowMs - 500},
       }) {
    INFO(row.text);
    absl::StatusOr<int64_t> since = ParseSince(row.text, kNowMs);
    REQUIRE(since.ok());
    CHECK(*since == row.want_ms);
  }
  for (const char* bad : {"", "-5m", "yesterday", "2026-01-01", "10x"}) {
    INFO(bad);
    absl::StatusOr<int64_t> since = ParseSince(bad, kNowMs);
    REQUIRE(!since.ok());
    CHECK(since.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(since.status().message()), Catch::Contains("RFC3339"));
  }
}

}  // namespace
}  // namespace trainctl::cli
