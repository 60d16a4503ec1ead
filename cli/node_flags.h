// The subcommands and flags of `trainctl node`, and the requests they make.
//
//   trainctl node describe NODE [-o FORMAT]
//   trainctl node cordon NODE [--reason TEXT]
//   trainctl node uncordon NODE
//   trainctl node drain NODE --reason TEXT [--deadline DURATION]
//   trainctl node revoke NODE [--reason TEXT]
//   trainctl node delete NODE [--reason TEXT]
//   trainctl node maintenance NODE --at RFC3339 --duration DURATION --reason TEXT | --clear
//   trainctl node prepull IMAGE [--node NODE ...] [--project P --pull-secret S] [--timeout D]
//
// Everything here is checked before any RPC, so that a mistyped command line never reaches the
// server half-right:
//
//   TC_ASSIGN_OR_RETURN(NodeAction action, CheckNodeArgs(args));
//   TC_ASSIGN_OR_RETURN(v1::DrainNodeRequest request, DrainRequestFromArgs(args));
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

enum class NodeAction {
  kDescribe,
  kCordon,
  kUncordon,
  kDrain,
  kRevoke,
  kDelete,
  kMaintenance,
  kPrepull,  // its positional argument is the image, not a node
};

// DrainNodeRequest.reason and CordonNodeRequest.reason allow at most this many characters.
inline constexpr size_t kMaxNodeReasonChars = 1024;

// --reason, --deadline, --at, --duration, --clear, --node, --project, --pull-secret, --timeout and
// -o, for every subcommand (CheckNodeArgs says which takes which).
std::vector<FlagSpec> NodeFlags();

// "describe", "cordon", "uncordon", "drain", "revoke" or "delete"; INVALID_ARGUMENT with
// NodeSubcommandList otherwise.
absl::StatusOr<NodeAction> ParseNodeAction(absl::string_view name);

// The subcommand list, one "  describe NODE   what it does" line each, ending in '\n'. Shown in
// `node --help` and by `node` without a subcommand.
std::string NodeSubcommandList();

// Checks the command line of `node SUBCOMMAND NODE [flags]` (args()[0] is the subcommand) and
// returns the subcommand. INVALID_ARGUMENT, with a message that says what to type instead, for: an
// unknown subcommand, a missing NODE, a flag the subcommand does not take, drain without a
// --reason, a reason over kMaxNodeReasonChars, a --deadline that is not a positive duration, and
// for prepull: a missing IMAGE, --project without --pull-secret or the other way round, an empty
// --node, a --timeout outside 1s..1h.
// REQUIRES: args has at least one positional argument.
absl::StatusOr<NodeAction> CheckNodeArgs(const ParsedArgs& args);

// The requests of each subcommand. REQUIRES: CheckNodeArgs(args) is OK.
v1::CordonNodeRequest CordonRequestFromArgs(const ParsedArgs& args);
v1::UncordonNodeRequest UncordonRequestFromArgs(const ParsedArgs& args);
v1::DrainNodeRequest DrainRequestFromArgs(const ParsedArgs& args);
v1::RevokeNodeRequest RevokeRequestFromArgs(const ParsedArgs& args);
v1::DeleteNodeRequest DeleteRequestFromArgs(const ParsedArgs& args);
v1::SetNodeMaintenanceRequest MaintenanceRequestFromArgs(const ParsedArgs& args);
// The image is args()[1]; --timeout unset leaves the server's default (10m).
v1::PrepullImageRequest PrepullRequestFromArgs(const ParsedArgs& args);

}  // namespace trainctl::cli
