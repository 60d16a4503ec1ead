#include "cli/node_flags.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// Parses `trainctl node ARGV...` with the real flag specs.
ParsedArgs ParseNode(const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"node"};
  full.insert(full.end(), argv.begin(), argv.end());
  const std::vector<CommandSpec> commands = {{"node", "", "", "", NodeFlags(), 0, 2}};
  ParsedArgs parsed;
  REQUIRE(ParseArgs(full, {}, commands, &parsed).ok());
  return parsed;
}

// `n` characters of two bytes each ("é").
std::string TwoByteChars(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "\xc3\xa9";
  return s;
}

TEST_CASE("CheckNodeArgs accepts each subcommand with the flags it takes", "[node_flags]") {
  struct Row {
    std::vector<std::string> argv;
    NodeAction want;
  };
  for (const Row& row : std::vector<Row>{
           {{"describe", "node-1"}, NodeAction::kDescribe},
           {{"describe", "node-1", "-o", "json"}, NodeAction::kDescribe},
           {{"cordon", "node-1"}, NodeAction::kCordon},
           {{"cordon", "node-1", "--reason", "bad fan"}, NodeAction::kCordon},
           {{"uncordon", "node-1"}, NodeAction::kUncordon},
           {{"drain", "node-1", "--reason", "kernel upgrade"}, NodeAction::kDrain},
           {{"drain", "--reason=kernel upgrade", "node-1", "--deadline", "5m"}, NodeAction::kDrain},
           {{"drain", "node-1", "--reason", std::string(1024, 'x')}, NodeAction::kDrain},
           // The limit counts characters, not bytes.
           {{"drain", "node-1", "--reason", TwoByteChars(1024)}, NodeAction::kDrain},
           {{"maintenance", "node-1", "--at", "2026-12-01T02:00:00Z", "--duration", "2h",
             "--reason", "BIOS update"},
            NodeAction::kMaintenance},
           {{"maintenance", "node-1", "--clear"}, NodeAction::kMaintenance},
       }) {
    INFO(absl::StrJoin(row.argv, " "));
    absl::StatusOr<NodeAction> action = CheckNodeArgs(ParseNode(row.argv));
    REQUIRE(action.ok());
    CHECK(*action == row.want);
  }
}

