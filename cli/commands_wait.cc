// wait: follows WatchJob until the job ends, riding out server restarts.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/job_view.h"
#include "cli/states.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

using Clock = std::chrono::system_clock;

absl::StatusOr<int> RunWait(const ParsedArgs& args, Client& client) {
  const std::string& id = args.args()[0];
  std::optional<Clock::time_point> deadline;
  const std::string timeout_text = args.Get("timeout");
  if (!timeout_text.empty()) {
    TC_ASSIGN_OR_RETURN(int64_t timeout_ms, ParseDurationMs(timeout_text));
    deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  }
  v1::WatchJobRequest request;
  request.set_id(id);

  std::optional<v1::Job> last;  // the latest update, once one arrived
  // A server never reached is given this long (a restart in progress), then wait gives up:
  // with a wrong address, waiting forever would only hide the mistake.
  const Clock::time_point connect_deadline = Clock::now() + std::chrono::seconds(15);
  int64_t backoff_ms = 0;
  bool reconnecting = false;
  while (true) {
    grpc::ClientContext context;
    if (deadline) context.set_deadline(*deadline);
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader = client.stub().WatchJob(&context, request);
    v1::Job job;
    bool ended = false;
    while (reader->Read(&job)) {
      last = job;
      backoff_ms = 0;
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
      return last->state() == v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitJobFailed;
    }
    if (deadline &&
        (Clock::now() >= *deadline || status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
      std::string what = absl::StrCat("timed out after ", timeout_text, " waiting for job ", id);
      if (last) absl::StrAppend(&what, " (last state ", JobStateName(last->state()), ")");
      return absl::DeadlineExceededError(what);
    }
    // A standby answered (a failover): watch at the leader it names, at once.
    if (client.Retarget(status, &context) == Client::Retry::kNow) {
      std::cerr << "trainctl: " << status.error_message() << "; watching " << id << " at "
                << client.server() << std::endl;
      continue;
    }
    // Rejections (NOT_FOUND...) are final; so is a server not reached within connect_deadline.
    if (!status.ok() && !IsTransient(status.error_code())) return client.ToStatus(status);
    if (!last && status.error_code() == grpc::StatusCode::UNAVAILABLE && !client.Connected() &&
        Clock::now() >= connect_deadline) {
      return client.ToStatus(status);
    }
    if (!reconnecting) {
      std::cerr << "trainctl: lost the watch on " << id << " ("
                << (status.ok() ? std::string("the stream ended") : status.error_message())
                << "); reconnecting..." << std::endl;
      reconnecting = true;
    }
    backoff_ms = NextBackoffMs(backoff_ms);
    auto pause = std::chrono::milliseconds(backoff_ms);
    if (deadline) {
      pause = std::min(
          pause, std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()));
    }
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
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
