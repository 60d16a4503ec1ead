#include "cli/node_flags.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/output.h"
#include "common/flag_values.h"
#include "common/time_util.h"
#include "google/protobuf/util/time_util.h"

namespace trainctl::cli {
namespace {

struct Subcommand {
  NodeAction action;
  const char* name;
  const char* usage;    // what follows "trainctl node"
  const char* summary;  // one line
};

constexpr Subcommand kSubcommands[] = {
    {NodeAction::kDescribe, "describe", "describe NODE",
     "State, health, resources, checks, recent events"},
    {NodeAction::kCordon, "cordon", "cordon NODE [--reason TEXT]",
     "No new work; its replicas keep running"},
    {NodeAction::kUncordon, "uncordon", "uncordon NODE",
     "Lift the hold (ISOLATED waits for its checks)"},
    {NodeAction::kDrain, "drain", "drain NODE --reason TEXT [--deadline DURATION]",
     "Cordon it and move its replicas to other nodes"},
    {NodeAction::kMaintenance, "maintenance", "maintenance NODE (--at ... | --clear)",
     "Plan a maintenance window: drained at its start"},
    {NodeAction::kRevoke, "revoke", "revoke NODE [--reason TEXT]",
     "Refuse its agent's certificate from now on"},
    {NodeAction::kDelete, "delete", "delete NODE [--reason TEXT]",
     "Forget a node whose agent is gone (admin)"},
    {NodeAction::kPrepull, "prepull", "prepull IMAGE [--node NODE ...]",
     "Pull an image into nodes' caches ahead of a job"},
};

const Subcommand& Find(NodeAction action) {
  return *std::find_if(std::begin(kSubcommands), std::end(kSubcommands),
                       [action](const Subcommand& s) { return s.action == action; });
}

std::string Reason(const ParsedArgs& args) {
  return std::string(absl::StripAsciiWhitespace(args.Get("reason")));
}

// The flags `action` does not take, as the error for the first one given.
absl::Status RejectFlags(const ParsedArgs& args, NodeAction action) {
  const std::string name = Find(action).name;
  if (args.IsSet("deadline") && action != NodeAction::kDrain) {
    return absl::InvalidArgumentError(
        absl::StrCat("node ", name, " takes no --deadline; it is for node drain"));
  }
  for (const char* flag : {"at", "duration", "clear"}) {
    if (args.IsSet(flag) && action != NodeAction::kMaintenance) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", name, " takes no --", flag, "; it is for node maintenance"));
    }
  }
  for (const char* flag : {"node", "project", "pull-secret", "timeout"}) {
    if (args.IsSet(flag) && action != NodeAction::kPrepull) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", name, " takes no --", flag, "; it is for node prepull"));
    }
  }
  if (args.IsSet("reason") && (action == NodeAction::kDescribe || action == NodeAction::kUncordon ||
                               action == NodeAction::kPrepull)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", name,
        " takes no --reason; it is for node cordon, node drain, node revoke, node delete and node "
        "maintenance"));
  }
  return absl::OkStatus();
}

absl::Status CheckReason(const ParsedArgs& args, NodeAction action) {
  const std::string reason = Reason(args);
  if (action == NodeAction::kDrain && reason.empty()) {
    return absl::InvalidArgumentError(
        "--reason is required: say why the node is drained, e.g. --reason \"kernel upgrade\"");
  }
  if (args.IsSet("reason") &&
      (action == NodeAction::kCordon || action == NodeAction::kRevoke ||
       action == NodeAction::kDelete) &&
      reason.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reason is empty: say why the node is ", Find(action).name,
                     action == NodeAction::kCordon ? "ed" : "d", ", e.g. --reason \"",
                     action == NodeAction::kCordon ? "bad fan" : "host decommissioned",
                     "\", or leave the flag out"));
  }
  const size_t chars = DisplayWidth(reason);
  if (chars > kMaxNodeReasonChars) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reason is ", chars, " characters long; at most ", kMaxNodeReasonChars, " are allowed"));
  }
  return absl::OkStatus();
}

// RFC 3339 ("2026-12-01T02:00:00Z") to Unix ms.
absl::StatusOr<int64_t> ParseAt(const std::string& text) {
  google::protobuf::Timestamp ts;
  if (!google::protobuf::util::TimeUtil::FromString(text, &ts) || TimestampToMs(ts) <= 0) {
    return BadFlagValue(
        "--at", "an RFC3339 time such as 2026-12-01T02:00:00Z or 2026-12-01T03:00:00+01:00", text);
  }
  return TimestampToMs(ts);
}

