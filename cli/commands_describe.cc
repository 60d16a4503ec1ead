// describe: the job (GetJob) and its latest events (ListEvents), kubectl-style.
#include <iostream>

#include "cli/commands.h"
#include "cli/describe_view.h"
#include "cli/stacks_view.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// How many of the job's newest events describe shows.
constexpr int kDescribeEvents = 20;

absl::StatusOr<int> RunDescribe(const ParsedArgs& args, Client& client) {
  v1::Job job;
  {
    v1::GetJobRequest request;
    request.set_id(args.args()[0]);
    grpc::Status status = client.Unary(
        [&](grpc::ClientContext* context) { return client.stub().GetJob(context, request, &job); });
    if (!status.ok()) return client.ToStatus(status);
  }
  // The job is worth showing even when its events cannot be read: print it first.
  std::cout << RenderJobDescription(job, WallNowMs()) << "\n" << std::flush;
  v1::ListEventsRequest request;
  request.set_job_id(job.id());
  request.set_limit(kDescribeEvents);
  v1::ListEventsResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.cluster().ListEvents(context, request, &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  std::cout << RenderEventsSection(response.events(), WallNowMs()) << std::flush;
  // Where the replicas were when they were last stopped, if stacks were kept. Best effort: a
  // viewer may not read them, and an older trainctld has none.
  v1::GetStacksRequest stacks_request;
  stacks_request.set_job_id(job.id());
  stacks_request.set_summary_only(true);
  v1::GetStacksResponse stacks;
  if (client
          .Unary([&](grpc::ClientContext* context) {
            return client.stub().GetStacks(context, stacks_request, &stacks);
          })
          .ok()) {
    const std::string section = RenderStacksSection(job.id(), stacks);
    if (!section.empty()) std::cout << "\n" << section << std::flush;
  }
  return kExitOk;
}

}  // namespace

Command DescribeCommand() {
  CommandSpec spec{"describe",
                   "ID",
                   "Show a job in detail: replicas, attempts and its latest events",
                   "Shows what get shows, the retry budgets used (re-dispatches after host "
                   "faults too),\nwhat a host fault does (faultTolerance.jobRetryNum), the "
                   "failing replica's last output,\neach replica's moves and note on its last "
                   "transition, why each attempt ended and\nwhat was decided, the job's last "
                   "20 events, and where its replicas were when they\nwere last stopped "
                   "(`trainctl stacks`).",
                   {},
                   1,
                   1};
  return {std::move(spec), &RunDescribe};
}

}  // namespace trainctl::cli
