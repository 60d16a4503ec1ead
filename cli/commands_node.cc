// node describe|cordon|uncordon|drain|revoke|delete|maintenance: ClusterService requests on one
// node, then print; node prepull: PrepullImage on the nodes that run images.
#include <chrono>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/node_flags.h"
#include "cli/node_view.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// How many of the node's newest events describe shows.
constexpr int kNodeDescribeEvents = 20;
// How long trainctld waits for the nodes of a prepull without --timeout.
constexpr int64_t kDefaultPrepullWaitMs = 10 * 60'000;

absl::StatusOr<int> RunDescribe(const std::string& name, OutputFormat format, Client& client) {
  v1::Node node;
  {
    v1::GetNodeRequest request;
    request.set_name(name);
    grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
      return client.cluster().GetNode(context, request, &node);
    });
    if (!status.ok()) return client.ToStatus(status);
  }
  v1::ListEventsRequest request;
  request.set_node(node.name());
  request.set_limit(kNodeDescribeEvents);
  v1::ListEventsResponse events;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.cluster().ListEvents(context, request, &events);
  });
  if (!status.ok()) return client.ToStatus(status);
  TC_ASSIGN_OR_RETURN(std::string text, FormatNodeDescription(node, events, format, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

// Sends the request of `action` (cordon, uncordon, drain or revoke) and returns the node as it is
// now.
absl::StatusOr<v1::Node> Change(NodeAction action, const ParsedArgs& args, Client& client) {
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::Node node;
  grpc::Status status;
  switch (action) {
    case NodeAction::kCordon:
      status = client.cluster().CordonNode(&context, CordonRequestFromArgs(args), &node);
      break;
    case NodeAction::kUncordon:
      status = client.cluster().UncordonNode(&context, UncordonRequestFromArgs(args), &node);
      break;
    case NodeAction::kDrain:
      status = client.cluster().DrainNode(&context, DrainRequestFromArgs(args), &node);
      break;
    case NodeAction::kRevoke:
      status = client.cluster().RevokeNode(&context, RevokeRequestFromArgs(args), &node);
      break;
    case NodeAction::kDelete:
      status = client.cluster().DeleteNode(&context, DeleteRequestFromArgs(args), &node);
      break;
    case NodeAction::kMaintenance:
      status =
          client.cluster().SetNodeMaintenance(&context, MaintenanceRequestFromArgs(args), &node);
      break;
    case NodeAction::kDescribe:
    case NodeAction::kPrepull:
      return absl::InternalError("node describe and node prepull change no node");
  }
  if (!status.ok()) return client.ToStatus(status);
  return node;
}

// node prepull: waits as long as the server does (the request's timeout, else its 10m default)
// and a minute more; exits 1 when any node failed.
absl::StatusOr<int> RunPrepull(const ParsedArgs& args, OutputFormat format, Client& client) {
  const v1::PrepullImageRequest request = PrepullRequestFromArgs(args);
  const int64_t wait_ms =
      (request.has_timeout() ? DurationToMs(request.timeout()) : kDefaultPrepullWaitMs) + 60'000;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(wait_ms));
  v1::PrepullImageResponse resp;
  grpc::Status status = client.cluster().PrepullImage(&context, request, &resp);
  if (!status.ok()) return client.ToStatus(status);
  if (format == OutputFormat::kTable) {
    std::cout << RenderPrepullResults(resp) << std::flush;
  } else {
    TC_ASSIGN_OR_RETURN(std::string text, MessageToFormat(resp, format));
    std::cout << text << std::flush;
  }
  return AnyPrepullFailed(resp) ? kExitJobFailed : kExitOk;
}

absl::StatusOr<int> RunNode(const ParsedArgs& args, Client& client) {
  if (args.args().empty()) {
    std::cerr << "trainctl node needs a subcommand:\n\n"
              << NodeSubcommandList() << "\nRun 'trainctl node --help' for the flags." << std::endl;
    return kExitError;
  }
  TC_ASSIGN_OR_RETURN(NodeAction action, CheckNodeArgs(args));
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  if (action == NodeAction::kDescribe) return RunDescribe(args.args()[1], format, client);
  if (action == NodeAction::kPrepull) return RunPrepull(args, format, client);
  TC_ASSIGN_OR_RETURN(v1::Node node, Change(action, args, client));
  if (format == OutputFormat::kTable && action == NodeAction::kDelete) {
    std::cout << "node " << node.name() << " deleted" << std::endl;
    return kExitOk;
  }
  if (format == OutputFormat::kTable) {
    std::cout << NodeActionLine(action, node) << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, MessageToFormat(node, format));
  std::cout << text << std::flush;
  return kExitOk;
}

}  // namespace

Command NodeCommand() {
  CommandSpec spec{
      "node",
      "describe|cordon|uncordon|drain|revoke|delete|maintenance NODE | prepull IMAGE",
      "Show one node in detail, or cordon, uncordon, drain, revoke, delete or schedule it; "
      "prepull an image",
      absl::StrCat(
          "Subcommands:\n", NodeSubcommandList(),
          "\n"
          "cordon keeps new work off the node; its replicas keep running. drain cordons it and\n"
          "moves each replica: stopped gracefully (SIGTERM, then SIGKILL after --deadline) and\n"
          "started on another node with the same name and rank, charged to no retry budget. The\n"
          "node is CORDONED once empty. uncordon lifts either hold, and the hold on a flapping\n"
          "node; an ISOLATED node returns to READY only once its checks pass.\n"
          "\n"
          "revoke (with agent certificates, trainctld --agent-ca) refuses the certificate the\n"
          "node's agent registered with from now on: the agent is disconnected, the node is\n"
          "cordoned and LOST, and its replicas move to other nodes. A new certificate\n"
          "(`trainctld pki issue-agent DIR NODE`) lets the host register again, cordoned.\n"
          "\n"
          "delete (admin only) forgets a node whose agent is not connected and that runs no\n"
          "replica of a live job: a host gone for good, or a name registered by mistake. Its\n"
          "events stay, and so does the revocation of its certificates. A host that registers\n"
          "again afterwards is a new node.\n"
          "\n"
          "maintenance records the node's upcoming maintenance window (one per node; a new one\n"
          "replaces it, --clear removes it). Jobs expected to run past the window's start\n"
          "(scheduling.expectedDuration, else scheduling.timeout, else 24h) are kept off the\n"
          "node; at the start it is drained like `node drain`, and after the window it is\n"
          "uncordoned and takes work again once its checks pass.\n"
          "\n"
          "prepull (operator or admin) has the agents of nodes that run images (label\n"
          "trainctl.io/images=true; --node names them, else every connected one) pull IMAGE\n"
          "into their cache, so that a job's gang does not wait for it, and waits until each\n"
          "answered or --timeout (default 10m) passed. A private registry's credentials come\n"
          "from a project secret: --project P --pull-secret S (the caller must be allowed to\n"
          "submit in P). It prints NODE DIGEST SIZE ERROR per node and exits 1 when a node\n"
          "failed.\n"
          "\n"
          "cordon, uncordon, drain and revoke print the node's state afterwards, e.g.\n"
          "  node node-1 DRAINING: kernel upgrade (2 replicas moving)\n"
          "With -o json or yaml they print the Node, and describe prints\n"
          "{\"node\": Node, \"events\": [its 20 newest events]}; prepull prints the\n"
          "PrepullImageResponse."),
      NodeFlags(),
      0,
      2};
  return {std::move(spec), &RunNode};
}

}  // namespace trainctl::cli
