// submit, get, list, cancel and delete: one request each (list: one per page), then print. cancel
// and delete also take a range of a job array's elements, "ARRAY-[3-5,9]": one request and one
// line per element (element_range.h).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cli/array_view.h"
#include "cli/commands.h"
#include "cli/element_range.h"
#include "cli/job_view.h"
#include "cli/output.h"
#include "cli/queue_flags.h"
#include "cli/retry.h"
#include "cli/states.h"
#include "cli/workdir_upload.h"
#include "common/array_ids.h"
#include "common/flag_values.h"
#include "common/spec_parse.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// ListJobsRequest.page_size allows at most this many.
constexpr int kMaxPageSize = 1000;
// How long submit keeps retrying a create that did not get through (UNAVAILABLE, or no answer
// in time): the request id makes each retry safe.
constexpr std::chrono::seconds kSubmitRetryFor{60};

// A random request id, a UUID (version 4) in its usual text form.
std::string NewRequestId() {
  std::random_device random;
  unsigned char b[16];
  for (unsigned char& byte : b) byte = static_cast<unsigned char>(random());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string hex =
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(b), sizeof(b)));
  return absl::StrCat(hex.substr(0, 8), "-", hex.substr(8, 4), "-", hex.substr(12, 4), "-",
                      hex.substr(16, 4), "-", hex.substr(20));
}

absl::StatusOr<int> RunSubmit(const ParsedArgs& args, Client& client) {
  if (!args.IsSet("filename")) {
    return absl::InvalidArgumentError(
        "submit needs -f FILE: a job spec in YAML or JSON (- reads it from stdin)");
  }
  // --array is checked before anything is read or sent.
  std::optional<ArrayShorthand> array;
  if (args.IsSet("array")) {
    TC_ASSIGN_OR_RETURN(array, ParseArrayShorthand(args.Get("array")));
  }
  v1::CreateJobRequest request;
  TC_ASSIGN_OR_RETURN(*request.mutable_spec(), ParseJobSpecFile(args.Get("filename")));
  // --array replaces the spec's array, if it has one.
  if (array.has_value()) {
    v1::ArraySpec* spec = request.mutable_spec()->mutable_array();
    spec->set_indices(array->indices);
    spec->set_parallelism(array->parallelism);
  }
  // --depends-on adds to the dependencies the file lists; --dependency-policy replaces its policy.
  TC_RETURN_IF_ERROR(AddDependsOn(args.GetAll("depends-on"), request.mutable_spec()));
  if (args.IsSet("dependency-policy")) {
    TC_ASSIGN_OR_RETURN(const v1::DependencyPolicy policy,
                        ParseDependencyPolicy(args.Get("dependency-policy")));
    request.mutable_spec()->set_dependency_policy(policy);
  }
  if (args.IsSet("workdir")) {
    TC_ASSIGN_OR_RETURN(
        const int64_t max_mb,
        ParseWholeNumberFlag<int64_t>(
            "--max-workdir-mb", args.IsSet("max-workdir-mb") ? args.Get("max-workdir-mb") : "100",
            1, 10240));
    const std::string project =
        request.spec().project().empty() ? "default" : request.spec().project();
    TC_ASSIGN_OR_RETURN(*request.mutable_spec()->mutable_workdir(),
                        UploadWorkdir(client, project, args.Get("workdir"), max_mb << 20));
  } else if (args.IsSet("max-workdir-mb")) {
    return absl::InvalidArgumentError("--max-workdir-mb goes with --workdir DIR");
  }
  request.set_request_id(args.IsSet("request-id") ? args.Get("request-id") : NewRequestId());
  v1::Job job;
  grpc::Status status;
  std::string server;  // where the last try went
  RetryLoop(kSubmitRetryFor, RetryLoop::AtTheEnd::kGiveUp)
      .Run(
          [&] {
            grpc::ClientContext context;
            Client::PrepareUnary(&context);
            server = client.server();
            status = client.stub().CreateJob(&context, request, &job);
            if (status.ok()) return RetryLoop::kDone;
            // A standby answered (a failover): the create did not happen there; send it to the
            // leader it names at once, with the same request id.
            if (client.Retarget(status, &context) == Client::Retry::kNow) {
              std::cerr << "trainctl: " << status.error_message() << "; sending the job to "
                        << client.server() << " with request id " << request.request_id()
                        << std::endl;
              return RetryLoop::kNow;
            }
            const bool retry = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                               status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
            return retry ? RetryLoop::kAfterBackoff : RetryLoop::kDone;
          },
          [&](std::chrono::milliseconds pause) {
            std::cerr << "trainctl: " << server << " did not take the job ("
                      << status.error_message() << "); retrying in " << pause.count()
                      << " ms with request id " << request.request_id() << std::endl;
          });
  if (!status.ok()) return client.ToStatus(status);
  // The id alone on stdout, for scripts (id=$(trainctl submit ...)), an array's too.
  std::cout << job.id() << std::endl;
  // An array says so, on stderr; the spec sent tells its size if the answer does not.
  if (request.spec().has_array() || IsArray(job)) {
    if (!job.spec().has_array()) *job.mutable_spec()->mutable_array() = request.spec().array();
    std::cerr << ArraySubmittedLine(job) << std::endl;
  }
  return kExitOk;
}

