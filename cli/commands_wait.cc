// wait: follows WatchJob until the job ends, riding out server restarts.
#include <chrono>
#include <iostream>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/job_view.h"
#include "cli/retry.h"
#include "cli/states.h"
#include "common/flag_values.h"
#include "common/status_macros.h"

namespace trainctl::cli {
namespace {

using Clock = std::chrono::system_clock;

absl::StatusOr<int> RunWait(const ParsedArgs& args, Client& client) {
  const std::string& id = args.args()[0];
  std::optional<Clock::time_point> deadline;
  std::optional<std::chrono::milliseconds> timeout;
  const std::string timeout_text = args.Get("timeout");
  if (!timeout_text.empty()) {
    TC_ASSIGN_OR_RETURN(
        int64_t timeout_ms,
        ParseDurationFlag("--timeout", timeout_text, 0, std::numeric_limits<int64_t>::max(),
                          "a duration such as 90s, 10m or 1h30m"));
    timeout = std::chrono::milliseconds(timeout_ms);
    deadline = Clock::now() + *timeout;
  }
  v1::WatchJobRequest request;
  request.set_id(id);

  std::optional<v1::Job> last;  // the latest update, once one arrived
  // A server never reached is given this long (a restart in progress), then wait gives up:
  // with a wrong address, waiting forever would only hide the mistake.
  const Clock::time_point connect_deadline = Clock::now() + std::chrono::seconds(15);
  bool reconnecting = false;
  absl::StatusOr<int> result = kExitOk;
  // The last pause before the deadline is cut short; the watch after it then times out.
  RetryLoop retry = timeout ? RetryLoop(*timeout, RetryLoop::AtTheEnd::kCutShort) : RetryLoop();
  retry.Run([&] {
    grpc::ClientContext context;
    if (deadline) context.set_deadline(*deadline);
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader = client.stub().WatchJob(&context, request);
    v1::Job job;
    bool ended = false;
    while (reader->Read(&job)) {
      last = job;
      retry.Reset();
      if (reconnecting) {
        std::cerr << "trainctl: watching " << id << " again" << std::endl;
        reconnecting = false;
      }
      if (IsTerminal(job.state())) {
        ended = true;
        context.TryCancel();  // the server ends the stream anyway; do not wait for it
        break;
      }
    }
    const grpc::Status status = reader->Finish();
    if (ended) {
      std::cout << JobStatusLine(*last) << std::endl;
      result = last->state() == v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitJobFailed;
      return RetryLoop::kDone;
    }
    if (deadline &&
        (Clock::now() >= *deadline || status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
      std::string what = absl::StrCat("timed out after ", timeout_text, " waiting for job ", id);
      if (last) absl::StrAppend(&what, " (last state ", JobStateName(last->state()), ")");
      result = absl::DeadlineExceededError(what);
      return RetryLoop::kDone;
    }
    // A standby answered (a failover): watch at the leader it names, at once.
    if (client.Retarget(status, &context) == Client::Retry::kNow) {
      std::cerr << "trainctl: " << status.error_message() << "; watching " << id << " at "
                << client.server() << std::endl;
      return RetryLoop::kNow;
    }
    // Rejections (NOT_FOUND...) are final; so is a server not reached within connect_deadline.
    if ((!status.ok() && !IsTransient(status.error_code())) ||
        (!last && status.error_code() == grpc::StatusCode::UNAVAILABLE && !client.Connected() &&
         Clock::now() >= connect_deadline)) {
      result = client.ToStatus(status);
      return RetryLoop::kDone;
    }
    if (!reconnecting) {
      std::cerr << "trainctl: lost the watch on " << id << " ("
                << (status.ok() ? std::string("the stream ended") : status.error_message())
                << "); reconnecting..." << std::endl;
      reconnecting = true;
    }
    return RetryLoop::kAfterBackoff;
  });
  return result;
}

}  // namespace

Command WaitCommand() {
  CommandSpec spec{
      "wait",
      "ID",
      "Wait for a job to end; print its id and final state",
      "Exits 0 when the job SUCCEEDED, 1 when it FAILED or was CANCELLED, 2 on --timeout or\n"
      "error. If the connection to the server breaks (a restart), wait reconnects with backoff\n"
      "and keeps waiting.",
      {{"timeout", 0, FlagSpec::Kind::kValue, "DURATION", "",
        "Give up after this long, e.g. 90s, 10m, 1h30m (default: wait forever)"}},
      1,
      1};
  return {std::move(spec), &RunWait};
}

}  // namespace trainctl::cli
