// Runs `trainctl node describe|cordon|uncordon|drain` against the fake server (fake_server.h,
// fake_nodes.h) and checks what they print, what they send and their exit statuses. The fake dates
// its times back from each request, so ages are fixed; absolute times are not.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec_parse.h"
#include "common/time_util.h"
#include "tests/cli/fake_server.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

// An RFC3339 time in seconds, as a regex.
constexpr char kTime[] = "20[0-9-]{8}T[0-9:]{8}Z";

template <typename Request>
Request Last() {
  Request request;
  REQUIRE(Fake().LastNodeRequest(&request));
  return request;
}

TEST_CASE("node describe shows state, health, resources, config, checks and events",
          "[binary][node]") {
  Result described = Fake().Run("node describe node-c");
  INFO(described.err);
  REQUIRE(described.exit_status == 0);
  const std::string t = kTime;
  CHECK_THAT(
      described.out,
      Catch::Matches("Name:            node-c\n"
                     "Address:         10.0.0.3:7071\n"
                     "Agent version:   0.2.0\n"
                     "Connected:       yes\n"
                     "Last heartbeat:  " +
                     t +
                     " \\(5s ago\\)\n"
                     "Registered:      " +
                     t +
                     " \\(40m ago\\)\n"
                     "State:           ISOLATED since " +
                     t +
                     " \\(12m ago\\)\n"
                     "State reason:    failed preflight check disk-size root: 3.1 GB free, need > "
                     "32 GB\n"
                     "Health:          UNHEALTHY\n"
                     "Health event:    The host failed its periodic check: disk-size root\n"
                     "Cordoned:        no\n"
                     "Flapping:        yes: stays out until an operator runs 'trainctl node "
                     "uncordon node-c'\n"
                     "Isolations:      3 in the flapping window: " +
                     t + ", " + t + ", " + t +
                     "\n"
                     "Labels:          rack=r2, zone=a\n"
                     "\n"
                     "Resources:\n"
                     "(.|\n)*"));
  CHECK_THAT(described.out, Catch::Contains("\n"
                                            "Resources:\n"
                                            "  RESOURCE   CAPACITY   ALLOCATABLE   FREE\n"
                                            "  cpu        8          7.5           7.5\n"
                                            "  memory     16384Mi    16000Mi       16000Mi\n"
                                            "  gpus       8          8             8\n"
                                            "  Replicas placed: 0\n"
                                            "\n"
                                            "Config:\n"
                                            "  disk-size root:         / > 32 GB\n"
                                            "  disk-size shm:          /dev/shm > 1 GB\n"
                                            "  health check interval:  1m\n"
                                            "\n"
                                            "Checks:\n"
                                            "  preflight  FAILED  "));
  CHECK_THAT(described.out,
             Catch::Matches("(.|\n)*\nChecks:\n"
                            "  preflight  FAILED  " +
                            t +
                            " \\(12m ago\\)  job j-described\n"
                            "    item dns  passed  threshold every hostname resolves\n"
                            "    item disk-size root  failed  measured 3.1 GB free  threshold > 32 "
                            "GB  message 3.1 GB free, need > 32 GB\n"
                            "    item gpu-check  passed  measured 8 GPUs detected  threshold >= 8 "
                            "GPUs\n"
                            "  periodic  FAILED  " +
                            t +
                            " \\(60s ago\\)\n"
                            "    item dns  passed  threshold every hostname resolves\n"
                            "    item disk-size root  failed  measured 3.1 GB free  threshold > 32 "
                            "GB  message 3.1 GB free, need > 32 GB\n"
                            "    item gpu-check  passed  measured 8 GPUs detected  threshold >= 8 "
                            "GPUs\n"
                            "\n"
                            "Recent events:\n"
                            "  TIME                   TYPE             REASON\n"
                            "  " +
                            t +
                            "   NodeRegistered   agent 0.2.0\n"
                            "  " +
                            t +
                            "   NodeIsolated     failed preflight check disk-size root: 3.1 GB "
                            "free, need > 32 GB\n"
                            "  " +
                            t + "   NodeFlapping     isolated 3 times within 1h\n"));
  CHECK(Last<v1::GetNodeRequest>().name() == "node-c");
  const v1::ListEventsRequest events = Fake().LastEventsRequest();
  CHECK(events.node() == "node-c");
  CHECK(events.job_id().empty());
  CHECK(events.limit() == 20);

  // A node with no checks or config leaves those sections out.
  Result lost = Fake().Run("node describe node-b");
  REQUIRE(lost.exit_status == 0);
  CHECK_THAT(lost.out, Catch::Contains("Connected:       no\n"));
  CHECK_THAT(lost.out, Catch::Contains("State reason:    no heartbeat for 30s\n"));
  CHECK_THAT(lost.out, !Catch::Contains("Config:") && !Catch::Contains("Checks:"));
}

