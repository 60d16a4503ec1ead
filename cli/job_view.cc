#include "cli/job_view.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/array_view.h"
#include "cli/queue_view.h"
#include "cli/states.h"
#include "common/signals.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// "2026-11-21T03:44:36Z (5m ago)", or "" when unset.
std::string FormatTime(const google::protobuf::Timestamp& ts, int64_t now_ms) {
  const int64_t ms = TimestampToMs(ts);
  if (ms <= 0) return "";
  return absl::StrCat(FormatRfc3339(ms), " (", FormatAge(now_ms - ms), " ago)");
}

// The error message with its canonical code, e.g. "... status of 3. (code 3)".
std::string ErrorText(const v1::JobError& error) {
  if (error.message().empty()) return "";
  if (error.code() == 0) return error.message();
  return absl::StrCat(error.message(), " (code ", error.code(), ")");
}

// While queued for a retry: "in 5s (2026-01-01T00:00:05Z)", or "now (...)" once the backoff
// has ended and the job waits for something else (see the queue reason).
std::string NextAttemptText(const v1::Job& job, int64_t now_ms) {
  if (job.state() != v1::JOB_STATE_QUEUED) return "";
  const std::string countdown = FormatCountdown(job.next_attempt_time(), now_ms);
  if (countdown.empty()) return "";
  return absl::StrCat(countdown, " (", FormatRfc3339(TimestampToMs(job.next_attempt_time())), ")");
}

// The latest preemption: under way while the job is PENDING or RUNNING ("by j-b (reason); replicas
// stop by 2026-...Z (in 4m)"), past afterwards ("by j-b at 2026-...Z (reason)").
std::string PreemptionText(const v1::Job& job, int64_t now_ms) {
  if (!job.has_preemption()) return "";
  const v1::Preemption& p = job.preemption();
  const std::string by =
      p.preempting_job().empty() ? "by its lender" : absl::StrCat("by ", p.preempting_job());
  const bool under_way =
      job.state() == v1::JOB_STATE_PENDING || job.state() == v1::JOB_STATE_RUNNING;
  if (under_way) {
    return absl::StrCat(by, " (", p.reason(), "); replicas checkpoint and stop by ",
                        FormatTimestamp(p.deadline()), " (", FormatCountdown(p.deadline(), now_ms),
                        ")");
  }
  return absl::StrCat(by, " at ", FormatTimestamp(p.decision_time()), ", attempt ", p.attempt(),
                      " (", p.reason(), ")");
}

// While queued: the jobs it is preempting to make room for itself.
std::string PreemptingText(const v1::Job& job) {
  if (job.state() != v1::JOB_STATE_QUEUED || !job.has_queue_status()) return "";
  return absl::StrJoin(job.queue_status().preempting(), ", ");
}

// While queued with the cluster's reservation: "node-a, node-b; expected to start at ... (in
// 4m)", or "...; start unknown (a job it waits for has no scheduling.timeout)".
std::string ReservedNodesText(const v1::Job& job, int64_t now_ms) {
  const std::string start = ExpectedStartText(job, now_ms);
  if (start.empty()) return "";
  const std::string nodes = absl::StrJoin(job.queue_status().reserved_nodes(), ", ");
  if (start == "unknown") {
    return absl::StrCat(nodes, "; start unknown (a job it waits for has no scheduling.timeout)");
  }
  return absl::StrCat(nodes, "; expected to start at ", start);
}

}  // namespace

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string RenderJobSummary(const v1::Job& job, int64_t now_ms) {
  return RenderFields(JobSummaryFields(job, now_ms));
}

std::vector<std::pair<std::string, std::string>> JobSummaryFields(const v1::Job& job,
                                                                  int64_t now_ms) {
  return {
      {"ID", job.id()},
      {"Name", job.display_name()},
      {"Project", job.project()},
      {"Creator", job.creator()},
      {"Priority", absl::StrCat(job.priority())},
      {"State", JobStateName(job.state())},
      {"Array", ArrayText(job)},
      {"Held elements", job.array().held_indices()},
      {"Cancelled before start", job.array().cancelled_indices()},
      {"Elements", ArrayElementsHint(job)},
      {"Element", ElementText(job)},
      {"Error", ErrorText(job.error())},
      {"Reason", job.error().reason()},
      {"Error replica", job.error().replica()},
      {"Error node", job.error().node()},
      {"Queue reason", job.queue_reason()},
      {"Held", HeldText(job, now_ms)},
      {"Dependencies", DependenciesText(job)},
      {"Next attempt", NextAttemptText(job, now_ms)},
      {"Position", PositionText(job)},
      {"Preempting", PreemptingText(job)},
      {"Reserved", ReservedNodesText(job, now_ms)},
      {"Preemptions", job.preemptions() > 0 ? absl::StrCat(job.preemptions()) : ""},
      {"Preempted", PreemptionText(job, now_ms)},
      {"Last checkpoint", FormatTime(job.last_checkpoint_time(), now_ms)},
      {"Created", FormatTime(job.create_time(), now_ms)},
      {"Started", FormatTime(job.start_time(), now_ms)},
      {"Ended", FormatTime(job.end_time(), now_ms)},
      {"Checkpoints", job.checkpoint_dir()},
      {"Workdir", job.spec().workdir()},
      {"Secrets", SecretRefsText(job.spec())},
      {"Images", ImagesText(job.spec())},
  };
}

