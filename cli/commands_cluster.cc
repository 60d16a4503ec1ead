// nodes and events: one ClusterService request each, then print.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/cluster_view.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// ListEventsRequest.limit allows at most this many.
constexpr int kMaxEvents = 10000;

absl::StatusOr<int> RunNodes(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(NodesOutput output, ParseNodesOutput(args.Get("output")));
  v1::ListNodesResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.cluster().ListNodes(context, v1::ListNodesRequest(), &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (response.nodes().empty() && output.format == OutputFormat::kTable) {
    std::cerr << "No nodes found." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatNodes(response, output, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunEvents(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::ListEventsRequest request;
  if (!args.args().empty()) request.set_job_id(args.args()[0]);
  request.set_node(args.Get("node"));
  request.set_type(args.Get("type"));
  request.set_actor(args.Get("actor"));
  if (args.IsSet("since")) {
    TC_ASSIGN_OR_RETURN(int64_t since_ms, ParseSince(args.Get("since"), WallNowMs()));
    *request.mutable_since() = MsToTimestamp(since_ms);
  }
  if (args.IsSet("limit")) {
    TC_ASSIGN_OR_RETURN(int limit,
                        ParseWholeNumberFlag<int>("--limit", args.Get("limit"), 1, kMaxEvents));
    request.set_limit(limit);
  }
  v1::ListEventsResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.cluster().ListEvents(context, request, &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (response.events().empty() && format == OutputFormat::kTable) {
    std::cerr << "No events found." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatEvents(response, format));
  std::cout << text << std::flush;
  return kExitOk;
}

}  // namespace

Command NodesCommand() {
  CommandSpec spec{
      "nodes",
      "",
      "List the cluster's nodes: state, health, free/allocatable resources, heartbeat",
      "STATE is what the node is available for: READY (takes new work), CORDONED (an operator's\n"
      "hold), DRAINING (its replicas are moving to other nodes), ISOLATED (failed a check; out\n"
      "until its checks pass) or LOST (no heartbeat; its replicas were moved). HEALTH is the\n"
      "result of its latest checks: HEALTHY, UNHEALTHY or UNKNOWN. CPU, MEMORY and GPUS show\n"
      "what is free of what trainctl may place on the node. -o wide adds ADDRESS, AGENT (the\n"
      "agent's version), RESERVED (the queued job the node is kept for, and when it is expected\n"
      "to start) and REASON (why the node is in its state).\n"
      "'trainctl node describe NODE' shows one node's checks, config and events.",
      {{"output", 'o', FlagSpec::Kind::kValue, "FORMAT", "table",
        "Output format: table, wide, json or yaml"}},
      0,
      0};
  return {std::move(spec), &RunNodes};
}

Command EventsCommand() {
  CommandSpec spec{
      "events",
      "[JOB_ID]",
      "Show the event log, oldest first; of one job when JOB_ID is given",
      "Lists the newest matching events (up to --limit), oldest first. --since takes an RFC3339\n"
      "time (2026-01-01T00:00:00Z) or a duration back from now (10m: the last 10 minutes).\n"
      "\n"
      "Event types (for --type):\n"
      "  jobs:      JobQueued, one for each change of a job's state (JobRunning, JobFailed,\n"
      "             ...), JobRedispatched (after a host fault: a new attempt on other hosts),\n"
      "             JobExiting, JobDeleted (of no job: it outlives the job it names)\n"
      "  replicas:  ReplicaStarted, ReplicaExited, ReplicaLost, ReplicaMoved (off a drained,\n"
      "             lost or unhealthy node, to another one), ImagePulling, ImagePulled (a\n"
      "             replica's image: when its pull began, and its digest and size)\n"
      "  nodes:     NodeRegistered, NodeReconnected, NodeDisconnected, NodeLost, NodeReturned,\n"
      "             NodeIsolated, NodeFlapping, NodeHealthy, NodeCordoned, NodeUncordoned,\n"
      "             NodeDrainStarted, NodeDrained, NodeShutdown, NodeMaintenanceScheduled,\n"
      "             NodeMaintenanceCleared, NodeMaintenanceEnded\n"
      "  scheduler: LeaderElected (a trainctld took the leader lease of a shared PostgreSQL\n"
      "             store)\n"
      "  secrets:   SecretSet, SecretDeleted (a project's secret, never its value)",
      {{"node", 0, FlagSpec::Kind::kValue, "NODE", "", "Only events of this node"},
       {"type", 0, FlagSpec::Kind::kValue, "TYPE", "",
        "Only events of this exact type, e.g. ReplicaExited"},
       {"actor", 0, FlagSpec::Kind::kValue, "OWNER", "",
        "Only events caused by this token owner's calls (anonymous: calls without "
        "authentication)"},
       {"since", 0, FlagSpec::Kind::kValue, "WHEN", "",
        "Only newer events: a duration back from now (10m = the last 10 minutes, 1h30m) or an "
        "RFC3339 time (2026-01-01T00:00:00Z)"},
       {"limit", 0, FlagSpec::Kind::kValue, "N", "",
        "Show the newest N events, 1..10000 (default: the server's, 1000)"},
       OutputFlag()},
      0,
      1};
  return {std::move(spec), &RunEvents};
}

}  // namespace trainctl::cli
