// Api's UsageService: the hourly usage rollup (usage_hours, scheduler/usage_rollup.h) summed by
// one dimension over a time range, read from the database's reader off the reconcile loop.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "server/api.h"
#include "storage/usage_rows.h"

namespace trainctl::server {

void Api::GetUsage(const CallContext& call, const v1::GetUsageRequest& req,
                   Reply<v1::GetUsageResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kGetUsage);
  if (!caller.ok()) return done(caller.status());
  absl::StatusOr<storage::UsageBy> by = storage::ParseUsageBy(req.by());
  if (!by.ok()) return done(by.status());
  storage::UsageQuery q;
  if (req.has_since()) q.since_ms = TimestampToMs(req.since());
  if (req.has_until()) q.until_ms = TimestampToMs(req.until());
  if (q.until_ms <= q.since_ms) {
    return done(absl::InvalidArgumentError(absl::StrCat("--until must be after --since, got since ",
                                                        FormatRfc3339(q.since_ms), " and until ",
                                                        FormatRfc3339(q.until_ms))));
  }
  if (parts_.archive == nullptr) {
    return done(absl::UnavailableError("this trainctld serves no usage records"));
  }
  // A member sees the rows of their projects alone; operators, viewers and admins see all.
  std::set<std::string> projects;
  const bool scoped = caller->authenticated && caller->token.role() == v1::ROLE_MEMBER;
  if (scoped) projects.insert(caller->token.projects().begin(), caller->token.projects().end());
  absl::StatusOr<std::vector<sched::UsageHour>> rows = parts_.archive->ListUsage(q);
  if (!rows.ok()) return done(rows.status());
  v1::GetUsageResponse resp;
  for (const storage::UsageTotal& t :
       storage::GroupUsage(*rows, *by, scoped ? &projects : nullptr)) {
    v1::UsageRow* out = resp.add_rows();
    out->set_key(t.key);
    out->set_gpu_seconds(t.gpu_seconds);
    out->set_cpu_seconds(t.cpu_seconds);
    out->set_memory_mb_seconds(t.memory_mb_seconds);
    out->set_runs(t.runs);
    out->set_wall_seconds(t.wall_seconds);
    out->set_queue_wait_seconds(t.queue_wait_seconds);
  }
  done(std::move(resp));
}

}  // namespace trainctl::server
