#include "cli/cluster_view.h"

#include <catch2/catch.hpp>

#include "cli/node_view.h"
#include "common/spec_parse.h"
#include "common/time_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

v1::Node MakeNode(const std::string& name, v1::NodeState state, v1::NodeHealth health,
                  int64_t heartbeat_age_ms) {
  v1::Node node;
  node.set_name(name);
  node.set_address(name + ":7071");
  node.set_connected(state != v1::NODE_STATE_LOST);
  node.set_state(state);
  node.set_health(health);
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

TEST_CASE("NodeRow shows state, health, free/allocatable resources and the heartbeat age",
          "[cluster_view]") {
  v1::Node ready = MakeNode("node-a", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  CHECK(NodeRow(ready, false, kNowMs) == std::vector<std::string>{"node-a", "READY", "HEALTHY",
                                                                  "3.5/4", "3968/4096Mi", "0/0",
                                                                  "1", "3s ago"});
  v1::Node lost = MakeNode("node-b", v1::NODE_STATE_LOST, v1::NODE_HEALTH_UNKNOWN, -1);
  lost.clear_address();
  lost.mutable_allocatable()->set_gpus(8);
  lost.mutable_free()->set_gpus(6);
  lost.set_state_reason("no heartbeat for 30s");
  CHECK(NodeRow(lost, false, kNowMs) == std::vector<std::string>{"node-b", "LOST", "UNKNOWN",
                                                                 "3.5/4", "3968/4096Mi", "6/8", "1",
                                                                 "-"});
  // Wide: ADDRESS after HEALTH, AGENT, RESERVED and REASON at the end.
  CHECK(NodeRow(lost, true, kNowMs) ==
        std::vector<std::string>{"node-b", "LOST", "UNKNOWN", "-", "3.5/4", "3968/4096Mi", "6/8",
                                 "1", "-", "-", "", "no heartbeat for 30s"});
  // A server that reports no node states.
  v1::Node old = MakeNode("node-c", v1::NODE_STATE_UNSPECIFIED, v1::NODE_HEALTH_UNSPECIFIED, 0);
  CHECK(NodeRow(old, false, kNowMs)[1] == "-");
  CHECK(NodeRow(old, false, kNowMs)[2] == "-");
}

TEST_CASE("RenderNodeList adds a MAINTENANCE column while some node has a window",
          "[cluster_view]") {
  v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("node-a", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  CHECK(RenderNodeList(response.nodes(), false, kNowMs).find("MAINTENANCE") == std::string::npos);
  v1::Node* planned = response.add_nodes();
  *planned = MakeNode("node-b", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  v1::MaintenanceWindow* w = planned->mutable_maintenance();
  *w->mutable_start_time() = MsToTimestamp(kNowMs + 3 * 3'600'000);
  *w->mutable_duration() = MsToDuration(2 * 3'600'000);
  w->set_reason("BIOS update");
  w->set_source("agent");
  const std::string table = RenderNodeList(response.nodes(), false, kNowMs);
  CHECK_THAT(table, Catch::Contains("MAINTENANCE"));
  CHECK_THAT(table, Catch::Contains(FormatRfc3339(kNowMs + 3 * 3'600'000) +
                                    " for 2h, in 3h (BIOS update) [agent]"));
  // Once it began: until when.
  *w->mutable_start_time() = MsToTimestamp(kNowMs - 60'000);
  w->set_source("operator");
  CHECK(MaintenanceText(*planned, kNowMs) ==
        "now, until " + FormatRfc3339(kNowMs - 60'000 + 2 * 3'600'000) + " (BIOS update)");
  CHECK(MaintenanceText(response.nodes(0), kNowMs).empty());
}

TEST_CASE("nodes -o wide adds a RESERVED column while a node is kept for a queued job",
          "[cluster_view]") {
  v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("node-a", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  *response.add_nodes() = MakeNode("node-b", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  CHECK(RenderNodeList(response.nodes(), true, kNowMs).find("RESERVED") == std::string::npos);
  v1::NodeReservation* r = response.mutable_nodes(1)->mutable_reservation();
  r->set_job_id("j-gang");
  *r->mutable_expected_start_time() = MsToTimestamp(kNowMs + 4 * 60'000);
  const std::string table = RenderNodeList(response.nodes(), true, kNowMs);
  CHECK_THAT(table, Catch::Contains("RESERVED"));
  CHECK_THAT(table,
             Catch::Contains("j-gang from " + FormatRfc3339(kNowMs + 4 * 60'000) + " (in 4m)"));
  // node-a is kept for nobody.
  CHECK_THAT(table, Catch::Contains("3s ago      -       -\n"));
  r->clear_expected_start_time();
  CHECK_THAT(RenderNodeList(response.nodes(), true, kNowMs),
             Catch::Contains("j-gang (start unknown)"));
  // The plain table has no such column.
  CHECK(RenderNodeList(response.nodes(), false, kNowMs).find("RESERVED") == std::string::npos);
}

TEST_CASE("RenderNodeList renders a header and one row per node", "[cluster_view]") {
  v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("node-a", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  v1::Node* draining = response.add_nodes();
  *draining = MakeNode("node-b", v1::NODE_STATE_DRAINING, v1::NODE_HEALTH_HEALTHY, 5 * 60 * 1000);
  draining->set_state_reason("kernel upgrade");
  draining->set_agent_version("0.2.0");
  *response.add_nodes() =
      MakeNode("node-c", v1::NODE_STATE_ISOLATED, v1::NODE_HEALTH_UNHEALTHY, 2000);
  CHECK(RenderNodeList(response.nodes(), false, kNowMs) ==
        "NAME     STATE      HEALTH      CPU     MEMORY        GPUS   REPLICAS   HEARTBEAT\n"
        "node-a   READY      HEALTHY     3.5/4   3968/4096Mi   0/0    1          3s ago\n"
        "node-b   DRAINING   HEALTHY     3.5/4   3968/4096Mi   0/0    1          5m ago\n"
        "node-c   ISOLATED   UNHEALTHY   3.5/4   3968/4096Mi   0/0    1          2s ago\n");
  CHECK(RenderNodeList(response.nodes(), true, kNowMs) ==
        "NAME     STATE      HEALTH      ADDRESS       CPU     MEMORY        GPUS   REPLICAS   "
        "HEARTBEAT   AGENT   REASON\n"
        "node-a   READY      HEALTHY     node-a:7071   3.5/4   3968/4096Mi   0/0    1          "
        "3s ago      -\n"
        "node-b   DRAINING   HEALTHY     node-b:7071   3.5/4   3968/4096Mi   0/0    1          "
        "5m ago      0.2.0   kernel upgrade\n"
        "node-c   ISOLATED   UNHEALTHY   node-c:7071   3.5/4   3968/4096Mi   0/0    1          "
        "2s ago      -\n");
}

TEST_CASE("ParseNodesOutput takes table, wide, json and yaml", "[cluster_view]") {
  CHECK(ParseNodesOutput("wide").value().wide);
  CHECK(ParseNodesOutput("WIDE").value().format == OutputFormat::kTable);
  CHECK_FALSE(ParseNodesOutput("table").value().wide);
  CHECK(ParseNodesOutput("json").value().format == OutputFormat::kJson);
  CHECK(ParseNodesOutput("yaml").value().format == OutputFormat::kYaml);
  absl::StatusOr<NodesOutput> bad = ParseNodesOutput("xml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "unknown output format \"xml\"; use table, wide, json or yaml");
}

TEST_CASE("FormatNodes wraps the nodes in a nodes list", "[cluster_view]") {
  v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("node-a", v1::NODE_STATE_READY, v1::NODE_HEALTH_HEALTHY, 3000);
  const NodesOutput json_output{OutputFormat::kJson, false};
  std::string json = FormatNodes(response, json_output, kNowMs).value();
  // The proto's JSON mapping: enum names, lowerCamelCase fields.
  CHECK_THAT(json, Catch::Contains("\"state\": \"NODE_STATE_READY\""));
  CHECK_THAT(json, Catch::Contains("\"health\": \"NODE_HEALTH_HEALTHY\""));
  CHECK_THAT(json, Catch::Contains("\"lastHeartbeatTime\": \"2025-12-31T23:59:57Z\""));
  v1::ListNodesResponse back;
  REQUIRE(ParseYamlToMessage(json, &back).ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(back, response));
  CHECK_THAT(FormatNodes(response, {OutputFormat::kYaml, false}, kNowMs).value(),
             Catch::StartsWith("nodes:\n  - name: node-a\n"));
  CHECK(FormatNodes(v1::ListNodesResponse(), json_output, kNowMs).value() ==
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

  response.Clear();
  *response.add_events() = MakeEvent(60000, "NodeCordoned", "", "", "node-a", "kernel upgrade");
  response.mutable_events(0)->set_actor("alice");
  CHECK(RenderEventList(response.events()) ==
        "TIME                   TYPE           NODE     ACTOR   REASON\n"
        "2025-12-31T23:59:00Z   NodeCordoned   node-a   alice   kernel upgrade\n");
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
