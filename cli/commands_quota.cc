// queue, quota get|set and projects: QuotaService requests, then print.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/quota_flags.h"
#include "cli/quota_view.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// ListQueueRequest.limit allows at most this many.
constexpr int kMaxQueue = 10000;

absl::StatusOr<int> RunQueue(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::ListQueueRequest request;
  request.set_project(args.Get("project"));
  if (args.IsSet("limit")) {
    TC_ASSIGN_OR_RETURN(int limit,
                        ParseWholeNumberFlag<int>("--limit", args.Get("limit"), 1, kMaxQueue));
    request.set_limit(limit);
  }
  v1::ListQueueResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.quota().ListQueue(context, request, &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (response.jobs().empty() && format == OutputFormat::kTable) {
    std::cerr << "No queued jobs." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatQueue(response, format, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<v1::Project> GetProject(const std::string& name, Client& client) {
  v1::GetQuotaRequest request;
  request.set_project(name);
  v1::Project project;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.quota().GetQuota(context, request, &project);
  });
  if (!status.ok()) return client.ToStatus(status);
  return project;
}

// SetQuota replaces the whole quota: overlay the flags given onto the one in force now.
absl::StatusOr<v1::Project> SetProjectQuota(const std::string& name, const ParsedArgs& args,
                                            Client& client) {
  if (!HasQuotaSetFlags(args)) {
    return absl::InvalidArgumentError(
        "quota set needs at least one flag to change, e.g. --gpus 8; see 'trainctl quota --help'");
  }
  TC_ASSIGN_OR_RETURN(v1::Project current, GetProject(name, client));
  v1::SetQuotaRequest request;
  *request.mutable_quota() = current.quota();
  request.mutable_quota()->set_project(name);
  TC_RETURN_IF_ERROR(OverlayQuotaFlags(args, request.mutable_quota()));
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::Project project;
  grpc::Status status = client.quota().SetQuota(&context, request, &project);
  if (!status.ok()) return client.ToStatus(status);
  return project;
}

absl::StatusOr<int> RunQuota(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  const std::string& action = args.args()[0];
  const std::string& name = args.args()[1];
  v1::Project project;
  if (action == "get") {
    if (HasQuotaSetFlags(args)) {
      return absl::InvalidArgumentError(
          "quota get takes no quota flags; did you mean 'trainctl quota set'?");
    }
    TC_ASSIGN_OR_RETURN(project, GetProject(name, client));
  } else if (action == "set") {
    TC_ASSIGN_OR_RETURN(project, SetProjectQuota(name, args, client));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown quota action \"", action, "\"; use quota get or quota set"));
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatProject(project, format));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunProjects(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::ListProjectsResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.quota().ListProjects(context, v1::ListProjectsRequest(), &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (response.projects().empty() && format == OutputFormat::kTable) {
    std::cerr << "No projects found." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatProjects(response, format));
  std::cout << text << std::flush;
  return kExitOk;
}

}  // namespace

Command QueueCommand() {
  CommandSpec spec{
      "queue",
      "",
      "List queued jobs in admission order, with why each one waits",
      "POSITION is the job's place in its project's queue; WAITING how long it has been queued;\n"
      "REASON the first thing keeping it from running (QUOTA, CAPACITY, NODE_SELECTOR,\n"
      "TOPOLOGY, PRIORITY, BACKOFF, STOPPING, NO_NODES, MAINTENANCE). 'trainctl get ID' lists\n"
      "every reason.",
      {{"project", 0, FlagSpec::Kind::kValue, "PROJECT", "", "Only jobs of this project"},
       {"limit", 0, FlagSpec::Kind::kValue, "N", "",
        "Show the first N jobs, 1..10000 (default: the server's, 1000)"},
       OutputFlag()},
      0,
      0};
  return {std::move(spec), &RunQueue};
}

Command QuotaCommand() {
  std::vector<FlagSpec> flags = QuotaSetFlags();
  flags.push_back(OutputFlag());
  CommandSpec spec{
      "quota",
      "get|set PROJECT",
      "Show a project's quota and usage (get), or change it (set)",
      "quota get PROJECT shows each limit as used / limit. A project without a quota of its own\n"
      "uses the server's default quota. quota set PROJECT changes only what its flags give and\n"
      "keeps the rest; a limit of \"unlimited\" removes it. Raising a quota admits waiting jobs\n"
      "at once; lowering one never stops running jobs. Flags other than -o are for quota set.\n"
      "\n"
      "Strategies: strict (the default) admits a project's jobs in order, so a job that does not\n"
      "fit holds back the jobs behind it; best-effort lets later jobs that fit go first until the\n"
      "blocked job has waited --starvation-limit (default 10m).",
      std::move(flags),
      2,
      2};
  return {std::move(spec), &RunQuota};
}

Command ProjectsCommand() {
  CommandSpec spec{"projects",
                   "",
                   "List projects with their quota usage and queued jobs",
                   "GPUS, CPU, MEMORY (MiB) and RUNNING show used/limit; - means unlimited.",
                   {OutputFlag()},
                   0,
                   0};
  return {std::move(spec), &RunProjects};
}

}  // namespace trainctl::cli
