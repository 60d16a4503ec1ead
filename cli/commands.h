// trainctl's commands. Each is a thin edge: it checks its flags, calls the JobService, the
// ClusterService or the QuotaService and prints the result; the server holds all policy.
// A command with subcommands (quota get|set, node describe|cordon|uncordon|drain) takes the
// subcommand as its first positional argument.
//
// A command returns its exit status, or an error that main() prints as
// "error: CODE: message" and turns into exit status 2.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "cli/client.h"
#include "common/flags.h"

namespace trainctl::cli {

// Exit statuses.
inline constexpr int kExitOk = 0;
inline constexpr int kExitJobFailed = 1;  // `wait`: FAILED or CANCELLED; `node prepull`: failed
inline constexpr int kExitError = 2;      // usage, spec, RPC errors and timeouts

struct Command {
  CommandSpec spec;
  // REQUIRES: the arguments were checked with CheckArgs(args, spec).
  absl::StatusOr<int> (*run)(const ParsedArgs& args, Client& client);
};

// -o/--output FORMAT (table, json or yaml; default table), shared by the commands that print
// resources.
FlagSpec OutputFlag();

// commands_jobs.cc
Command SubmitCommand();
Command GetCommand();
Command ListCommand();
Command CancelCommand();
Command ResizeCommand();
Command DeleteCommand();
// commands_queue_ops.cc
Command HoldCommand();
Command ReleaseCommand();
Command UpdateCommand();
Command RequeueCommand();
// commands_wait.cc
Command WaitCommand();
// commands_logs.cc
Command LogsCommand();
// commands_cluster.cc
Command NodesCommand();
Command EventsCommand();
// commands_node.cc
Command NodeCommand();
// commands_describe.cc
Command DescribeCommand();
// commands_quota.cc
Command QueueCommand();
Command QuotaCommand();
Command ProjectsCommand();
// commands_progress.cc
Command ProgressCommand();
// commands_admin.cc
Command AdminCommand();
Command WhoAmICommand();
// commands_backup.cc: `admin backup FILE` (its flag --force: replace FILE).
absl::StatusOr<int> RunAdminBackup(const std::string& path, bool force, Client& client);
// commands_version.cc
Command VersionCommand();
// commands_secret.cc
Command SecretCommand();
// commands_usage.cc
Command UsageCommand();
// commands_stacks.cc
Command StacksCommand();

}  // namespace trainctl::cli