absl::StatusOr<int> RunGet(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::GetJobRequest request;
  request.set_id(args.args()[0]);
  v1::Job job;
  grpc::Status status = client.Unary(
      [&](grpc::ClientContext* context) { return client.stub().GetJob(context, request, &job); });
  if (!status.ok()) return client.ToStatus(status);
  TC_ASSIGN_OR_RETURN(std::string text, FormatJob(job, format, WallNowMs()));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunList(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  TC_ASSIGN_OR_RETURN(int limit, ParseWholeNumberFlag<int>("--limit", args.Get("limit"), 1));
  v1::ListJobsRequest request;
  TC_ASSIGN_OR_RETURN(std::vector<v1::JobState> states, ParseJobStates(args.GetAll("state")));
  for (v1::JobState state : states) request.add_states(state);
  request.set_project(args.Get("project"));
  request.set_label_selector(args.Get("selector"));
  request.set_array(args.Get("array"));
  // The table shows no command or env: leave them on the server, however large they are.
  if (format == OutputFormat::kTable) request.set_view(v1::JOB_VIEW_BASIC);

  std::vector<v1::Job> jobs;
  do {
    request.set_page_size(std::min<int>(limit - static_cast<int>(jobs.size()), kMaxPageSize));
    v1::ListJobsResponse response;
    grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
      return client.stub().ListJobs(context, request, &response);
    });
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
  return ForEachJobId(
      args.args()[0],
      [&](const std::string& id) -> absl::StatusOr<int> {
        v1::CancelJobRequest request;
        request.set_id(id);
        v1::Job job;
        grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
          return client.stub().CancelJob(context, request, &job);
        });
        if (!status.ok()) return client.ToStatus(status);
        std::cout << job.id() << " " << JobStateName(job.state()) << std::endl;
        return kExitOk;
      },
      std::cerr);
}

absl::StatusOr<int> RunResize(const ParsedArgs& args, Client& client) {
  v1::ResizeJobRequest request;
  request.set_id(args.args()[0]);
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::Job job;
  grpc::Status status = client.stub().ResizeJob(&context, request, &job);
  if (!status.ok()) return client.ToStatus(status);
  std::cout << job.id() << " restarting its gang to grow; removed replicas with room come back"
            << std::endl;
  return kExitOk;
}

