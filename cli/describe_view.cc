#include "cli/describe_view.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/job_view.h"
#include "cli/output.h"
#include "cli/states.h"
#include "common/index_list.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// "\nTitle:\n" and the table indented by two spaces.
std::string Section(const std::string& title, const Table& table) {
  return absl::StrCat("\n", title, ":\n", IndentLines(table.Render(), 2));
}

}  // namespace

std::string RenderJobDescription(const v1::Job& job, int64_t now_ms) {
  std::vector<std::pair<std::string, std::string>> fields = JobSummaryFields(job, now_ms);
  fields.emplace_back("Retry budgets", RetryBudgetsText(job));
  fields.emplace_back("Host faults", FaultToleranceText(job));
  if (const std::string scope = RestartScopeText(job); !scope.empty()) {
    fields.emplace_back("Restart scope", scope);
  }
  if (job.gang_restarting() && job.has_root_cause()) {
    const v1::RootCause& cause = job.root_cause();
    fields.emplace_back("Gang restart",
                        absl::StrCat("in progress after ", cause.replica(),
                                     cause.replica().empty() ? "" : " ", cause.summary()));
  }
  if (const std::string elastic = ElasticText(job); !elastic.empty()) {
    fields.emplace_back("Elastic", elastic);
  }
  if (job.excluded_nodes_size() > 0) {
    // The nodes scheduling.stragglerAction REPLACE took out of the job's placements.
    std::vector<std::string> nodes;
    for (const std::string& n : job.excluded_nodes()) nodes.push_back(n + " (straggler)");
    fields.emplace_back("Excluded nodes", absl::StrJoin(nodes, ", "));
  }
  if (job.error().consequences_size() > 0) {
    fields.emplace_back("Consequences", absl::StrJoin(job.error().consequences(), "; "));
  }
  std::string out = absl::StrCat(RenderFields(fields), RenderWaitingFor(job));
  const std::string tail = OutputTailText(job.error().output_tail());
  if (!tail.empty()) absl::StrAppend(&out, "\nLast output:\n", IndentLines(tail, 2), "\n");
  if (job.replicas_size() > 0) {
    Table replicas({"NAME", "RANK", "NODE", "PORT", "GPUS", "STATE", "RESTARTS", "MOVES", "STEP",
                    "EXIT", "MESSAGE"});
    for (const v1::Replica& r : job.replicas()) {
      replicas.AddRow(
          {r.name(), r.rank() < 0 ? "-" : absl::StrCat(r.rank()), OrDash(r.node()),
           ReplicaPortText(r), FormatIndexList({r.gpu_devices().begin(), r.gpu_devices().end()}),
           ReplicaStateName(r.state()), ReplicaRestartsText(r),
           r.moves() > 0 ? absl::StrCat(r.moves()) : "", r.step() > 0 ? absl::StrCat(r.step()) : "",
           ReplicaExitText(r), ReplicaNoteText(r, now_ms)});
    }
    replicas.DropEmptyColumns({"PORT", "GPUS", "MOVES", "STEP"});
    absl::StrAppend(&out, Section("Replicas", replicas));
  }
  if (job.attempts_size() > 0) {
    Table attempts({"NUMBER", "STATE", "STARTED", "ENDED", "CLASS", "RULE", "REPLICA", "NODE",
                    "DECISION", "BUDGETS-LEFT", "CONSEQUENCES", "REASON"});
    Table gang(
        {"ATTEMPT", "GENERATION", "TIME", "CAUSE", "CLASS", "RULE", "CHARGED", "CONSEQUENCES"});
    Table resizes(
        {"ATTEMPT", "GENERATION", "TIME", "POOL", "REPLICAS", "WORLD", "CHANGED", "REASON"});
    Table fabric({"ATTEMPT", "RESULT", "NODES", "TOOK", "CULPRIT", "SUMMARY"});
    for (const v1::Attempt& a : job.attempts()) {
      if (a.has_fabric_check()) {
        const v1::FabricCheck& c = a.fabric_check();
        fabric.AddRow({absl::StrCat(a.number()), c.result(), absl::StrJoin(c.nodes(), ", "),
                       c.has_duration() ? FormatDurationExact(DurationToMs(c.duration())) : "",
                       c.culprit(), c.summary()});
      }
      attempts.AddRow({absl::StrCat(a.number()), JobStateName(a.state()),
                       FormatTimestamp(a.start_time()), FormatTimestamp(a.end_time()),
                       a.failure_class(), a.matched_rule(), a.replica(), a.node(), a.decision(),
                       BudgetsLeftText(a), absl::StrJoin(a.consequences(), "; "), a.reason()});
      for (const v1::GangRestart& g : a.gang_restarts()) {
        gang.AddRow({absl::StrCat(a.number()), absl::StrCat(g.generation()),
                     FormatTimestamp(g.time()),
                     absl::StrCat(g.cause().replica(), " ", g.cause().summary()),
                     g.cause().failure_class(), g.matched_rule(), g.charged() ? "yes" : "no",
                     absl::StrJoin(g.cause().consequences(), "; ")});
      }
      for (const v1::Resize& z : a.resizes()) {
        resizes.AddRow(
            {absl::StrCat(a.number()), absl::StrCat(z.generation()), FormatTimestamp(z.time()),
             z.pool(), absl::StrCat(z.from_replicas(), " -> ", z.to_replicas()),
             absl::StrCat(z.world_size()), absl::StrJoin(z.replicas(), ", "), z.reason()});
      }
    }
    attempts.DropEmptyColumns(
        {"CLASS", "RULE", "REPLICA", "NODE", "DECISION", "BUDGETS-LEFT", "CONSEQUENCES"});
    absl::StrAppend(&out, Section("Attempts", attempts));
    if (gang.row_count() > 0) {
      gang.DropEmptyColumns({"CLASS", "CONSEQUENCES"});
      absl::StrAppend(&out, Section("Gang restarts", gang));
    }
    if (resizes.row_count() > 0) absl::StrAppend(&out, Section("Resizes", resizes));
    if (fabric.row_count() > 0) {
      fabric.DropEmptyColumns({"TOOK", "CULPRIT"});
      absl::StrAppend(&out, Section("Fabric checks", fabric));
    }
  }
  return out;
}

