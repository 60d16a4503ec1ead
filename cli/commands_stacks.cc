// stacks: where a job's replicas were when trainctl stopped them (hung, or their attempt ended),
// or, with --now, where its running replicas are (JobService.GetStacks; cli/stacks_view.h).
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/stacks_view.h"
#include "common/status_macros.h"

namespace trainctl::cli {
namespace commands_stacks_internal {

absl::StatusOr<int> RunStacks(const ParsedArgs& args, Client& client) {
  v1::GetStacksRequest request;
  request.set_job_id(args.args()[0]);
  request.set_replica(args.Get("replica"));
  request.set_now(args.GetBool("now"));
  request.set_summary_only(args.GetBool("summary"));
  if (const std::string attempt = args.Get("attempt"); !attempt.empty()) {
    int32_t n = 0;
    if (!absl::SimpleAtoi(attempt, &n) || n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--attempt must be an attempt number (1, 2, ...), got '", attempt, "'"));
    }
    if (request.now()) {
      return absl::InvalidArgumentError("--attempt and --now cannot be used together");
    }
    request.set_attempt(n);
  }
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::GetStacksResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.stub().GetStacks(context, request, &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (format != OutputFormat::kTable) {
    TC_ASSIGN_OR_RETURN(std::string text, MessageToFormat(response, format));
    std::cout << text << std::flush;
    return kExitOk;
  }
  if (response.stacks().empty()) {
    std::cerr << "No stacks kept for job " << request.job_id()
              << (request.attempt() > 0 ? absl::StrCat(" attempt ", request.attempt()) : "")
              << (request.replica().empty() ? "" : absl::StrCat(" replica ", request.replica()))
              << ": they are captured when trainctl stops a hung replica or the replicas of an "
                 "attempt that ends (scheduling.captureStacks). Use --now for a running job."
              << std::endl;
    return kExitOk;
  }
  std::cout << (request.summary_only() ? StacksSummary(response) : RenderStacks(response))
            << std::flush;
  return kExitOk;
}

}  // namespace commands_stacks_internal

Command StacksCommand() {
  CommandSpec spec{
      "stacks",
      "ID",
      "Show where a job's replicas were stuck: their stacks before trainctl stopped them",
      "Before trainctl stops a replica it judged hung (scheduling.hangTimeout), and before it\n"
      "stops the replicas of an attempt that ends (failed, retried or re-dispatched), each\n"
      "node's agent captures every process's stacks: each thread's native stack and, for\n"
      "Python, its Python stack (gdb; the agent's --stack-dump-program). They are kept with\n"
      "the job; this shows those of the latest attempt that has any, or of --attempt.\n"
      "--now captures them from the job's running replicas instead, which keep running\n"
      "(each is paused for about a second). Project members and operators only.",
      {{"replica", 'r', FlagSpec::Kind::kValue, "NAME", "", "Only this replica's stacks"},
       {"attempt", 'a', FlagSpec::Kind::kValue, "N", "",
        "The attempt whose stacks to show (default: the latest with any)"},
       {"now", 0, FlagSpec::Kind::kBool, "", "", "Capture them now from the running replicas"},
       {"summary", 0, FlagSpec::Kind::kBool, "", "",
        "Only where each replica was, replicas that agree grouped"},
       {"output", 'o', FlagSpec::Kind::kValue, "FORMAT", "table",
        "Output format: table (text), json or yaml"}},
      1,
      1};
  return {std::move(spec), &commands_stacks_internal::RunStacks};
}

}  // namespace trainctl::cli