absl::StatusOr<int> RunDelete(const ParsedArgs& args, Client& client) {
  return ForEachJobId(
      args.args()[0],
      [&](const std::string& id) -> absl::StatusOr<int> {
        v1::DeleteJobRequest request;
        request.set_id(id);
        grpc::ClientContext context;
        Client::PrepareUnary(&context);
        v1::DeleteJobResponse response;
        grpc::Status status = client.stub().DeleteJob(&context, request, &response);
        if (!status.ok()) return client.ToStatus(status);
        std::cout << request.id() << " deleted" << std::endl;
        return kExitOk;
      },
      std::cerr);
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
                   "The spec is a JobSpec in YAML or JSON; see examples/hello.yaml. A create that\n"
                   "does not get through (trainctld unreachable or restarting) is retried for up\n"
                   "to 60s with the same request id, so it never starts the job twice; pass\n"
                   "--request-id to make retries of the whole command safe too (a pipeline step\n"
                   "run again within 24h gets the job its first run created).\n"
                   "--array INDICES[%N] submits a job array: one job per index (id ARRAY-INDEX),\n"
                   "at most N started at once. The id printed is the array's; stderr says\n"
                   "\"submitted job array ID (20 elements, at most 3 at once)\".",
                   {{"filename", 'f', FlagSpec::Kind::kValue, "FILE", "",
                     "Job spec file (YAML or JSON); - reads stdin. Required"},
                    {"request-id", 0, FlagSpec::Kind::kValue, "ID", "",
                     "Idempotency key: 1..64 letters, digits, . _ : - (default: a new UUID)"},
                    {"workdir", 0, FlagSpec::Kind::kValue, "DIR", "",
                     "Ship DIR with the job: every replica starts in a read-only copy of it "
                     "(.trainctlignore, gitignore syntax, leaves files out)"},
                    {"max-workdir-mb", 0, FlagSpec::Kind::kValue, "N", "",
                     "The most DIR's files may hold, in MiB (default 100; trainctld has its own "
                     "cap)"},
                    {"depends-on", 0, FlagSpec::Kind::kList, "COND:ID,...", "",
                     "Wait for other jobs first: afterok:ID (it SUCCEEDED), afternotok:ID (it "
                     "FAILED), afterany:ID (it ended); repeatable, added to the spec's dependsOn"},
                    {"dependency-policy", 0, FlagSpec::Kind::kValue, "POLICY", "",
                     "When a dependency can no longer be met: fail (the default) or keep-waiting"},
                    {"array", 0, FlagSpec::Kind::kValue, "INDICES[%N]", "",
                     "Submit a job array: one job per index, e.g. 0-99, 1,5,9 or 0-99:2 (a step); "
                     "%N starts at most N at once. Replaces the spec's array"}},
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
       {"selector", 'l', FlagSpec::Kind::kValue, "KEY=VALUE,...", "",
        "Only jobs whose labels hold every KEY=VALUE given"},
       {"array", 0, FlagSpec::Kind::kValue, "ID", "",
        "Only the elements of job array ID, those not started yet first as one row "
        "(ID-[INDICES])"},
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
                   "Cancelling is idempotent: a job that already ended is left as it is. ID may\n"
                   "be a job array (every element stops, and no more start), one element\n"
                   "(ARRAY-7) or a range of elements (ARRAY-[3-5,9], quoted for the shell),\n"
                   "cancelled one by one: a line each, and errors named by element.",
                   {},
                   1,
                   1};
  return {std::move(spec), &RunCancel};
}

Command ResizeCommand() {
  CommandSpec spec{
      "resize",
      "ID",
      "Grow a shrunk elastic job back toward its spec's size now",
      "A job with an elastic pool (workerPools[].elastic) shrinks when a host under it is lost\n"
      "and no other node has room within scheduling.elasticWait; it grows back by itself at\n"
      "its next gang restart that finds room. resize restarts its gang now (charged to no\n"
      "budget) with every removed replica there is room for. It fails, saying why, when the\n"
      "job is not RUNNING, runs every replica, is restarting already, or nothing has room.",
      {},
      1,
      1};
  return {std::move(spec), &RunResize};
}

Command DeleteCommand() {
  CommandSpec spec{
      "delete",
      "ID",
      "Delete a job that ended, with its attempts, runs and events",
      "Only a SUCCEEDED, FAILED or CANCELLED job whose replicas have all ended can be\n"
      "deleted; cancel a live job first. trainctld deletes jobs by itself once they\n"
      "ended longer ago than its --job-retention (default 90d). ID may be a job array\n"
      "that ended (with its elements), one element (ARRAY-7) or a range of elements\n"
      "(ARRAY-[3-5,9], quoted for the shell), deleted one by one.",
      {},
      1,
      1};
  return {std::move(spec), &RunDelete};
}

}  // namespace trainctl::cli