TEST_CASE("node describe -o json and yaml print {node, events}", "[binary][node]") {
  Result json = Fake().Run("node describe node-b -o json");
  INFO(json.err);
  REQUIRE(json.exit_status == 0);
  CHECK_THAT(json.out, Catch::StartsWith("{\n \"node\": {\n  \"name\": \"node-b\",\n"));
  CHECK_THAT(json.out, Catch::Contains("  \"state\": \"NODE_STATE_LOST\",\n"));
  CHECK_THAT(json.out, Catch::Contains("\n },\n \"events\": [\n"));
  // The events half is a ListEventsResponse: node-b's three events, oldest first.
  v1::ListEventsResponse events;
  REQUIRE(ParseYamlToMessage("{" + json.out.substr(json.out.find("\n \"events\"")), &events).ok());
  REQUIRE(events.events_size() == 3);
  CHECK(events.events(0).type() == "ReplicaStarted");
  CHECK(events.events(2).type() == "NodeDisconnected");

  Result yaml = Fake().Run("node describe node-a -o yaml");
  REQUIRE(yaml.exit_status == 0);
  CHECK_THAT(yaml.out, Catch::StartsWith("node:\n  name: node-a\n"));
  CHECK_THAT(yaml.out, Catch::Contains("\n  state: NODE_STATE_READY\n"));
  CHECK_THAT(yaml.out, Catch::Contains("\nevents:\n  - "));
}

TEST_CASE("node cordon sends the name and reason and prints the state", "[binary][node]") {
  Result plain = Fake().Run("node cordon node-a");
  INFO(plain.err);
  REQUIRE(plain.exit_status == 0);
  CHECK(plain.out == "node node-a CORDONED\n");
  CHECK(plain.err.empty());
  v1::CordonNodeRequest sent = Last<v1::CordonNodeRequest>();
  CHECK(sent.name() == "node-a");
  CHECK(sent.reason().empty());

  Result reason = Fake().Run("node cordon node-a --reason 'bad fan'");
  REQUIRE(reason.exit_status == 0);
  CHECK(reason.out == "node node-a CORDONED: bad fan\n");
  CHECK(Last<v1::CordonNodeRequest>().reason() == "bad fan");

  // An isolated node keeps its state; the hold is in place under it.
  Result isolated = Fake().Run("node cordon node-c --reason 'bad fan'");
  CHECK(isolated.out ==
        "node node-c ISOLATED: failed preflight check disk-size root: 3.1 GB free, need > 32 GB "
        "(cordoned)\n");

  Result json = Fake().Run("node cordon node-a -o json");
  REQUIRE(json.exit_status == 0);
  v1::Node node;
  REQUIRE(ParseYamlToMessage(json.out, &node).ok());
  CHECK(node.state() == v1::NODE_STATE_CORDONED);
  CHECK(node.cordoned());
}

