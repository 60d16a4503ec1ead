// hold, release, update and requeue: one JobService call each on a job, then one line saying what
// happened (or the job in JSON/YAML with -o). The server decides whether the job may change
// (FAILED_PRECONDITION saying why); these commands only check their flags. hold and release also
// take a range of a job array's elements, "ARRAY-[3-5,9]": one call and one line per element
// (element_range.h).
#include <iostream>

#include "cli/commands.h"
#include "cli/element_range.h"
#include "cli/output.h"
#include "cli/queue_flags.h"
#include "cli/queue_view.h"
#include "common/status_macros.h"

namespace trainctl::cli {
namespace {

// Prints the job as -o asks: `line` for a table (the default), else the job as JSON or YAML.
absl::StatusOr<int> PrintResult(OutputFormat format, const v1::Job& job, const std::string& line) {
  if (format == OutputFormat::kTable) {
    std::cout << line << std::endl;
    return kExitOk;
  }
  TC_ASSIGN_OR_RETURN(std::string text, MessageToFormat(job, format));
  std::cout << text << std::flush;
  return kExitOk;
}

// Prints the job as -o asks, for one job of several (a range of elements): a YAML document after
// the first starts with "---", so that the output reads as a stream of documents.
absl::StatusOr<int> PrintRangeResult(OutputFormat format, const v1::Job& job,
                                     const std::string& line, bool* first) {
  if (format == OutputFormat::kYaml && !*first) std::cout << "---\n";
  *first = false;
  return PrintResult(format, job, line);
}

absl::StatusOr<int> RunHold(const ParsedArgs& args, Client& client) {
  // A bad -o is refused before the job changes.
  TC_ASSIGN_OR_RETURN(const OutputFormat format, ParseOutputFormat(args.Get("output")));
  bool first = true;
  return ForEachJobId(
      args.args()[0],
      [&](const std::string& id) -> absl::StatusOr<int> {
        v1::HoldJobRequest request;
        request.set_id(id);
        request.set_reason(args.Get("reason"));
        v1::Job job;
        grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
          return client.stub().HoldJob(context, request, &job);
        });
        if (!status.ok()) return client.ToStatus(status);
        return PrintRangeResult(format, job, HeldLine(job), &first);
      },
      std::cerr);
}

absl::StatusOr<int> RunRelease(const ParsedArgs& args, Client& client) {
  // A bad -o is refused before the job changes.
  TC_ASSIGN_OR_RETURN(const OutputFormat format, ParseOutputFormat(args.Get("output")));
  bool first = true;
  return ForEachJobId(
      args.args()[0],
      [&](const std::string& id) -> absl::StatusOr<int> {
        v1::ReleaseJobRequest request;
        request.set_id(id);
        v1::Job job;
        grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
          return client.stub().ReleaseJob(context, request, &job);
        });
        if (!status.ok()) return client.ToStatus(status);
        return PrintRangeResult(format, job, ReleasedLine(job), &first);
      },
      std::cerr);
}

absl::StatusOr<int> RunUpdate(const ParsedArgs& args, Client& client) {
  UpdateFlags flags;
  flags.id = args.args()[0];
  flags.priority = args.IsSet("priority") ? args.Get("priority") : "";
  flags.queue_timeout = args.IsSet("queue-timeout") ? args.Get("queue-timeout") : "";
  flags.labels = args.GetAll("label");
  flags.remove_labels = args.GetAll("remove-label");
  if (args.IsSet("priority") && flags.priority.empty()) {
    return absl::InvalidArgumentError(
        "--priority needs a value: a whole number from -1000 to 1000");
  }
  if (args.IsSet("queue-timeout") && flags.queue_timeout.empty()) {
    return absl::InvalidArgumentError("--queue-timeout needs a value, e.g. 30m or 12h");
  }
  TC_ASSIGN_OR_RETURN(const v1::UpdateJobRequest request, BuildUpdateRequest(flags));
  // A bad -o is refused before the job changes.
  TC_ASSIGN_OR_RETURN(const OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::Job job;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.stub().UpdateJob(context, request, &job);
  });
  if (!status.ok()) return client.ToStatus(status);
  return PrintResult(format, job, UpdatedLine(job, request));
}

absl::StatusOr<int> RunRequeue(const ParsedArgs& args, Client& client) {
  v1::RequeueJobRequest request;
  request.set_id(args.args()[0]);
  request.set_reason(args.Get("reason"));
  // A bad -o is refused before the job changes.
  TC_ASSIGN_OR_RETURN(const OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::Job job;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.stub().RequeueJob(context, request, &job);
  });
  if (!status.ok()) return client.ToStatus(status);
  return PrintResult(format, job, RequeuedLine(job, request.reason()));
}

FlagSpec ReasonFlag(const char* what) {
  return {"reason", 0, FlagSpec::Kind::kValue, "TEXT", "", what};
}

}  // namespace

Command HoldCommand() {
  CommandSpec spec{
      "hold",
      "ID",
      "Keep a queued job from being admitted until it is released",
      "The job stays QUEUED with a HELD blocker and holds back no job behind it,\n"
      "even in a STRICT_FIFO project. Only a QUEUED job can be held; `trainctl\n"
      "release ID` lets it be admitted again. ID may be a job array (its elements\n"
      "not started yet, and queued ones, wait), one element (ARRAY-7) or a range of\n"
      "elements (ARRAY-[3-5,9], quoted for the shell), held one by one.",
      {ReasonFlag("Why, in words (at most 1024 characters); shown with the job"), OutputFlag()},
      1,
      1};
  return {std::move(spec), &RunHold};
}

Command ReleaseCommand() {
  CommandSpec spec{"release",
                   "ID",
                   "Let a held job be admitted again",
                   "Its scheduling.queueTimeout counts afresh from the release. ID may be a job\n"
                   "array, one element (ARRAY-7) or a range of elements (ARRAY-[3-5,9], quoted\n"
                   "for the shell), released one by one.",
                   {OutputFlag()},
                   1,
                   1};
  return {std::move(spec), &RunRelease};
}

Command UpdateCommand() {
  CommandSpec spec{
      "update",
      "ID [--priority N] [--queue-timeout D] [--label KEY=VALUE]... [--remove-label KEY]...",
      "Change a queued job's priority, queue timeout or labels",
      "Only a QUEUED job can be updated, and the job as changed must be valid as at submit.\n"
      "Labels are set (added or replaced) first, then removed. Give at least one change.",
      {{"priority", 0, FlagSpec::Kind::kValue, "N", "", "The new priority, -1000..1000"},
       {"queue-timeout", 0, FlagSpec::Kind::kValue, "D", "",
        "The new scheduling.queueTimeout, e.g. 30m or 12h (1s..366d)"},
       {"label", 0, FlagSpec::Kind::kList, "KEY=VALUE", "", "Set a label; repeatable"},
       {"remove-label", 0, FlagSpec::Kind::kList, "KEY", "", "Remove a label; repeatable"},
       OutputFlag()},
      1,
      1};
  return {std::move(spec), &RunUpdate};
}

Command RequeueCommand() {
  CommandSpec spec{
      "requeue",
      "ID",
      "Send a pending or running job back to the queue",
      "As a preemption with no preemptor: its replicas get the preemption notice\n"
      "(scheduling.preemptionGracePeriod) to checkpoint, the attempt ends charged to no\n"
      "budget, and the job waits in its own place in the queue.",
      {ReasonFlag("Why, in words (at most 1024 characters); the replicas' notice carries it"),
       OutputFlag()},
      1,
      1};
  return {std::move(spec), &RunRequeue};
}

}  // namespace trainctl::cli
