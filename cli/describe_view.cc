#include "cli/describe_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/job_view.h"
#include "cli/output.h"
#include "cli/states.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

// "\nTitle:\n" and the table indented by two spaces.
std::string Section(const std::string& title, const Table& table) {
  return absl::StrCat("\n", title, ":\n", IndentLines(table.Render(), 2));
}

}  // namespace

std::string RenderJobDescription(const v1::Job& job, int64_t now_ms) {
  std::string out = RenderJobSummary(job, now_ms);
  if (job.replicas_size() > 0) {
    Table replicas({"NAME", "RANK", "NODE", "STATE", "RESTARTS", "EXIT", "MESSAGE"});
    for (const v1::Replica& r : job.replicas()) {
      replicas.AddRow({r.name(), absl::StrCat(r.rank()), OrDash(r.node()),
                       ReplicaStateName(r.state()), absl::StrCat(r.restart_count()),
                       ReplicaExitText(r), r.message()});
    }
    absl::StrAppend(&out, Section("Replicas", replicas));
  }
  if (job.attempts_size() > 0) {
    Table attempts({"NUMBER", "STATE", "NODES", "STARTED", "ENDED", "REASON"});
    for (const v1::Attempt& a : job.attempts()) {
      attempts.AddRow({absl::StrCat(a.number()), JobStateName(a.state()),
                       OrDash(absl::StrJoin(a.nodes(), ",")), FormatTimestamp(a.start_time()),
                       FormatTimestamp(a.end_time()), a.reason()});
    }
    absl::StrAppend(&out, Section("Attempts", attempts));
  }
  return out;
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
