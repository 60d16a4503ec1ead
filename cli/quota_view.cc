#include "cli/quota_view.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/job_view.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// "4/8", or "4/-" without a limit.
std::string Cell(const std::string& used, bool has_limit, const std::string& limit) {
  return absl::StrCat(used, "/", has_limit ? limit : "-");
}

// "1.5" or "0.25": a weight or a share, without float noise.
std::string Number(double v) { return absl::StrFormat("%.4g", v); }

// "12.5 GPU-h, 40 CPU-h, 80 GiB-h", the decayed usage in hours; "none" without any.
std::string UsageText(const v1::FairShareUsage& u) {
  std::vector<std::string> parts;
  if (u.gpu_seconds() > 0) parts.push_back(absl::StrCat(Number(u.gpu_seconds() / 3600), " GPU-h"));
  if (u.cpu_seconds() > 0) parts.push_back(absl::StrCat(Number(u.cpu_seconds() / 3600), " CPU-h"));
  if (u.memory_mb_seconds() > 0) {
    parts.push_back(absl::StrCat(Number(u.memory_mb_seconds() / 3600 / 1024), " GiB-h"));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

}  // namespace

std::string BlockerSummary(const v1::Job& job) {
  const auto& blockers = job.queue_status().blockers();
  if (blockers.empty()) return "-";
  if (blockers.size() == 1) return blockers[0].message();
  return absl::StrCat(blockers[0].message(), " (+", blockers.size() - 1, " more)");
}

std::string WaitingText(const v1::Job& job, int64_t now_ms) {
  int64_t since = TimestampToMs(job.queue_time());
  if (since <= 0) since = TimestampToMs(job.create_time());
  return since > 0 ? FormatAge(now_ms - since) : "-";
}

std::string RenderQueue(const google::protobuf::RepeatedPtrField<v1::Job>& jobs, int64_t now_ms) {
  // START, while a job holds the cluster's reservation: when it is expected to start (as squeue
  // --start); "-" for the others (one reservation at a time).
  Table table({"POSITION", "ID", "NAME", "PROJECT", "PRIORITY", "WAITING", "START", "REASON"});
  for (const v1::Job& job : jobs) {
    table.AddRow({absl::StrCat(job.queue_status().position()), job.id(), job.display_name(),
                  job.project(), absl::StrCat(job.priority()), WaitingText(job, now_ms),
                  ExpectedStartText(job, now_ms), BlockerSummary(job)});
  }
  table.DropEmptyColumns({"START"});
  return table.Render();
}

absl::StatusOr<std::string> FormatQueue(const v1::ListQueueResponse& response, OutputFormat format,
                                        int64_t now_ms) {
  if (format == OutputFormat::kTable) return RenderQueue(response.jobs(), now_ms);
  return MessageToFormat(response, format);
}

std::string UsedOfLimitText(const std::string& used, bool has_limit, const std::string& limit,
                            const std::string& unit) {
  if (!has_limit) return absl::StrCat(used, " / unlimited");
  return absl::StrCat(used, " / ", limit, unit.empty() ? "" : " ", unit);
}

std::string StrategyText(const v1::Quota& quota) {
  if (quota.queueing_strategy() != v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO) return "strict FIFO";
  if (!quota.has_starvation_limit()) return "best-effort FIFO (default starvation limit)";
  return absl::StrCat("best-effort FIFO (starvation limit ",
                      FormatDuration(DurationToMs(quota.starvation_limit())), ")");
}

std::string ReclaimText(const v1::Quota& quota) {
  switch (quota.reclaim()) {
    case v1::RECLAIM_POLICY_LOWER_PRIORITY:
      return "lower-priority";
    case v1::RECLAIM_POLICY_ANY:
      return "any";
    default:
      return "never";
  }
}

std::string PreemptWithinProjectText(const v1::Quota& quota) {
  return quota.preempt_within_project() == v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY
             ? "lower-priority within the project"
             : "never within the project";
}

std::string ResourcesText(const v1::Resources& r, const std::string& none) {
  std::vector<std::string> parts;
  if (r.gpus() != 0) parts.push_back(absl::StrCat(r.gpus(), r.gpus() == 1 ? " gpu" : " gpus"));
  if (r.cpu() != 0) parts.push_back(absl::StrCat(r.cpu(), " cpu"));
  if (r.memory_mb() != 0) parts.push_back(absl::StrCat(r.memory_mb(), " MiB"));
  return parts.empty() ? none : absl::StrJoin(parts, ", ");
}

std::string RenderProject(const v1::Project& project) {
  const v1::Quota& q = project.quota();
  const v1::Resources& used = project.in_use();
  std::vector<std::pair<std::string, std::string>> fields = {
      {"Project", absl::StrCat(project.name(), project.default_quota() ? " (default quota)" : "")},
      {"Cohort", q.cohort().empty() ? "-" : q.cohort()},
      {"Strategy", StrategyText(q)},
      {"GPUs", UsedOfLimitText(absl::StrCat(used.gpus()), q.has_gpus(), absl::StrCat(q.gpus()),
                               q.gpus() == 1 ? "gpu" : "gpus")},
      {"CPU", UsedOfLimitText(absl::StrCat(used.cpu()), q.has_cpu(), absl::StrCat(q.cpu()), "cpu")},
      {"Memory", UsedOfLimitText(absl::StrCat(used.memory_mb()), q.has_memory_mb(),
                                 absl::StrCat(q.memory_mb()), "MiB")},
      {"Running jobs",
       UsedOfLimitText(absl::StrCat(project.running_jobs()), q.has_max_running_jobs(),
                       absl::StrCat(q.max_running_jobs()), "")},
      {"Queued jobs", absl::StrCat(project.queued_jobs())},
      {"Borrowed", ResourcesText(project.borrowed(), "nothing")},
  };
  // Only a member of a cohort can borrow.
  if (!q.cohort().empty()) {
    fields.emplace_back("May borrow", ResourcesText(q.borrowing_limit(), "nothing"));
  }
  // Fair share: its weight, its decayed usage and its share (lower goes first).
  fields.emplace_back("Weight", Number(q.has_weight() ? q.weight() : 1));
  fields.emplace_back("Usage", absl::StrCat(UsageText(project.usage()), " (decayed)"));
  fields.emplace_back("Share", Number(project.usage().share()));
  // Whether it takes lent quota back, and whether its jobs preempt each other.
  fields.emplace_back("Reclaim", ReclaimText(q));
  fields.emplace_back("Preemption", PreemptWithinProjectText(q));
  // The user its replicas run as on agents running as root (agents' --run-as entries win), and
  // the uid of its own they run under where no user is named.
  fields.emplace_back("Run as", q.run_as_user().empty() ? "project uid" : q.run_as_user());
  fields.emplace_back(
      "Project uid", project.replica_uid() == 0
                         ? "none yet (given at its first job)"
                         : absl::StrCat(project.replica_uid(), " (trainctl-", project.name(), ")"));
  return RenderFields(fields);
}

absl::StatusOr<std::string> FormatProject(const v1::Project& project, OutputFormat format) {
  if (format == OutputFormat::kTable) return RenderProject(project);
  return MessageToFormat(project, format);
}

std::vector<std::string> ProjectRow(const v1::Project& project) {
  const v1::Quota& q = project.quota();
  const v1::Resources& used = project.in_use();
  return {project.name(),
          q.cohort().empty() ? "-" : q.cohort(),
          Cell(absl::StrCat(used.gpus()), q.has_gpus(), absl::StrCat(q.gpus())),
          Cell(absl::StrCat(used.cpu()), q.has_cpu(), absl::StrCat(q.cpu())),
          Cell(absl::StrCat(used.memory_mb()), q.has_memory_mb(), absl::StrCat(q.memory_mb())),
          Cell(absl::StrCat(project.running_jobs()), q.has_max_running_jobs(),
               absl::StrCat(q.max_running_jobs())),
          absl::StrCat(project.queued_jobs()),
          Number(q.has_weight() ? q.weight() : 1),
          Number(project.usage().share())};
}

std::string RenderProjectList(const google::protobuf::RepeatedPtrField<v1::Project>& projects) {
  Table table({"NAME", "COHORT", "GPUS", "CPU", "MEMORY", "RUNNING", "QUEUED", "WEIGHT", "SHARE"});
  for (const v1::Project& p : projects) table.AddRow(ProjectRow(p));
  return table.Render();
}

absl::StatusOr<std::string> FormatProjects(const v1::ListProjectsResponse& response,
                                           OutputFormat format) {
  if (format == OutputFormat::kTable) return RenderProjectList(response.projects());
  return MessageToFormat(response, format);
}

}  // namespace trainctl::cli
