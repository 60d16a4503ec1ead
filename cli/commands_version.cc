// version: this trainctl's version, then the server's (AdminService.GetVersion).
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "common/version.h"

namespace trainctl::cli {
namespace {

// "trainctld 0.1.0 (agent protocol 2; commit 1a2b3c4d5e6f; sqlite store; started ...)".
std::string ServerVersionLine(const v1::VersionInfo& info) {
  std::vector<std::string> parts;
  if (info.agent_protocol_version() > 0) {
    parts.push_back(absl::StrCat("agent protocol ", info.agent_protocol_version()));
  }
  if (!info.commit().empty()) parts.push_back(absl::StrCat("commit ", info.commit()));
  if (!info.store().empty()) parts.push_back(absl::StrCat(info.store(), " store"));
  if (info.has_start_time()) {
    parts.push_back(absl::StrCat("started ", FormatRfc3339(TimestampToMs(info.start_time()))));
  }
  std::string line = absl::StrCat("trainctld ", info.version());
  if (!parts.empty()) absl::StrAppend(&line, " (", absl::StrJoin(parts, "; "), ")");
  return line;
}

absl::StatusOr<int> RunVersion(const ParsedArgs& /*args*/, Client& client) {
  // The client's line first: it is known even when the server cannot be reached.
  std::cout << "trainctl " << VersionText() << std::endl;
  TC_RETURN_IF_ERROR(client.FindLeader());
  v1::VersionInfo info;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.admin().GetVersion(context, v1::GetVersionRequest(), &info);
  });
  if (!status.ok()) return client.ToStatus(status);
  std::cout << ServerVersionLine(info) << std::endl;
  return kExitOk;
}

}  // namespace

Command VersionCommand() {
  CommandSpec spec{"version",
                   "",
                   "Show the versions of trainctl and of the server",
                   "Prints trainctl's version, then asks the server for its own: the release, the\n"
                   "agent protocol it speaks, the commit it was built from, its store and when it\n"
                   "started. When the server cannot be reached, trainctl's line comes, then the\n"
                   "error (exit status 2). `trainctl --version` prints trainctl's line alone.",
                   {},
                   0,
                   0};
  return {std::move(spec), &RunVersion};
}

}  // namespace trainctl::cli
