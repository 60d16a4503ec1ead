// logs: copies a replica's captured output to stdout, optionally following it until the run ends.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/cluster_view.h"
#include "cli/commands.h"
#include "cli/retry.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// How often -f asks for new output when there was none.
constexpr std::chrono::milliseconds kPollInterval{300};
// Bytes per ReadLogs call (the server's default and a quarter of its maximum).
constexpr int kChunkBytes = 1 << 20;

// The primary replica (rank 0) of the job: the default for --replica.
absl::StatusOr<std::string> PrimaryReplica(Client& client, const std::string& job_id) {
  v1::GetJobRequest request;
  request.set_id(job_id);
  v1::Job job;
  grpc::Status status = client.Unary(
      [&](grpc::ClientContext* context) { return client.stub().GetJob(context, request, &job); });
  if (!status.ok()) return client.ToStatus(status);
  if (job.replicas_size() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " has no replicas yet; pass --replica NAME"));
  }
  return job.replicas(0).name();
}

absl::StatusOr<int> RunLogs(const ParsedArgs& args, Client& client) {
  const std::string& job_id = args.args()[0];
  absl::StatusOr<int> attempt = ParseWholeNumberFlag<int>("--attempt", args.Get("attempt"), 0);
  if (!attempt.ok()) return attempt.status();
  absl::StatusOr<int> restart = ParseWholeNumberFlag<int>("--restart", args.Get("restart"), -1);
  if (!restart.ok()) return restart.status();
  const bool follow = args.GetBool("follow");
  int64_t since_ms = 0;
  if (args.IsSet("since")) {
    TC_ASSIGN_OR_RETURN(since_ms, ParseSince(args.Get("since"), WallNowMs()));
  }
  absl::StatusOr<int> tail = ParseWholeNumberFlag<int>("--tail", args.Get("tail"), 0, 1'000'000);
  if (!tail.ok()) return tail.status();

  v1::ReadLogsRequest request;
  request.set_job_id(job_id);
  if (args.Get("replica").empty()) {
    absl::StatusOr<std::string> primary = PrimaryReplica(client, job_id);
    if (!primary.ok()) return primary.status();
    request.set_replica(*primary);
  } else {
    request.set_replica(args.Get("replica"));
  }
  request.set_offset(0);
  request.set_max_bytes(kChunkBytes);
  request.set_attempt(*attempt);
  request.set_restart(*restart);
  request.set_since_ms(since_ms);
  request.set_tail_lines(*tail);

  bool answered = false;  // the server has answered at least once
  bool retrying = false;
  std::string said_incomplete;
  grpc::Status status;
  RetryLoop retry;
  retry.Run([&] {
    grpc::ClientContext context;
    Client::PrepareUnary(&context);
    v1::ReadLogsResponse response;
    status = client.stub().ReadLogs(&context, request, &response);
    if (!status.ok()) {
      // A standby answered (a failover): read at the leader it names, at once.
      if (client.Retarget(status, &context) == Client::Retry::kNow) return RetryLoop::kNow;
      const bool transient = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
      if (!follow || !transient || (!answered && !client.Connected())) return RetryLoop::kDone;
      if (!retrying) {
        std::cerr << "trainctl: reading logs failed (" << status.error_message() << "); retrying..."
                  << std::endl;
        retrying = true;
      }
      return RetryLoop::kAfterBackoff;
    }
    answered = true;
    retrying = false;
    retry.Reset();
    if (!response.data().empty()) {
      std::fwrite(response.data().data(), 1, response.data().size(), stdout);
      std::fflush(stdout);
    }
    request.set_offset(response.next_offset());
    // The start they asked for is found: the next reads continue from the offset.
    request.clear_since_ms();
    request.clear_tail_lines();
    if (!response.incomplete().empty() && response.incomplete() != said_incomplete) {
      std::cerr << "trainctl: the log shown is not complete: " << response.incomplete()
                << std::endl;
      said_incomplete = response.incomplete();
    }
    if (response.complete()) return RetryLoop::kDone;
    if (response.data().empty()) {
      if (!follow) return RetryLoop::kDone;
      retry.Sleep(kPollInterval);
    }
    return RetryLoop::kNow;
  });
  if (!status.ok()) return client.ToStatus(status);
  return kExitOk;
}

}  // namespace

Command LogsCommand() {
  CommandSpec spec{
      "logs",
      "ID",
      "Print a replica's output (stdout and stderr)",
      "Without --replica, shows the primary replica (rank 0). With -f, keeps printing new output\n"
      "until the replica's run ends. The output comes from the replica's node while its agent\n"
      "can serve it, and from trainctld's copy otherwise (the node is down or gone); when that\n"
      "copy stops short of what the node wrote, a note on stderr says by how many bytes.\n"
      "--since and --tail start from trainctld's copy of the log.",
      {{"replica", 'r', FlagSpec::Kind::kValue, "NAME", "",
        "Replica name, e.g. worker-1 (default: the primary replica)"},
       {"follow", 'f', FlagSpec::Kind::kBool, "", "", "Keep printing output until the run ends"},
       {"attempt", 0, FlagSpec::Kind::kValue, "N", "0", "Attempt number; 0 is the current one"},
       {"restart", 0, FlagSpec::Kind::kValue, "N", "-1",
        "Restart number within the attempt; -1 is the latest run"},
       {"since", 0, FlagSpec::Kind::kValue, "WHEN", "",
        "Start with the output written since then: a duration back from now (10m, 2h) or an "
        "RFC3339 time"},
       {"tail", 0, FlagSpec::Kind::kValue, "N", "0", "Start with the last N lines (0: all)"}},
      1,
      1};
  return {std::move(spec), &RunLogs};
}

}  // namespace trainctl::cli