std::string ElasticText(const v1::Job& job) {
  std::vector<std::string> pools;
  for (const v1::WorkerPool& p : job.spec().worker_pools()) {
    if (!p.has_elastic()) continue;
    int running = 0;
    for (const v1::Replica& r : job.replicas()) {
      running += r.pool() == p.name() && r.state() != v1::REPLICA_STATE_REMOVED;
    }
    pools.push_back(absl::StrCat(p.name(), " ", running, " of ", p.replica_count(),
                                 " replicas (min ", p.elastic().min_replicas(), ")"));
  }
  if (pools.empty()) return "";
  return absl::StrCat(absl::StrJoin(pools, ", "), "; waits ",
                      FormatDuration(DurationToMs(job.spec().scheduling().elastic_wait())),
                      " for room before shrinking");
}

std::string RestartScopeText(const v1::Job& job) {
  switch (job.spec().scheduling().restart_scope()) {
    case v1::RESTART_SCOPE_GANG:
      return absl::StrCat("GANG: a restartable failure restarts every replica together",
                          job.gang_generation() > 0
                              ? absl::StrCat(" (generation ", job.gang_generation(), " now)")
                              : "");
    case v1::RESTART_SCOPE_REPLICA:
      return "REPLICA: only a failed replica restarts";
    default:
      return "";  // the server always fills it in
  }
}

std::string RetryBudgetsText(const v1::Job& job) {
  const v1::Scheduling& s = job.spec().scheduling();
  const v1::Budgets& used = job.budgets_used();
  std::vector<std::string> parts;
  auto add = [&parts](const char* name, bool has_max, int max, int count) {
    if (has_max) {
      parts.push_back(absl::StrCat(name, " ", count, "/", max));
    } else if (count > 0) {
      parts.push_back(absl::StrCat(name, " ", count));
    }
  };
  add("job retries", s.has_max_job_retries(), s.max_job_retries(), used.job_retries());
  add("internal retries", s.has_max_internal_retries(), s.max_internal_retries(),
      used.internal_retries());
  add("capacity retries", s.has_max_capacity_retries(), s.max_capacity_retries(),
      used.capacity_retries());
  // The one budget whose default the CLI knows without the server filling it in.
  add("redispatches", true, JobRetryNum(job), used.redispatches());
  // "used" once, after the first budget, reads as applying to all of them.
  if (!parts.empty()) parts[0] += " used";
  std::string out = absl::StrJoin(parts, ", ");
  std::string restarts;
  if (s.restart_policy() == v1::RESTART_POLICY_NEVER) {
    restarts = "no replica restarts (restartPolicy NEVER)";
  } else if (s.has_max_replica_restarts()) {
    restarts = absl::StrCat("replica restarts up to ", s.max_replica_restarts(), " per attempt");
  }
  if (!restarts.empty()) absl::StrAppend(&out, out.empty() ? "" : "; ", restarts);
  return out;
}

