// progress: a replica reports how far its training got (JobService.ReportProgress), which resets
// the hang timeout and shows in `trainctl describe`. Made to run inside a replica: the job and
// replica default to TRAINCTL_JOB_ID and TRAINCTL_REPLICA_NAME, and the agent sets
// TRAINCTL_SERVER, TRAINCTL_CA and (with authentication) TRAINCTL_TOKEN, a token that allows
// only this, for its own job.
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "common/flag_values.h"
#include "common/status_macros.h"

namespace trainctl::cli {
namespace {

// ReportProgressRequest.message allows at most this many bytes.
constexpr size_t kMaxProgressMessage = 256;

// `flag`'s value, else the environment variable `env`'s; "" when neither is set.
std::string FlagOrEnv(const ParsedArgs& args, const char* flag, const char* env) {
  if (args.IsSet(flag)) return args.Get(flag);
  const char* value = std::getenv(env);
  return value == nullptr ? "" : value;
}

absl::StatusOr<v1::ReportProgressRequest> RequestFromArgs(const ParsedArgs& args) {
  v1::ReportProgressRequest request;
  request.set_job_id(FlagOrEnv(args, "job", "TRAINCTL_JOB_ID"));
  request.set_replica(FlagOrEnv(args, "replica", "TRAINCTL_REPLICA_NAME"));
  if (request.job_id().empty() || request.replica().empty()) {
    return absl::InvalidArgumentError(
        "progress needs --job and --replica (inside a replica, TRAINCTL_JOB_ID and "
        "TRAINCTL_REPLICA_NAME give them)");
  }
  if (args.IsSet("step")) {
    TC_ASSIGN_OR_RETURN(int64_t step, ParseWholeNumberFlag<int64_t>("--step", args.Get("step"), 0));
    request.set_step(step);
  }
  if (args.Get("message").size() > kMaxProgressMessage) {
    return absl::InvalidArgumentError(absl::StrCat("--message must be at most ",
                                                   kMaxProgressMessage, " bytes, got ",
                                                   args.Get("message").size()));
  }
  request.set_message(args.Get("message"));
  request.set_checkpoint(args.GetBool("checkpoint"));
  return request;
}

absl::StatusOr<int> RunProgress(const ParsedArgs& args, Client& client) {
  absl::StatusOr<v1::ReportProgressRequest> request = RequestFromArgs(args);
  if (!request.ok()) return request.status();
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::ReportProgressResponse response;
  grpc::Status status = client.stub().ReportProgress(&context, *request, &response);
  if (!status.ok()) return client.ToStatus(status);
  return kExitOk;
}

}  // namespace

Command ProgressCommand() {
  CommandSpec spec{
      "progress",
      "",
      "Report a replica's training progress (run it inside the replica)",
      "Each report restarts the replica's hang timeout (scheduling.hangTimeout). Inside a\n"
      "replica nothing else is needed: the job and replica come from TRAINCTL_JOB_ID and\n"
      "TRAINCTL_REPLICA_NAME, and the server, its CA and a token for this job's progress from\n"
      "TRAINCTL_SERVER, TRAINCTL_CA and TRAINCTL_TOKEN, which the agent sets. Prints nothing.\n"
      "After a notice (TRAINCTL_PREEMPTION_NOTICE), --checkpoint tells the scheduler the\n"
      "replica has saved its state and may be stopped before the notice's deadline.",
      {{"step", 0, FlagSpec::Kind::kValue, "N", "", "The training step reached"},
       {"checkpoint", 0, FlagSpec::Kind::kBool, "", "",
        "The replica finished writing a checkpoint"},
       {"message", 0, FlagSpec::Kind::kValue, "TEXT", "", "A note, at most 256 bytes"},
       {"job", 0, FlagSpec::Kind::kValue, "ID", "", "The job (default: $TRAINCTL_JOB_ID)"},
       {"replica", 0, FlagSpec::Kind::kValue, "NAME", "",
        "The replica (default: $TRAINCTL_REPLICA_NAME)"}},
      0,
      0};
  return {std::move(spec), &RunProgress};
}

}  // namespace trainctl::cli