TEST_CASE("node drain sends the reason and deadline and says how many replicas move",
          "[binary][node]") {
  Result drain = Fake().Run("node drain node-a --reason 'kernel upgrade' --deadline 5m");
  INFO(drain.err);
  REQUIRE(drain.exit_status == 0);
  CHECK(drain.out == "node node-a DRAINING: kernel upgrade (2 replicas moving)\n");
  v1::DrainNodeRequest sent = Last<v1::DrainNodeRequest>();
  CHECK(sent.name() == "node-a");
  CHECK(sent.reason() == "kernel upgrade");
  REQUIRE(sent.has_deadline());
  CHECK(sent.deadline().seconds() == 300);

  // Without --deadline each replica gets its job's stopGracePeriod.
  Result no_deadline = Fake().Run("node drain node-a --reason=reboot");
  REQUIRE(no_deadline.exit_status == 0);
  CHECK_FALSE(Last<v1::DrainNodeRequest>().has_deadline());

  // Nothing to move: cordoned at once.
  Result empty = Fake().Run("node drain node-b --reason 'disk swap' --deadline 30s");
  CHECK(empty.out == "node node-b CORDONED: disk swap\n");
  CHECK(Last<v1::DrainNodeRequest>().deadline().seconds() == 30);
}

TEST_CASE("node uncordon says when a node stays out until its checks pass", "[binary][node]") {
  Result ready = Fake().Run("node uncordon node-a");
  INFO(ready.err);
  REQUIRE(ready.exit_status == 0);
  CHECK(ready.out == "node node-a READY\n");
  CHECK(Last<v1::UncordonNodeRequest>().name() == "node-a");

  Result isolated = Fake().Run("node uncordon node-c");
  REQUIRE(isolated.exit_status == 0);
  CHECK(isolated.out ==
        "node node-c ISOLATED: stays out until its checks pass: failed preflight check disk-size "
        "root: 3.1 GB free, need > 32 GB\n");
  CHECK(Last<v1::UncordonNodeRequest>().name() == "node-c");
}

TEST_CASE("node checks its command line before any request", "[binary][node]") {
  struct Row {
    const char* args;
    const char* err;
  };
  for (const Row& row : std::vector<Row>{
           {"node drain node-a",
            "error: INVALID_ARGUMENT: --reason is required: say why the node is drained, e.g. "
            "--reason \"kernel upgrade\"\n"},
           {"node drain node-a --reason ''",
            "error: INVALID_ARGUMENT: --reason is required: say why the node is drained, e.g. "
            "--reason \"kernel upgrade\"\n"},
           {"node drain --reason x",
            "error: INVALID_ARGUMENT: node drain needs the node's name: trainctl node drain NODE "
            "--reason TEXT [--deadline DURATION] ('trainctl nodes' lists them)\n"},
           {"node cordon",
            "error: INVALID_ARGUMENT: node cordon needs the node's name: trainctl node cordon "
            "NODE [--reason TEXT] ('trainctl nodes' lists them)\n"},
           {"node describe",
            "error: INVALID_ARGUMENT: node describe needs the node's name: trainctl node describe "
            "NODE ('trainctl nodes' lists them)\n"},
           {"node drain node-a --reason x --deadline 5 minutes",
            "error: INVALID_ARGUMENT: unexpected argument \"minutes\" for \"node\"\n"
            "Run 'trainctl node --help' for usage.\n"},
           {"node drain node-a --reason x --deadline soon",
            "error: INVALID_ARGUMENT: --deadline must be a duration such as 30s, 5m or 1h (leave "
            "it out to give each replica its job's stopGracePeriod), got \"soon\"\n"},
           {"node drain node-a --reason x --deadline 0",
            "error: INVALID_ARGUMENT: --deadline must be longer than 0s: it is how long each "
            "replica gets to stop before SIGKILL; leave it out to use each job's "
            "stopGracePeriod\n"},
           {"node cordon node-a --deadline 5m",
            "error: INVALID_ARGUMENT: node cordon takes no --deadline; it is for node drain\n"},
           {"node uncordon node-a --reason x",
            "error: INVALID_ARGUMENT: node uncordon takes no --reason; it is for node cordon, "
            "node drain, node revoke, node delete and node maintenance\n"},
           {"node describe node-a -o xml",
            "error: INVALID_ARGUMENT: unknown output format \"xml\"; use table, json or yaml\n"},
       }) {
    INFO(row.args);
    const int before = Fake().NodeRequests();
    Result bad = Fake().Run(row.args);
    CHECK(bad.exit_status == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err == row.err);
    CHECK(Fake().NodeRequests() == before);
  }

  const int before = Fake().NodeRequests();
  Result long_reason =
      Fake().Run(absl::StrCat("node cordon node-a --reason ", std::string(1025, 'x')));
  CHECK(long_reason.exit_status == 2);
  CHECK(long_reason.err ==
        "error: INVALID_ARGUMENT: --reason is 1025 characters long; at most 1024 are allowed\n");
  CHECK(Fake().NodeRequests() == before);
}

