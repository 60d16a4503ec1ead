#include "cli/node_view.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/spec_parse.h"
#include "common/time_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

v1::CheckResult Item(const std::string& item, bool passed, const std::string& measured,
                     const std::string& threshold, const std::string& message) {
  v1::CheckResult r;
  r.set_item(item);
  r.set_passed(passed);
  r.set_measured(measured);
  r.set_threshold(threshold);
  r.set_message(message);
  return r;
}

// An isolated, flapping node whose preflight check for a job failed on its root disk.
v1::Node IsolatedNode() {
  v1::Node node;
  node.set_name("node-c");
  node.set_address("10.0.0.3");
  node.set_connected(true);
  node.set_agent_version("0.2.0");
  *node.mutable_last_heartbeat_time() = MsToTimestamp(kNowMs - 2000);
  *node.mutable_register_time() = MsToTimestamp(kNowMs - 40 * kMinuteMs);
  node.set_state(v1::NODE_STATE_ISOLATED);
  node.set_state_reason("failed preflight check disk-size root: 3.1 GB free, need > 32 GB");
  *node.mutable_state_time() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  node.set_health(v1::NODE_HEALTH_UNHEALTHY);
  node.set_health_description("The host failed its preflight check at 2025-12-31T23:55:00Z");
  node.set_flapping(true);
  *node.add_isolation_times() = MsToTimestamp(kNowMs - 50 * kMinuteMs);
  *node.add_isolation_times() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  node.mutable_capacity()->set_cpu(8);
  node.mutable_capacity()->set_memory_mb(16384);
  node.mutable_capacity()->set_gpus(8);
  node.mutable_allocatable()->set_cpu(7.5);
  node.mutable_allocatable()->set_memory_mb(16000);
  node.mutable_allocatable()->set_gpus(8);
  node.mutable_free()->set_cpu(7.5);
  node.mutable_free()->set_memory_mb(16000);
  node.mutable_free()->set_gpus(8);
  (*node.mutable_labels())["zone"] = "a";
  (*node.mutable_labels())["rack"] = "r2";
  (*node.mutable_config())["interval"] = "1m";
  (*node.mutable_config())["disk-size root"] = "/ > 32 GB";
  v1::CheckRun* run = node.add_checks();
  run->set_phase("preflight");
  *run->mutable_time() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  run->set_job_id("j-abc");
  *run->add_items() = Item("dns", true, "", "every hostname resolves", "2 of 2 hostnames resolve");
  *run->add_items() =
      Item("disk-size root", false, "3.1 GB free", "> 32 GB", "3.1 GB free, need > 32 GB");
  v1::CheckRun* periodic = node.add_checks();
  periodic->set_phase("periodic");
  periodic->set_passed(true);
  *periodic->mutable_time() = MsToTimestamp(kNowMs - kMinuteMs);
  *periodic->add_items() =
      Item("disk-size root", true, "120.4 GB free", "> 32 GB", "120.4 GB free > 32 GB");
  return node;
}

google::protobuf::RepeatedPtrField<v1::Event> NodeEvents() {
  google::protobuf::RepeatedPtrField<v1::Event> events;
  v1::Event* isolated = events.Add();
  *isolated->mutable_time() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  isolated->set_type("NodeIsolated");
  isolated->set_node("node-c");
  isolated->set_job_id("j-abc");
  isolated->set_reason("failed preflight check disk-size root");
  v1::Event* flapping = events.Add();
  *flapping->mutable_time() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  flapping->set_type("NodeFlapping");
  flapping->set_node("node-c");
  flapping->set_reason("isolated 2 times within 1h");
  return events;
}

TEST_CASE("CheckItemLine reads like trainctl-agent --check", "[node_view]") {
  CHECK(CheckItemLine(
            Item("disk-size root", true, "120.4 GB free", "> 32 GB", "120.4 GB free > 32 GB")) ==
        "item disk-size root  passed  measured 120.4 GB free  threshold > 32 GB");
  // A failed item says why.
  CHECK(CheckItemLine(Item("gpu-check", false, "7 GPUs detected", ">= 8 GPUs",
                           "7 GPUs detected, need >= 8 GPUs")) ==
        "item gpu-check  failed  measured 7 GPUs detected  threshold >= 8 GPUs  message 7 GPUs "
        "detected, need >= 8 GPUs");
  // What the item leaves empty is left out.
  CHECK(CheckItemLine(Item("dns", true, "", "every hostname resolves", "2 of 2 resolve")) ==
        "item dns  passed  threshold every hostname resolves");
  CHECK(CheckItemLine(Item("startup-script", false, "", "", "")) == "item startup-script  failed");
}

