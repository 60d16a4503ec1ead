// usage: who used what, one UsageService request, then print (cli/usage_view.h).
#include <iostream>

#include "cli/commands.h"
#include "cli/usage_view.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace commands_usage_internal {

absl::StatusOr<int> RunUsage(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(UsageFormat format, ParseUsageFormat(args.Get("output")));
  TC_ASSIGN_OR_RETURN(
      v1::GetUsageRequest request,
      UsageRequestFromFlags(args.Get("by"), args.Get("since"), args.Get("until"), WallNowMs()));
  v1::GetUsageResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.usage().GetUsage(context, request, &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (response.rows().empty() && format == UsageFormat::kTable) {
    std::cerr << "No usage recorded in that range." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatUsageReport(response, format));
  std::cout << text << std::flush;
  return kExitOk;
}

}  // namespace commands_usage_internal

Command UsageCommand() {
  CommandSpec spec{
      "usage",
      "",
      "Show who used what: GPU-, CPU- and memory-hours, runs, wall time and queue wait",
      "Sums the hourly usage trainctld keeps (beyond job retention, for --usage-retention) by\n"
      "project, user (the job's creator), node, or the value of a job label (label:KEY; '-'\n"
      "for jobs without it), as Slurm's sreport does. Usage is what replicas were allocated,\n"
      "times the time they held it, whether they used it or not. An hour counts whole when it\n"
      "overlaps [--since, --until); the current hour is at most a minute behind for runs still\n"
      "running. A project member sees only their projects.\n"
      "WALL is replica time held; QUEUE-WAIT sums each placed run's wait since submission or\n"
      "retry. -o csv prints the seconds as they are, -o json the API's answer.",
      {{"by", 0, FlagSpec::Kind::kValue, "DIMENSION", "project",
        "Group by project, user, node or label:KEY"},
       {"since", 0, FlagSpec::Kind::kValue, "WHEN", "",
        "From this time: a duration back from now (30d, 1h30m) or an RFC3339 time "
        "(default: the first hour kept)"},
       {"until", 0, FlagSpec::Kind::kValue, "WHEN", "",
        "Up to this time, the same forms (default: now)"},
       {"output", 'o', FlagSpec::Kind::kValue, "FORMAT", "table",
        "Output format: table, csv or json"}},
      0,
      0};
  return {std::move(spec), &commands_usage_internal::RunUsage};
}

}  // namespace trainctl::cli
