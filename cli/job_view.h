// How the CLI shows jobs: the `get` summary, the `list` table, their JSON/YAML forms, the
// one-line status that `wait` and `cancel` print, and the pieces `describe` shares with `get`.
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/output.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// `get -o table`: the job's fields, what a queued job waits for (RenderWaitingFor), then a REPLICAS
// table (NAME RANK NODE STATE RESTARTS EXIT
// PID) and an ATTEMPTS table (NUMBER STATE REASON).
std::string RenderJobDetails(const v1::Job& job, int64_t now_ms);

// The "Key: value" block `get` and `describe` open with: RenderFields(JobSummaryFields(...)).
std::string RenderJobSummary(const v1::Job& job, int64_t now_ms);

// The summary's fields, in order: id, name, project, priority, state, a job array's counts
// (ArrayText), its held and cancelled-before-start indices and where its elements are listed
// (ArrayElementsHint), an element's array (ElementText), the error (message, its failure class
// as "Reason", the replica and node it comes from), the queue reason and, while queued for a
// retry, when the next attempt may start, who held it and why (HeldText), its dependencies
// (DependenciesText), a queued job's position (PositionText); times, the checkpoint directory,
// the workdir, secretRefs and the pools' images.
// Fields the job does not have are empty (RenderFields leaves them out).
std::vector<std::pair<std::string, std::string>> JobSummaryFields(const v1::Job& job,
                                                                  int64_t now_ms);

// While the job is queued: its place in its project's queue and the first jobs ahead of it,
// "3 in team-a (2 jobs ahead: j-a, j-b)", "1 in team-a (first in line)"; "" otherwise.
std::string PositionText(const v1::Job& job);
// The pools' secretRefs, "chief: WANDB_API_KEY from wandb, ..."; "" without any. Names only:
// trainctld never returns a value.
std::string SecretRefsText(const v1::JobSpec& spec);
// The images the pools run in, "worker: registry:5000/team/train:1.4 (pull ALWAYS), ..."; a pool
// without one (it runs on the host) is left out, and "" when none has one.
std::string ImagesText(const v1::JobSpec& spec);

// While the job is queued and holds the cluster's reservation: when it is expected to start,
// "2026-12-04T10:00:00Z (in 4m)", or "unknown" (a job it waits for has no timeout); "" otherwise.
std::string ExpectedStartText(const v1::Job& job, int64_t now_ms);

// While the job is queued: "\nWaiting for:\n" and the message of every blocker, one per line,
// indented by two spaces; "" when it is not queued or nothing blocks it.
std::string RenderWaitingFor(const v1::Job& job);

// How the replica's last process ended: "3" (exit code), "signal 9 (SIGKILL)", or "-". A process
// killed for running out of memory shows as "OOM (137)", "OOM (SIGKILL)" or "OOM".
std::string ReplicaExitText(const v1::Replica& replica);

// How long until `ts` as a countdown, rounded up to whole seconds: "in 5s", "in 2m"; "now" when
// it is due. "" when `ts` is unset.
std::string FormatCountdown(const google::protobuf::Timestamp& ts, int64_t now_ms);

// "2026-11-21T03:44:36Z", or "-" when unset.
std::string FormatTimestamp(const google::protobuf::Timestamp& ts);

// `list -o table`: ID NAME PROJECT STATE AGE REPLICAS, one row per job; when a job array is
// among them, an ELEMENTS column with each array's counts (ArrayCountsText; "-" for other jobs),
// and "-" as an array's REPLICAS.
std::string RenderJobList(const std::vector<v1::Job>& jobs, int64_t now_ms);

// "3/4": replicas RUNNING / all replicas of the current attempt.
std::string ReplicaSummary(const v1::Job& job);

// {"jobs": [...]} in the same JSON style as MessageToJson.
absl::StatusOr<std::string> JobsToJson(const std::vector<v1::Job>& jobs);

// The job in `format`, as `get` prints it.
absl::StatusOr<std::string> FormatJob(const v1::Job& job, OutputFormat format, int64_t now_ms);

// The jobs in `format`, as `list` prints them.
absl::StatusOr<std::string> FormatJobList(const std::vector<v1::Job>& jobs, OutputFormat format,
                                          int64_t now_ms);

// "<id> <STATE>", plus ": <error message>" when the job has an error.
std::string JobStatusLine(const v1::Job& job);

// `s`, or "-" when it is empty (a table cell).
std::string OrDash(const std::string& s);

}  // namespace trainctl::cli
