// nodes and events: one ClusterService request each, then print.
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/cluster_view.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// ListEventsRequest.limit allows at most this many.
constexpr int kMaxEvents = 10000;

absl::StatusOr<int> RunNodes(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::ListNodesResponse response;
  grpc::Status status = client.cluster().ListNodes(&context, v1::ListNodesRequest(), &response);
  if (!status.ok()) return client.ToStatus(status);
  if (response.nodes().empty() && format == OutputFormat::kTable) {
    std::cerr << "No nodes found." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatNodes(response, format, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunEvents(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::ListEventsRequest request;
  if (!args.args().empty()) request.set_job_id(args.args()[0]);
  request.set_node(args.Get("node"));
  request.set_type(args.Get("type"));
  if (args.IsSet("since")) {
    TC_ASSIGN_OR_RETURN(int64_t since_ms, ParseSince(args.Get("since"), WallNowMs()));
    *request.mutable_since() = MsToTimestamp(since_ms);
  }
  if (args.IsSet("limit")) {
    int limit = 0;
    if (!absl::SimpleAtoi(args.Get("limit"), &limit) || limit < 1 || limit > kMaxEvents) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--limit must be a number from 1 to ", kMaxEvents, ", got \"", args.Get("limit"), "\""));
    }
    request.set_limit(limit);
  }
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::ListEventsResponse response;
  grpc::Status status = client.cluster().ListEvents(&context, request, &response);
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
  CommandSpec spec{"nodes",
                   "",
                   "List the cluster's nodes: status, free/allocatable resources, heartbeat",
                   "A node is Ready while its agent is connected to the scheduler. CPU, MEMORY "
                   "and GPUS show\nwhat is free of what trainctl may place on the node.",
                   {OutputFlag()},
                   0,
                   0};
  return {std::move(spec), &RunNodes};
}

Command EventsCommand() {
  CommandSpec spec{
      "events",
      "[JOB_ID]",
      "Show the event log, oldest first; of one job when JOB_ID is given",
      "Lists the newest matching events (up to --limit), oldest first. Event types include\n"
      "JobQueued, ReplicaStarted, ReplicaExited, ReplicaLost, NodeRegistered, NodeDisconnected\n"
      "and one for each change of a job's state.",
      {{"node", 0, FlagSpec::Kind::kValue, "NODE", "", "Only events of this node"},
       {"type", 0, FlagSpec::Kind::kValue, "TYPE", "",
        "Only events of this exact type, e.g. ReplicaExited"},
       {"since", 0, FlagSpec::Kind::kValue, "WHEN", "",
        "Only newer events: a duration back from now (10m, 1h30m) or an RFC3339 time"},
       {"limit", 0, FlagSpec::Kind::kValue, "N", "",
        "Show the newest N events, 1..10000 (default: the server's, 1000)"},
       OutputFlag()},
      0,
      1};
  return {std::move(spec), &RunEvents};
}

}  // namespace trainctl::cli