absl::Status CheckMaintenance(const ParsedArgs& args, NodeAction action) {
  if (action != NodeAction::kMaintenance) return absl::OkStatus();
  if (args.IsSet("clear") && args.GetBool("clear")) {
    if (args.IsSet("at") || args.IsSet("duration") || args.IsSet("reason")) {
      return absl::InvalidArgumentError(
          "--clear removes the node's window: give no --at, --duration or --reason with it");
    }
    return absl::OkStatus();
  }
  if (!args.IsSet("at") || !args.IsSet("duration") || Reason(args).empty()) {
    return absl::InvalidArgumentError(
        "node maintenance needs --at, --duration and --reason, e.g. --at 2026-12-01T02:00:00Z "
        "--duration 2h --reason \"BIOS update\", or --clear to remove the node's window");
  }
  if (absl::StatusOr<int64_t> at = ParseAt(args.Get("at")); !at.ok()) return at.status();
  return ParseDurationFlag("--duration", args.Get("duration"), 60'000,
                           std::numeric_limits<int64_t>::max(),
                           "how long the host is down, 1m..720h, e.g. 2h or 90m")
      .status();
}

absl::Status CheckPrepull(const ParsedArgs& args, NodeAction action) {
  if (action != NodeAction::kPrepull) return absl::OkStatus();
  for (const std::string& node : args.GetAll("node")) {
    if (node.empty()) return absl::InvalidArgumentError("--node is empty: give a node's name");
  }
  if (args.Get("project").empty() != args.Get("pull-secret").empty()) {
    return absl::InvalidArgumentError(
        "--project and --pull-secret go together: the project secret that holds the registry's "
        "credentials, e.g. --project team-a --pull-secret regcred");
  }
  if (!args.IsSet("timeout")) return absl::OkStatus();
  return ParseDurationFlag("--timeout", args.Get("timeout"), 1'000, 3'600'000,
                           "how long to wait for the nodes, 1s..1h, e.g. 20m")
      .status();
}

