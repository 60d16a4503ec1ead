#include "scheduler/exit_policy.h"

#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace trainctl::sched {
namespace {

// Canonical codes (google.rpc.Code) used in JobError.code.
constexpr int kCodeInvalidArgument = 3;  // the user's code or spec
constexpr int kCodeResourceExhausted = 8;
constexpr int kCodeInternal = 13;

v1::JobError MakeError(int code, std::string message, const v1::Replica& replica) {
  v1::JobError e;
  e.set_code(code);
  e.set_message(std::move(message));
  e.set_replica(replica.name());
  e.set_node(replica.node());
  return e;
}

}  // namespace

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return absl::StrCat("signal ", signal);
  return absl::StrCat("SIG", abbrev);
}

ExitOutcome DecideOnExit(const v1::Job& job, const v1::Replica& replica,
                         const v1::ReplicaExited& exit) {
  (void)job;
  ExitOutcome out;
  const bool primary = replica.rank() == 0;
  if (exit.launch_failed()) {
    out.decision = ExitDecision::kFailJob;
    out.summary = absl::StrCat("could not start: ", exit.launch_error());
    if (exit.launch_error_is_user()) {
      out.error = MakeError(
          kCodeInvalidArgument,
          absl::StrCat("Replica ", replica.name(), " could not start: ", exit.launch_error(), "."),
          replica);
    } else {
      out.error = MakeError(
          kCodeInternal,
          absl::StrCat("Internal error occurred for the current attempt. Replica ", replica.name(),
                       " could not start on node ", replica.node(), ": ", exit.launch_error(), "."),
          replica);
    }
    return out;
  }
  if (exit.has_exit_code() && exit.exit_code() == 0) {
    out.summary = "exited with status 0";
    out.decision = primary ? ExitDecision::kSucceedJob : ExitDecision::kNothing;
    return out;
  }
  out.decision = ExitDecision::kFailJob;
  if (exit.oom_killed()) {
    int code = exit.has_exit_code() ? exit.exit_code() : 128 + exit.signal();
    out.summary = absl::StrCat("ran out of memory (status ", code, ")");
    out.error = MakeError(
        kCodeResourceExhausted,
        absl::StrCat("Replica ", replica.name(),
                     " ran out of memory and exited with a non-zero status of ", code, "."),
        replica);
    return out;
  }
  if (exit.has_signal()) {
    out.summary = absl::StrCat("killed by ", SignalName(exit.signal()));
    out.error =
        MakeError(kCodeInvalidArgument,
                  absl::StrCat("Replica ", replica.name(), " was killed by signal ", exit.signal(),
                               " (", SignalName(exit.signal()), "). Termination reason: Error."),
                  replica);
    return out;
  }
  out.summary = absl::StrCat("exited with status ", exit.exit_code());
  out.error =
      MakeError(kCodeInvalidArgument,
                absl::StrCat("Replica ", replica.name(), " exited with a non-zero status of ",
                             exit.exit_code(), ". Termination reason: Error."),
                replica);
  return out;
}

ExitOutcome DecideOnLostReplica(const v1::Job& job, const v1::Replica& replica,
                                const std::string& node) {
  (void)job;
  ExitOutcome out;
  out.decision = ExitDecision::kFailJob;
  out.summary = absl::StrCat("lost: the agent on ", node, " restarted and no longer runs it");
  out.error = MakeError(
      kCodeInternal,
      absl::StrCat("Internal error occurred for the current attempt. Replica ", replica.name(),
                   " was lost: the agent on node ", node, " restarted and no longer runs it."),
      replica);
  return out;
}

}  // namespace trainctl::sched