TEST_CASE("CheckNodeArgs says what to type instead", "[node_flags]") {
  struct Row {
    std::vector<std::string> argv;
    std::string want;  // the whole message, or its start when it ends in "..."
  };
  for (const Row& row : std::vector<Row>{
           {{"cordon"},
            "node cordon needs the node's name: trainctl node cordon NODE [--reason TEXT] "
            "('trainctl nodes' lists them)"},
           {{"drain", "--reason", "x"},
            "node drain needs the node's name: trainctl node drain NODE --reason TEXT "
            "[--deadline DURATION] ('trainctl nodes' lists them)"},
           {{"describe", ""}, "node describe needs the node's name: ..."},
           {{"drain", "node-1"},
            "--reason is required: say why the node is drained, e.g. --reason \"kernel upgrade\""},
           {{"drain", "node-1", "--reason", "  "}, "--reason is required: ..."},
           {{"cordon", "node-1", "--reason", ""}, "--reason is empty: ..."},
           {{"drain", "node-1", "--reason", std::string(1025, 'x')},
            "--reason is 1025 characters long; at most 1024 are allowed"},
           {{"cordon", "node-1", "--reason", TwoByteChars(1025)},
            "--reason is 1025 characters long; at most 1024 are allowed"},
           {{"drain", "node-1", "--reason", "x", "--deadline", "soon"},
            "--deadline must be a duration such as 30s, 5m or 1h (leave it out to give each "
            "replica its job's stopGracePeriod), got \"soon\""},
           {{"drain", "node-1", "--reason", "x", "--deadline", "-5m"},
            "--deadline must be a duration ..."},
           {{"drain", "node-1", "--reason", "x", "--deadline", "0s"},
            "--deadline must be longer than 0s: ..."},
           {{"cordon", "node-1", "--deadline", "5m"},
            "node cordon takes no --deadline; it is for node drain"},
           {{"uncordon", "node-1", "--reason", "x"},
            "node uncordon takes no --reason; it is for node cordon, node drain, node revoke, node "
            "delete and node maintenance"},
           {{"maintenance", "node-1", "--at", "2026-12-01T02:00:00Z", "--duration", "2h"},
            "node maintenance needs --at, --duration and --reason, e.g. ..."},
           {{"maintenance", "node-1", "--at", "tomorrow", "--duration", "2h", "--reason", "x"},
            "--at must be an RFC3339 time such as 2026-12-01T02:00:00Z or "
            "2026-12-01T03:00:00+01:00, got \"tomorrow\""},
           {{"maintenance", "node-1", "--at", "2026-12-01T02:00:00Z", "--duration", "10s",
             "--reason", "x"},
            "--duration must be how long the host is down, 1m..720h, e.g. 2h or 90m, got \"10s\""},
           {{"maintenance", "node-1", "--clear", "--reason", "x"},
            "--clear removes the node's window: give no --at, --duration or --reason with it"},
           {{"drain", "node-1", "--reason", "x", "--clear"},
            "node drain takes no --clear; it is for node maintenance"},
           {{"describe", "node-1", "--reason", "x"}, "node describe takes no --reason; ..."},
           {{"describe", "node-1", "-o", "xml"}, "unknown output format \"xml\"; ..."},
           {{"restart", "node-1"},
            "unknown node subcommand \"restart\"; use one of:\n  describe ..."},
       }) {
    INFO(absl::StrJoin(row.argv, " "));
    absl::StatusOr<NodeAction> action = CheckNodeArgs(ParseNode(row.argv));
    REQUIRE_FALSE(action.ok());
    CHECK(action.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string message(action.status().message());
    if (row.want.size() > 3 && row.want.substr(row.want.size() - 3) == "...") {
      CHECK_THAT(message, Catch::StartsWith(row.want.substr(0, row.want.size() - 3)));
    } else {
      CHECK(message == row.want);
    }
  }
}

TEST_CASE("ParseNodeAction lists the subcommands", "[node_flags]") {
  CHECK(ParseNodeAction("drain").value() == NodeAction::kDrain);
  CHECK(ParseNodeAction("describe").value() == NodeAction::kDescribe);
  absl::StatusOr<NodeAction> bad = ParseNodeAction("Drain");
  REQUIRE_FALSE(bad.ok());
  CHECK(
      bad.status().message() ==
      "unknown node subcommand \"Drain\"; use one of:\n"
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
      "of a job");
  CHECK(ParseNodeAction("revoke").value() == NodeAction::kRevoke);
  CHECK(ParseNodeAction("delete").value() == NodeAction::kDelete);
  CHECK(ParseNodeAction("prepull").value() == NodeAction::kPrepull);
  CHECK_THAT(NodeSubcommandList(), Catch::EndsWith("caches ahead of a job\n"));
}

TEST_CASE("The requests carry the node, the reason and the deadline", "[node_flags]") {
  const v1::DrainNodeRequest drain = DrainRequestFromArgs(
      ParseNode({"drain", "node-1", "--reason", " kernel upgrade ", "--deadline", "1m30s"}));
  CHECK(drain.name() == "node-1");
  CHECK(drain.reason() == "kernel upgrade");  // trimmed
  REQUIRE(drain.has_deadline());
  CHECK(DurationToMs(drain.deadline()) == 90000);

  // Without --deadline the server gives each replica its job's stopGracePeriod.
  CHECK_FALSE(DrainRequestFromArgs(ParseNode({"drain", "node-1", "--reason", "x"})).has_deadline());

  const v1::CordonNodeRequest cordon =
      CordonRequestFromArgs(ParseNode({"cordon", "node-2", "--reason", "bad fan"}));
  CHECK(cordon.name() == "node-2");
  CHECK(cordon.reason() == "bad fan");
  CHECK(CordonRequestFromArgs(ParseNode({"cordon", "node-2"})).reason().empty());
  CHECK(UncordonRequestFromArgs(ParseNode({"uncordon", "node-3"})).name() == "node-3");
}

TEST_CASE("The maintenance request carries the window, or clear", "[node_flags]") {
  const v1::SetNodeMaintenanceRequest set = MaintenanceRequestFromArgs(
      ParseNode({"maintenance", "node-1", "--at", "2026-12-01T03:00:00+01:00", "--duration", "90m",
                 "--reason", " BIOS update "}));
  CHECK(set.name() == "node-1");
  CHECK(FormatRfc3339(TimestampToMs(set.start_time())) == "2026-12-01T02:00:00Z");
  CHECK(DurationToMs(set.duration()) == 90 * 60'000);
  CHECK(set.reason() == "BIOS update");
  CHECK_FALSE(set.clear());
  const v1::SetNodeMaintenanceRequest clear =
      MaintenanceRequestFromArgs(ParseNode({"maintenance", "node-1", "--clear"}));
  CHECK(clear.clear());
  CHECK_FALSE(clear.has_start_time());
}

}  // namespace
}  // namespace trainctl::cli