absl::Status CheckDeadline(const ParsedArgs& args) {
  if (!args.IsSet("deadline")) return absl::OkStatus();
  absl::StatusOr<int64_t> ms = ParseDurationFlag(
      "--deadline", args.Get("deadline"), 0, std::numeric_limits<int64_t>::max(),
      "a duration such as 30s, 5m or 1h (leave it out to give each replica its job's "
      "stopGracePeriod)");
  if (!ms.ok()) return ms.status();
  if (*ms <= 0) {
    return absl::InvalidArgumentError(
        "--deadline must be longer than 0s: it is how long each replica gets to stop before "
        "SIGKILL; leave it out to use each job's stopGracePeriod");
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> NodeFlags() {
  using Kind = FlagSpec::Kind;
  return {
      {"reason", 0, Kind::kValue, "TEXT", "",
       "cordon, drain: why, for the node's state and the event log (required for drain)"},
      {"deadline", 0, Kind::kValue, "DURATION", "",
       "drain: each replica's time from SIGTERM to SIGKILL, e.g. 30s, 5m, 1h (default: its "
       "job's stopGracePeriod)"},
      {"at", 0, Kind::kValue, "TIME", "",
       "maintenance: when the window starts, RFC3339 (2026-12-01T02:00:00Z)"},
      {"duration", 0, Kind::kValue, "DURATION", "",
       "maintenance: how long the host is down, e.g. 2h (1m..720h)"},
      {"clear", 0, Kind::kBool, "", "", "maintenance: remove the node's window"},
      {"node", 0, Kind::kList, "NODE", "",
       "prepull: a node to pull on; repeat for more (default: every connected node that runs "
       "images)"},
      {"project", 0, Kind::kValue, "PROJECT", "", "prepull: the project of --pull-secret"},
      {"pull-secret", 0, Kind::kValue, "SECRET", "",
       "prepull: the project secret with the registry's credentials (default: anonymous)"},
      {"timeout", 0, Kind::kValue, "DURATION", "",
       "prepull: how long to wait for the nodes, 1s..1h (default 10m)"},
      {"output", 'o', Kind::kValue, "FORMAT", "table",
       "Output format: table, json or yaml (json: the proto's JSON mapping)"},
  };
}

absl::StatusOr<NodeAction> ParseNodeAction(absl::string_view name) {
  for (const Subcommand& s : kSubcommands) {
    if (name == s.name) return s.action;
  }
  std::string list = NodeSubcommandList();
  list.pop_back();  // the error ends the line
  return absl::InvalidArgumentError(
      absl::StrCat("unknown node subcommand \"", name, "\"; use one of:\n", list));
}

std::string NodeSubcommandList() {
  size_t width = 0;
  for (const Subcommand& s : kSubcommands) width = std::max(width, std::string(s.usage).size());
  std::string out;
  for (const Subcommand& s : kSubcommands) {
    absl::StrAppend(&out, "  ", s.usage, std::string(width - std::string(s.usage).size() + 3, ' '),
                    s.summary, "\n");
  }
  return out;
}

absl::StatusOr<NodeAction> CheckNodeArgs(const ParsedArgs& args) {
  absl::StatusOr<NodeAction> action = ParseNodeAction(args.args()[0]);
  if (!action.ok()) return action.status();
  if (*action == NodeAction::kPrepull && (args.args().size() < 2 || args.args()[1].empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("node prepull needs the image: trainctl node ", Find(*action).usage,
                     ", e.g. trainctl node prepull registry:5000/team/train:1.4"));
  }
  if (args.args().size() < 2 || args.args()[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node ", Find(*action).name, " needs the node's name: trainctl node ",
                     Find(*action).usage, " ('trainctl nodes' lists them)"));
  }
  if (absl::Status s = RejectFlags(args, *action); !s.ok()) return s;
  if (absl::Status s = CheckReason(args, *action); !s.ok()) return s;
  if (absl::Status s = CheckDeadline(args); !s.ok()) return s;
  if (absl::Status s = CheckMaintenance(args, *action); !s.ok()) return s;
  if (absl::Status s = CheckPrepull(args, *action); !s.ok()) return s;
  if (absl::StatusOr<OutputFormat> format = ParseOutputFormat(args.Get("output")); !format.ok()) {
    return format.status();
  }
  return *action;
}

v1::CordonNodeRequest CordonRequestFromArgs(const ParsedArgs& args) {
  v1::CordonNodeRequest request;
  request.set_name(args.args()[1]);
  request.set_reason(Reason(args));
  return request;
}

v1::UncordonNodeRequest UncordonRequestFromArgs(const ParsedArgs& args) {
  v1::UncordonNodeRequest request;
  request.set_name(args.args()[1]);
  return request;
}

v1::DrainNodeRequest DrainRequestFromArgs(const ParsedArgs& args) {
  v1::DrainNodeRequest request;
  request.set_name(args.args()[1]);
  request.set_reason(Reason(args));
  if (args.IsSet("deadline")) {
    absl::StatusOr<int64_t> ms = ParseDurationMs(args.Get("deadline"));
    if (ms.ok()) *request.mutable_deadline() = MsToDuration(*ms);
  }
  return request;
}

v1::RevokeNodeRequest RevokeRequestFromArgs(const ParsedArgs& args) {
  v1::RevokeNodeRequest request;
  request.set_name(args.args()[1]);
  request.set_reason(Reason(args));
  return request;
}

v1::DeleteNodeRequest DeleteRequestFromArgs(const ParsedArgs& args) {
  v1::DeleteNodeRequest request;
  request.set_name(args.args()[1]);
  request.set_reason(Reason(args));
  return request;
}

v1::SetNodeMaintenanceRequest MaintenanceRequestFromArgs(const ParsedArgs& args) {
  v1::SetNodeMaintenanceRequest request;
  request.set_name(args.args()[1]);
  if (args.IsSet("clear") && args.GetBool("clear")) {
    request.set_clear(true);
    return request;
  }
  request.set_reason(Reason(args));
  if (absl::StatusOr<int64_t> at = ParseAt(args.Get("at")); at.ok()) {
    *request.mutable_start_time() = MsToTimestamp(*at);
  }
  if (absl::StatusOr<int64_t> ms = ParseDurationMs(args.Get("duration")); ms.ok()) {
    *request.mutable_duration() = MsToDuration(*ms);
  }
  return request;
}

v1::PrepullImageRequest PrepullRequestFromArgs(const ParsedArgs& args) {
  v1::PrepullImageRequest request;
  request.set_image(args.args()[1]);
  for (const std::string& node : args.GetAll("node")) request.add_nodes(node);
  request.set_project(args.Get("project"));
  request.set_image_pull_secret(args.Get("pull-secret"));
  if (args.IsSet("timeout")) {
    if (absl::StatusOr<int64_t> ms = ParseDurationMs(args.Get("timeout")); ms.ok()) {
      *request.mutable_timeout() = MsToDuration(*ms);
    }
  }
  return request;
}

}  // namespace trainctl::cli