TEST_CASE("RenderNodeDescription shows every section of an isolated node", "[node_view]") {
  CHECK(RenderNodeDescription(IsolatedNode(), NodeEvents(), kNowMs) ==
        "Name:            node-c\n"
        "Address:         10.0.0.3\n"
        "Agent version:   0.2.0\n"
        "Connected:       yes\n"
        "Last heartbeat:  2025-12-31T23:59:58Z (2s ago)\n"
        "Registered:      2025-12-31T23:20:00Z (40m ago)\n"
        "State:           ISOLATED since 2025-12-31T23:55:00Z (5m ago)\n"
        "State reason:    failed preflight check disk-size root: 3.1 GB free, need > 32 GB\n"
        "Health:          UNHEALTHY\n"
        "Health event:    The host failed its preflight check at 2025-12-31T23:55:00Z\n"
        "Cordoned:        no\n"
        "Flapping:        yes: stays out until an operator runs 'trainctl node uncordon node-c'\n"
        "Isolations:      2 in the flapping window: 2025-12-31T23:10:00Z, 2025-12-31T23:55:00Z\n"
        "Labels:          rack=r2, zone=a\n"
        "\n"
        "Resources:\n"
        "  RESOURCE   CAPACITY   ALLOCATABLE   FREE\n"
        "  cpu        8          7.5           7.5\n"
        "  memory     16384Mi    16000Mi       16000Mi\n"
        "  gpus       8          8             8\n"
        "  Replicas placed: 0\n"
        "\n"
        "Config:\n"
        "  disk-size root:  / > 32 GB\n"
        "  interval:        1m\n"
        "\n"
        "Checks:\n"
        "  preflight  FAILED  2025-12-31T23:55:00Z (5m ago)  job j-abc\n"
        "    item dns  passed  threshold every hostname resolves\n"
        "    item disk-size root  failed  measured 3.1 GB free  threshold > 32 GB  message 3.1 GB "
        "free, need > 32 GB\n"
        "  periodic  PASSED  2025-12-31T23:59:00Z (60s ago)\n"
        "    item disk-size root  passed  measured 120.4 GB free  threshold > 32 GB\n"
        "\n"
        "Recent events:\n"
        "  TIME                   TYPE           JOB     REASON\n"
        "  2025-12-31T23:55:00Z   NodeIsolated   j-abc   failed preflight check disk-size root\n"
        "  2025-12-31T23:55:00Z   NodeFlapping   -       isolated 2 times within 1h\n");
}

TEST_CASE("RenderNodeDescription of a draining node shows its deadline", "[node_view]") {
  v1::Node node;
  node.set_name("node-1");
  node.set_state(v1::NODE_STATE_DRAINING);
  node.set_state_reason("kernel upgrade");
  node.set_cordoned(true);
  node.set_health(v1::NODE_HEALTH_HEALTHY);
  node.set_replicas(2);
  *node.mutable_drain_deadline() = MsToDuration(5 * kMinuteMs);
  google::protobuf::RepeatedPtrField<v1::Event> none;
  CHECK(RenderNodeDescription(node, none, kNowMs) ==
        "Name:            node-1\n"
        "Connected:       no\n"
        "Last heartbeat:  never\n"
        "State:           DRAINING\n"
        "State reason:    kernel upgrade\n"
        "Health:          HEALTHY\n"
        "Cordoned:        yes\n"
        "Flapping:        no\n"
        "Drain deadline:  5m0s\n"
        "\n"
        "Resources:\n"
        "  RESOURCE   CAPACITY   ALLOCATABLE   FREE\n"
        "  cpu        0          0             0\n"
        "  memory     0Mi        0Mi           0Mi\n"
        "  gpus       0          0             0\n"
        "  Replicas placed: 2\n"
        "\n"
        "Recent events:  <none>\n");
  // Without a deadline each replica gets its job's stopGracePeriod.
  node.clear_drain_deadline();
  CHECK_THAT(RenderNodeDescription(node, none, kNowMs),
             Catch::Contains("Drain deadline:  each job's stopGracePeriod\n"));
  // Only a draining node has one.
  node.set_state(v1::NODE_STATE_CORDONED);
  CHECK_THAT(RenderNodeDescription(node, none, kNowMs), !Catch::Contains("Drain deadline"));
}