std::string ImagesText(const v1::JobSpec& spec) {
  std::vector<std::string> images;
  for (const v1::WorkerPool& pool : spec.worker_pools()) {
    if (pool.image().empty()) continue;
    std::string text = absl::StrCat(pool.name(), ": ", pool.image());
    if (pool.image_pull_policy() == v1::IMAGE_PULL_POLICY_ALWAYS) {
      absl::StrAppend(&text, " (pull ALWAYS)");
    }
    images.push_back(std::move(text));
  }
  return absl::StrJoin(images, ", ");
}

std::string SecretRefsText(const v1::JobSpec& spec) {
  std::vector<std::string> refs;
  for (const v1::WorkerPool& pool : spec.worker_pools()) {
    // Sorted: a proto map's order is not.
    std::map<std::string, std::string> sorted(pool.secret_refs().begin(), pool.secret_refs().end());
    for (const auto& [var, name] : sorted) {
      refs.push_back(absl::StrCat(pool.name(), ": ", var, " from ", name));
    }
  }
  return absl::StrJoin(refs, ", ");
}

std::string ExpectedStartText(const v1::Job& job, int64_t now_ms) {
  if (job.state() != v1::JOB_STATE_QUEUED || job.queue_status().reserved_nodes().empty()) {
    return "";
  }
  const v1::QueueStatus& qs = job.queue_status();
  if (!qs.has_expected_start_time()) return "unknown";
  return absl::StrCat(FormatTimestamp(qs.expected_start_time()), " (",
                      FormatCountdown(qs.expected_start_time(), now_ms), ")");
}

std::string PositionText(const v1::Job& job) {
  if (job.state() != v1::JOB_STATE_QUEUED || !job.has_queue_status()) return "";
  const v1::QueueStatus& qs = job.queue_status();
  std::string out = absl::StrCat(qs.position(), " in ", job.project());
  const int32_t ahead = qs.jobs_ahead_count();
  if (ahead == 0) return absl::StrCat(out, " (first in line)");
  absl::StrAppend(&out, " (", ahead, ahead == 1 ? " job" : " jobs", " ahead");
  if (!qs.jobs_ahead().empty()) absl::StrAppend(&out, ": ", absl::StrJoin(qs.jobs_ahead(), ", "));
  if (ahead > qs.jobs_ahead_size())
    absl::StrAppend(&out, " and ", ahead - qs.jobs_ahead_size(), " more");
  return absl::StrCat(out, ")");
}

std::string RenderWaitingFor(const v1::Job& job) {
  if (job.state() != v1::JOB_STATE_QUEUED || job.queue_status().blockers().empty()) return "";
  std::string out = "\nWaiting for:\n";
  for (const v1::Blocker& b : job.queue_status().blockers())
    absl::StrAppend(&out, "  ", b.message(), "\n");
  return out;
}

std::string ReplicaExitText(const v1::Replica& replica) {
  if (replica.oom_killed()) {
    if (replica.has_exit_code()) return absl::StrCat("OOM (", replica.exit_code(), ")");
    if (!replica.has_signal()) return "OOM";
    return absl::StrCat("OOM (", SignalName(replica.signal()), ")");
  }
  if (replica.has_signal()) {
    if (!SignalHasName(replica.signal())) return SignalName(replica.signal());
    return absl::StrCat("signal ", replica.signal(), " (", SignalName(replica.signal()), ")");
  }
  if (replica.has_exit_code()) return absl::StrCat(replica.exit_code());
  return "-";
}