std::string BudgetsLeftText(const v1::Attempt& attempt) {
  if (!attempt.has_budgets_left()) return "";
  const v1::Budgets& left = attempt.budgets_left();
  return absl::StrCat("retries ", left.job_retries(), ", internal ", left.internal_retries(),
                      ", capacity ", left.capacity_retries(), ", redispatches ",
                      left.redispatches());
}

std::string ReplicaPortText(const v1::Replica& replica) {
  if (replica.port() == 0) return "";
  if (replica.rendezvous_port() == 0) return absl::StrCat(replica.port());
  return absl::StrCat(replica.port(), " (rendezvous ", replica.rendezvous_port(), ")");
}

std::string ReplicaRestartsText(const v1::Replica& replica) {
  if (replica.charged_restarts() == replica.restart_count()) {
    return absl::StrCat(replica.restart_count());
  }
  return absl::StrCat(replica.restart_count(), " (", replica.charged_restarts(), " charged)");
}

int32_t JobRetryNum(const v1::Job& job) {
  const v1::FaultTolerance& ft = job.spec().fault_tolerance();
  return ft.has_job_retry_num() ? ft.job_retry_num() : kDefaultJobRetryNum;
}

std::string FaultToleranceText(const v1::Job& job) {
  const int32_t n = JobRetryNum(job);
  const bool set = job.spec().fault_tolerance().has_job_retry_num();
  const std::string field =
      absl::StrCat("(faultTolerance.jobRetryNum ", n, set ? ")" : ", the default)");
  if (n == 0) return absl::StrCat("fail the job ", field);
  return absl::StrCat("re-dispatch the job to other hosts, up to ", n,
                      n == 1 ? " time " : " times ", field);
}

std::string ReplicaNoteText(const v1::Replica& replica, int64_t now_ms) {
  std::string note = replica.message();
  auto append = [&note](const std::string& part) {
    note = note.empty() ? part : absl::StrCat(note, "; ", part);
  };
  if (!replica.move_reason().empty() && note.find(replica.move_reason()) == std::string::npos) {
    append(absl::StrCat("moving to another node: ", replica.move_reason()));
  }
  if (replica.state() == v1::REPLICA_STATE_RESTARTING) {
    const std::string countdown = FormatCountdown(replica.next_start_time(), now_ms);
    if (!countdown.empty()) append(absl::StrCat("restarts ", countdown));
  }
  if (!replica.straggler().empty()) append(absl::StrCat("straggler: ", replica.straggler()));
  return note;
}

std::string OutputTailText(const std::string& tail) {
  std::vector<std::string> lines = absl::StrSplit(tail, '\n');
  for (std::string& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF
    // A carriage return moves back to the start of the line: what follows the last one shows.
    const size_t cr = line.rfind('\r');
    if (cr != std::string::npos) line.erase(0, cr + 1);
    for (char& c : line) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) c = ' ';
    }
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return absl::StrJoin(lines, "\n");
}

std::string RenderEventsSection(const google::protobuf::RepeatedPtrField<v1::Event>& events,
                                int64_t now_ms) {
  if (events.empty()) return "Events:  <none>\n";
  Table table({"AGE", "TYPE", "REPLICA", "NODE", "REASON"});
  for (const v1::Event& e : events) {
    const int64_t ms = TimestampToMs(e.time());
    table.AddRow(
        {ms > 0 ? FormatAge(now_ms - ms) : "-", e.type(), e.replica(), e.node(), e.reason()});
  }
  table.DropEmptyColumns({"REPLICA", "NODE"});
  return absl::StrCat("Events:\n", IndentLines(table.Render(), 2));
}

}  // namespace trainctl::cli