TEST_CASE("node without a known subcommand lists the subcommands", "[binary][node]") {
  const std::string list =
      "  describe NODE                                    State, health, resources, checks, "
      "recent events\n"
      "  cordon NODE [--reason TEXT]                      No new work; its replicas keep running\n"
      "  uncordon NODE                                    Lift the hold (ISOLATED waits for its "
      "checks)\n"
      "  drain NODE --reason TEXT [--deadline DURATION]   Cordon it and move its replicas to "
      "other nodes\n"
      "  maintenance NODE (--at ... | --clear)            Plan a maintenance window: drained at "
      "its start\n"
      "  revoke NODE [--reason TEXT]                      Refuse its agent's certificate from now "
      "on\n"
      "  delete NODE [--reason TEXT]                      Forget a node whose agent is gone "
      "(admin)\n"
      "  prepull IMAGE [--node NODE ...]                  Pull an image into nodes' caches ahead "
      "of a job\n";
  Result none = Fake().Run("node");
  CHECK(none.exit_status == 2);
  CHECK(none.out.empty());
  CHECK(none.err == "trainctl node needs a subcommand:\n\n" + list +
                        "\nRun 'trainctl node --help' for the flags.\n");

  Result unknown = Fake().Run("node restart node-a");
  CHECK(unknown.exit_status == 2);
  CHECK(unknown.out.empty());
  CHECK(unknown.err ==
        "error: INVALID_ARGUMENT: unknown node subcommand \"restart\"; use one of:\n" + list);

  Result help = Fixture::RunBinary("node --help");
  CHECK(help.exit_status == 0);
  CHECK_THAT(help.out,
             Catch::StartsWith("Usage:\n  trainctl node "
                               "describe|cordon|uncordon|drain|revoke|delete|maintenance NODE "
                               "| prepull IMAGE [flags]\n"));
  CHECK_THAT(help.out, Catch::Contains("Subcommands:\n" + list));
  for (const char* flag : {"--reason TEXT", "--deadline DURATION", "-o, --output FORMAT"}) {
    CHECK_THAT(help.out, Catch::Contains(flag));
  }
  CHECK(Fixture::RunBinary("help node").out == help.out);
  CHECK(Fixture::RunBinary("node drain --help").out == help.out);
  CHECK_THAT(
      Fixture::RunBinary("--help").out,
      Catch::Contains("\n  node         Show one node in detail, or cordon, uncordon, drain, "
                      "revoke, delete or schedule it; prepull an image\n"));
}

TEST_CASE("node prints the server's errors", "[binary][node]") {
  for (const char* args : {"node describe node-x", "node cordon node-x", "node uncordon node-x",
                           "node drain node-x --reason x"}) {
    INFO(args);
    Result missing = Fake().Run(args);
    CHECK(missing.exit_status == 2);
    CHECK(missing.out.empty());
    CHECK(missing.err == "error: NOT_FOUND: node node-x not found\n");
  }
  Result unreachable = Fixture::RunBinary("--server 127.0.0.1:1 node cordon node-a");
  CHECK(unreachable.exit_status == 2);
  CHECK_THAT(unreachable.err,
             Catch::StartsWith("error: UNAVAILABLE: cannot reach the trainctl server at "
                               "127.0.0.1:1"));
}

}  // namespace
}  // namespace trainctl::cli