std::string FormatCountdown(const google::protobuf::Timestamp& ts, int64_t now_ms) {
  const int64_t ms = TimestampToMs(ts);
  if (ms <= 0) return "";
  if (ms <= now_ms) return "now";
  // Rounded up, so that a countdown never reads "in 0s" before it is due.
  return absl::StrCat("in ", FormatAge((ms - now_ms + 999) / 1000 * 1000));
}

std::string FormatTimestamp(const google::protobuf::Timestamp& ts) {
  const int64_t ms = TimestampToMs(ts);
  return ms > 0 ? FormatRfc3339(ms) : "-";
}

std::string RenderJobDetails(const v1::Job& job, int64_t now_ms) {
  std::string out = absl::StrCat(RenderJobSummary(job, now_ms), RenderWaitingFor(job));
  if (job.replicas_size() > 0) {
    Table replicas({"NAME", "RANK", "NODE", "STATE", "RESTARTS", "EXIT", "PID"});
    for (const v1::Replica& r : job.replicas()) {
      replicas.AddRow({r.name(), absl::StrCat(r.rank()), OrDash(r.node()),
                       ReplicaStateName(r.state()), absl::StrCat(r.restart_count()),
                       ReplicaExitText(r), r.pid() > 0 ? absl::StrCat(r.pid()) : "-"});
    }
    absl::StrAppend(&out, "\nReplicas:\n", replicas.Render());
  }
  if (job.attempts_size() > 0) {
    Table attempts({"NUMBER", "STATE", "REASON"});
    for (const v1::Attempt& a : job.attempts()) {
      attempts.AddRow({absl::StrCat(a.number()), JobStateName(a.state()), a.reason()});
    }
    absl::StrAppend(&out, "\nAttempts:\n", attempts.Render());
  }
  return out;
}

std::string RenderJobList(const std::vector<v1::Job>& jobs, int64_t now_ms) {
  Table table({"ID", "NAME", "PROJECT", "STATE", "AGE", "REPLICAS", "ELEMENTS"});
  for (const v1::Job& job : jobs) {
    const int64_t created = TimestampToMs(job.create_time());
    const bool array = IsArray(job);
    // An array runs no replicas itself; its elements' counts stand in for them.
    table.AddRow({job.id(), job.display_name(), job.project(), JobStateName(job.state()),
                  created > 0 ? FormatAge(now_ms - created) : "-",
                  array ? "-" : ReplicaSummary(job),
                  array ? OrDash(ArrayCountsText(job.array())) : ""});
  }
  table.DropEmptyColumns({"ELEMENTS"});
  return table.Render();
}

std::string ReplicaSummary(const v1::Job& job) {
  int running = 0;
  for (const v1::Replica& r : job.replicas()) {
    if (r.state() == v1::REPLICA_STATE_RUNNING) ++running;
  }
  return absl::StrCat(running, "/", job.replicas_size());
}

absl::StatusOr<std::string> JobsToJson(const std::vector<v1::Job>& jobs) {
  // MessageToJson indents by one space per level; each job sits two levels deep.
  if (jobs.empty()) return std::string("{\n \"jobs\": []\n}\n");
  std::string out = "{\n \"jobs\": [\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    absl::StatusOr<std::string> json = MessageToJson(jobs[i]);
    if (!json.ok()) return json.status();
    while (!json->empty() && json->back() == '\n') json->pop_back();
    absl::StrAppend(&out, IndentLines(*json, 2), i + 1 < jobs.size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, " ]\n}\n");
  return out;
}

absl::StatusOr<std::string> FormatJob(const v1::Job& job, OutputFormat format, int64_t now_ms) {
  if (format == OutputFormat::kTable) return RenderJobDetails(job, now_ms);
  return MessageToFormat(job, format);
}

absl::StatusOr<std::string> FormatJobList(const std::vector<v1::Job>& jobs, OutputFormat format,
                                          int64_t now_ms) {
  switch (format) {
    case OutputFormat::kTable:
      return RenderJobList(jobs, now_ms);
    case OutputFormat::kJson:
      return JobsToJson(jobs);
    case OutputFormat::kYaml: {
      absl::StatusOr<std::string> json = JobsToJson(jobs);
      if (!json.ok()) return json.status();
      return JsonToYaml(*json);
    }
  }
  return absl::InternalError("unknown output format");
}

std::string JobStatusLine(const v1::Job& job) {
  std::string line = absl::StrCat(job.id(), " ", JobStateName(job.state()));
  if (!job.error().message().empty()) absl::StrAppend(&line, ": ", job.error().message());
  return line;
}

}  // namespace trainctl::cli
