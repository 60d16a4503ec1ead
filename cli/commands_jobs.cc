// submit, get, list and cancel: one request each (list: one per page), then print.
#include <algorithm>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/job_view.h"
#include "cli/output.h"
#include "cli/states.h"
#include "common/spec_parse.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// ListJobsRequest.page_size allows at most this many.
constexpr int kMaxPageSize = 1000;

absl::StatusOr<int> RunSubmit(const ParsedArgs& args, Client& client) {
  if (!args.IsSet("filename")) {
    return absl::InvalidArgumentError(
        "submit needs -f FILE: a job spec in YAML or JSON (- reads it from stdin)");
  }
  v1::CreateJobRequest request;
  TC_ASSIGN_OR_RETURN(*request.mutable_spec(), ParseJobSpecFile(args.Get("filename")));
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::Job job;
  grpc::Status status = client.stub().CreateJob(&context, request, &job);
  if (!status.ok()) return client.ToStatus(status);
  std::cout << job.id() << std::endl;
  return kExitOk;
}

absl::StatusOr<int> RunGet(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::GetJobRequest request;
  request.set_id(args.args()[0]);
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::Job job;
  grpc::Status status = client.stub().GetJob(&context, request, &job);
  if (!status.ok()) return client.ToStatus(status);
  TC_ASSIGN_OR_RETURN(std::string text, FormatJob(job, format, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunList(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  int limit = 0;
  if (!absl::SimpleAtoi(args.Get("limit"), &limit) || limit < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--limit must be a positive number, got \"", args.Get("limit"), "\""));
  }
  v1::ListJobsRequest request;
  TC_ASSIGN_OR_RETURN(std::vector<v1::JobState> states, ParseJobStates(args.GetAll("state")));
  for (v1::JobState state : states) request.add_states(state);
  request.set_project(args.Get("project"));
  // The table shows no command or env: leave them on the server, however large they are.
  if (format == OutputFormat::kTable) request.set_view(v1::JOB_VIEW_BASIC);

  std::vector<v1::Job> jobs;
  do {
    request.set_page_size(std::min<int>(limit - static_cast<int>(jobs.size()), kMaxPageSize));
    grpc::ClientContext context;
    Client::PrepareUnary(&context);
    v1::ListJobsResponse response;
    grpc::Status status = client.stub().ListJobs(&context, request, &response);
    if (!status.ok()) return client.ToStatus(status);
    for (v1::Job& job : *response.mutable_jobs()) {
      if (static_cast<int>(jobs.size()) < limit) jobs.push_back(std::move(job));
    }
    // An empty page with a token would loop forever; treat it as the end.
    if (response.jobs_size() == 0) break;
    request.set_page_token(response.next_page_token());
  } while (!request.page_token().empty() && static_cast<int>(jobs.size()) < limit);

  if (jobs.empty() && format == OutputFormat::kTable) {
    std::cerr << "No jobs found." << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, FormatJobList(jobs, format, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunCancel(const ParsedArgs& args, Client& client) {
  v1::CancelJobRequest request;
  request.set_id(args.args()[0]);
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::Job job;
  grpc::Status status = client.stub().CancelJob(&context, request, &job);
  if (!status.ok()) return client.ToStatus(status);
  std::cout << job.id() << " " << JobStateName(job.state()) << std::endl;
  return kExitOk;
}

}  // namespace

FlagSpec OutputFlag() {
  return {"output", 'o',     FlagSpec::Kind::kValue,
          "FORMAT", "table", "Output format: table, json or yaml"};
}

Command SubmitCommand() {
  CommandSpec spec{"submit",
                   "-f FILE",
                   "Submit a job from a spec file and print its id",
                   "The spec is a JobSpec in YAML or JSON; see examples/hello.yaml.",
                   {{"filename", 'f', FlagSpec::Kind::kValue, "FILE", "",
                     "Job spec file (YAML or JSON); - reads stdin. Required"}},
                   0,
                   0};
  return {std::move(spec), &RunSubmit};
}

Command GetCommand() {
  CommandSpec spec{"get", "ID", "Show a job: its state, replicas and attempts", "", {OutputFlag()},
                   1,     1};
  return {std::move(spec), &RunGet};
}

Command ListCommand() {
  CommandSpec spec{
      "list",
      "",
      "List jobs, newest first",
      "States are queued, pending, running, succeeded, failed, cancelling, cancelled (any case,\n"
      "with or without the JOB_STATE_ prefix).",
      {{"state", 0, FlagSpec::Kind::kList, "STATE", "",
        "Only jobs in this state; STATE may be a comma-separated list"},
       {"project", 0, FlagSpec::Kind::kValue, "PROJECT", "", "Only jobs of this project"},
       {"limit", 0, FlagSpec::Kind::kValue, "N", "100", "List at most N jobs"},
       OutputFlag()},
      0,
      0};
  return {std::move(spec), &RunList};
}

Command CancelCommand() {
  CommandSpec spec{"cancel",
                   "ID",
                   "Cancel a job and print its id and state",
                   "Cancelling is idempotent: a job that already ended is left as it is.",
                   {},
                   1,
                   1};
  return {std::move(spec), &RunCancel};
}

}  // namespace trainctl::cli
