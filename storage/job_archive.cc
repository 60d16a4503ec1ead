#include "storage/job_archive.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "storage/pg_statement.h"
#include "storage/statement.h"

namespace trainctl::storage {

template <typename St>
absl::StatusOr<std::optional<JobArchive::Position>> ScanRows(St& st, const JobScan& scan,
                                                             const JobArchive::Visit& visit) {
  const int64_t after_ms = scan.after ? scan.after->first : INT64_MAX;
  const std::string after_id = scan.after ? scan.after->second : "";
  TC_RETURN_IF_ERROR(st.Bind({after_ms, after_id, scan.project, int64_t{scan.max_rows}}));
  std::optional<JobArchive::Position> last;
  int32_t read = 0;
  absl::Status status;
  for (;;) {
    absl::StatusOr<bool> row = st.Step();
    if (!row.ok()) status = row.status();
    if (!row.ok() || !*row) {
      // The end of the rows: nothing to go on from, unless max_rows cut them short.
      if (read < scan.max_rows) last.reset();
      break;
    }
    ++read;
    last = std::make_pair(st.Int(0), st.Text(1));
    const int64_t state = st.Int(2);
    const bool wanted =
        scan.states == 0 || (state >= 0 && state < 32 && (scan.states >> state) & 1u);
    if (wanted && !visit(last->first, last->second, st.Bytes(3))) {
      last.reset();  // the visitor knows where it stopped
      break;
    }
  }
  st.Reset();  // ends its read
  if (!status.ok()) return status;
  return last;
}

template absl::StatusOr<std::optional<JobArchive::Position>> ScanRows(Statement&, const JobScan&,
                                                                      const JobArchive::Visit&);
template absl::StatusOr<std::optional<JobArchive::Position>> ScanRows(PgStatement&, const JobScan&,
                                                                      const JobArchive::Visit&);

absl::StatusOr<RunLocation> LocateRunOf(const std::string& job_id,
                                        const std::optional<v1::Job>& job,
                                        const std::vector<sched::ReplicaRun>& runs,
                                        const std::string& replica, int32_t attempt,
                                        int32_t restart) {
  if (!job.has_value()) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  std::vector<std::string> names;
  for (const v1::Replica& r : job->replicas()) names.push_back(r.name());
  if (std::find(names.begin(), names.end(), replica) == names.end()) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no replica \"", replica,
                                            "\"; its replicas are ", absl::StrJoin(names, ", ")));
  }
  int32_t a = attempt;
  if (a == 0) {
    for (const sched::ReplicaRun& r : runs) a = std::max(a, r.attempt);
    if (a == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " never started a replica: no logs"));
    }
  }
  const sched::ReplicaRun* found = nullptr;
  for (const sched::ReplicaRun& r : runs) {
    if (r.replica != replica || r.attempt != a) continue;
    if (restart >= 0 ? r.restart == restart : (found == nullptr || r.restart > found->restart)) {
      found = &r;
    }
  }
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no run of replica ", replica, " in attempt ", a,
                                            restart >= 0 ? absl::StrCat(" restart ", restart) : "",
                                            " of job ", job_id));
  }
  // The job ended, so every run of it did.
  return RunLocation{found->node, found->run_id, true};
}

}  // namespace trainctl::storage