TEST_CASE("FormatNodeDescription prints {node, events} as JSON and YAML", "[node_view]") {
  v1::ListEventsResponse events;
  *events.mutable_events() = NodeEvents();
  const std::string json =
      FormatNodeDescription(IsolatedNode(), events, OutputFormat::kJson, kNowMs).value();
  CHECK_THAT(json, Catch::StartsWith("{\n \"node\": {\n  \"name\": \"node-c\",\n"));
  CHECK_THAT(json, Catch::Contains("\n  \"state\": \"NODE_STATE_ISOLATED\",\n"));
  CHECK_THAT(json, Catch::Contains("\n },\n \"events\": [\n  {\n"));
  CHECK_THAT(json, Catch::EndsWith("\n ]\n}\n"));
  // Both halves read back as what was sent, through the spec parser (JSON and YAML alike).
  for (OutputFormat format : {OutputFormat::kJson, OutputFormat::kYaml}) {
    const std::string text = FormatNodeDescription(IsolatedNode(), events, format, kNowMs).value();
    v1::ListEventsResponse events_back;
    v1::Node node_back;
    // Each half on its own: {"events": [...]} without "node", {"node"...} as a Node's fields.
    const size_t split = text.find(format == OutputFormat::kJson ? "\n \"events\"" : "\nevents:");
    REQUIRE(split != std::string::npos);
    std::string node_part = text.substr(0, split);
    std::string events_part = text.substr(split + 1);
    if (format == OutputFormat::kJson) {
      node_part = node_part.substr(node_part.find("\"node\": ") + 8);
      node_part.pop_back();  // the comma
      events_part = "{" + events_part;
    } else {
      node_part = node_part.substr(node_part.find('\n') + 1);  // "node:"
    }
    INFO(text);
    REQUIRE(ParseYamlToMessage(node_part, &node_back).ok());
    REQUIRE(ParseYamlToMessage(events_part, &events_back).ok());
    CHECK(google::protobuf::util::MessageDifferencer::Equals(node_back, IsolatedNode()));
    CHECK(google::protobuf::util::MessageDifferencer::Equals(events_back, events));
  }
  const std::string empty =
      FormatNodeDescription(v1::Node(), v1::ListEventsResponse(), OutputFormat::kJson, kNowMs)
          .value();
  CHECK_THAT(empty, Catch::EndsWith("\n },\n \"events\": []\n}\n"));
}

TEST_CASE("NodeActionLine says the state a command left the node in", "[node_view]") {
  struct Row {
    NodeAction action;
    v1::NodeState state;
    const char* reason;
    int replicas;
    bool cordoned;
    const char* want;
  };
  for (const Row& row : std::vector<Row>{
           {NodeAction::kDrain, v1::NODE_STATE_DRAINING, "kernel upgrade", 2, true,
            "node node-1 DRAINING: kernel upgrade (2 replicas moving)"},
           {NodeAction::kDrain, v1::NODE_STATE_DRAINING, "kernel upgrade", 1, true,
            "node node-1 DRAINING: kernel upgrade (1 replica moving)"},
           // Nothing to move: cordoned at once.
           {NodeAction::kDrain, v1::NODE_STATE_CORDONED, "kernel upgrade", 0, true,
            "node node-1 CORDONED: kernel upgrade"},
           {NodeAction::kCordon, v1::NODE_STATE_CORDONED, "", 3, true, "node node-1 CORDONED"},
           {NodeAction::kCordon, v1::NODE_STATE_CORDONED, "bad fan", 3, true,
            "node node-1 CORDONED: bad fan"},
           // The hold is in place under a state that says more.
           {NodeAction::kCordon, v1::NODE_STATE_ISOLATED, "failed dns", 0, true,
            "node node-1 ISOLATED: failed dns (cordoned)"},
           {NodeAction::kUncordon, v1::NODE_STATE_READY, "uncordoned", 0, false,
            "node node-1 READY"},
           {NodeAction::kUncordon, v1::NODE_STATE_ISOLATED,
            "failed periodic check disk-size root: 3.1 GB free, need > 32 GB", 0, false,
            "node node-1 ISOLATED: stays out until its checks pass: failed periodic check "
            "disk-size root: 3.1 GB free, need > 32 GB"},
           {NodeAction::kUncordon, v1::NODE_STATE_ISOLATED, "", 0, false,
            "node node-1 ISOLATED: stays out until its checks pass"},
           {NodeAction::kUncordon, v1::NODE_STATE_LOST, "no heartbeat for 30s", 0, false,
            "node node-1 LOST: no heartbeat for 30s"},
       }) {
    INFO(row.want);
    v1::Node node;
    node.set_name("node-1");
    node.set_state(row.state);
    node.set_state_reason(row.reason);
    node.set_replicas(row.replicas);
    node.set_cordoned(row.cordoned);
    CHECK(NodeActionLine(row.action, node) == row.want);
  }
}

}  // namespace
}  // namespace trainctl::cli
