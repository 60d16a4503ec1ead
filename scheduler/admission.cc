#include "scheduler/admission.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/names.h"
#include "common/time_util.h"
#include "scheduler/job_validation.h"
#include "scheduler/placement_kind.h"
#include "scheduler/preemption_policy.h"

namespace trainctl::sched {
namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

struct Dim {
  const char* name;  // Blocker.resource
  const char* unit;  // in sentences
  double demand, used, limit, borrowable;
};

std::string Amount(double v, const char* unit) { return absl::StrFormat("%g %s", v, unit); }

}  // namespace

Res LimitsOf(const Quota& q, double unlimited) {
  Res r;
  r.cpu = q.cpu ? *q.cpu : unlimited;
  r.memory_mb = q.memory_mb ? *q.memory_mb : static_cast<int64_t>(std::min(unlimited, 9.0e18));
  r.gpus = q.gpus ? *q.gpus : static_cast<int64_t>(std::min(unlimited, 9.0e18));
  return r;
}

Res Borrowed(const Quota& q, const Res& used) {
  Res b;
  if (q.cpu) b.cpu = std::max(0.0, used.cpu - *q.cpu);
  if (q.memory_mb) b.memory_mb = std::max<int64_t>(0, used.memory_mb - *q.memory_mb);
  if (q.gpus) b.gpus = std::max<int64_t>(0, used.gpus - *q.gpus);
  return b;
}

Res Unused(const Quota& q, const Res& used) {
  Res u;
  if (q.cpu) u.cpu = std::max(0.0, *q.cpu - used.cpu);
  if (q.memory_mb) u.memory_mb = std::max<int64_t>(0, *q.memory_mb - used.memory_mb);
  if (q.gpus) u.gpus = std::max<int64_t>(0, *q.gpus - used.gpus);
  return u;
}

QuotaEval EvaluateQuota(const std::string& project, const Quota& q, const ProjectUsage& usage,
                        const Res& demand, const Res& borrowable) {
  QuotaEval e;
  e.fits_now = true;
  e.fits_ever = true;
  const Res& borrow_limit = q.borrowing_limit;
  const Dim dims[] = {
      {"gpus", "gpus", double(demand.gpus), double(usage.used.gpus),
       q.gpus ? double(*q.gpus) : kUnlimited, double(borrowable.gpus)},
      {"cpu", "cpu cores", demand.cpu, usage.used.cpu, q.cpu ? *q.cpu : kUnlimited, borrowable.cpu},
      {"memoryMb", "MiB of memory", double(demand.memory_mb), double(usage.used.memory_mb),
       q.memory_mb ? double(*q.memory_mb) : kUnlimited, double(borrowable.memory_mb)},
  };
  const double borrow_limits[] = {double(borrow_limit.gpus), borrow_limit.cpu,
                                  double(borrow_limit.memory_mb)};
  for (size_t i = 0; i < 3; ++i) {
    const Dim& d = dims[i];
    if (std::isinf(d.limit) || d.demand <= 0) continue;
    const int32_t jobs = usage.running_jobs;
    if (d.demand > d.limit + borrow_limits[i] + 1e-9) {
      e.fits_ever = false;
      e.fits_now = false;
      v1::Blocker b;
      b.set_kind(BlockerWord(BlockerKind::kQuota));
      b.set_resource(d.name);
      b.set_needed(d.demand);
      b.set_in_use(d.used);
      b.set_limit(d.limit);
      b.set_jobs(usage.running_jobs);
      b.set_message(absl::StrCat(BlockerWord(BlockerKind::kQuota), ": project ", project, " needs ",
                                 Amount(d.demand, d.unit), " but its quota is ",
                                 Amount(d.limit, d.unit), "; raise it with: trainctl quota set ",
                                 project, " --",
                                 std::string(d.name) == "memoryMb" ? "memory-mb" : d.name, " ",
                                 absl::StrFormat("%g", d.demand)));
      e.blockers.push_back(std::move(b));
      continue;
    }
    const double over = d.used + d.demand - d.limit;
    if (over > 1e-9) {
      if (over <= d.borrowable + 1e-9) {
        if (i == 0) e.borrows.gpus = static_cast<int64_t>(over);
        if (i == 1) e.borrows.cpu = over;
        if (i == 2) e.borrows.memory_mb = static_cast<int64_t>(over);
        continue;
      }
      e.fits_now = false;
      v1::Blocker b;
      b.set_kind(BlockerWord(BlockerKind::kQuota));
      b.set_resource(d.name);
      b.set_needed(d.demand);
      b.set_in_use(d.used);
      b.set_limit(d.limit);
      b.set_jobs(usage.running_jobs);
      std::string msg = absl::StrCat(
          BlockerWord(BlockerKind::kQuota), ": project ", project, " needs ",
          Amount(d.demand, d.unit), ", ", absl::StrFormat("%g", d.used), " of ",
          absl::StrFormat("%g", d.limit), " in use by ", jobs, jobs == 1 ? " job" : " jobs");
      // `borrowable` is the whole borrowing allowed; what is borrowed already is not lendable.
      const double more = d.borrowable - std::max(0.0, d.used - d.limit);
      if (more > 1e-9) {
        absl::StrAppend(&msg, " (its cohort can lend ", absl::StrFormat("%g", more), " more)");
      }
      b.set_message(msg);
      e.blockers.push_back(std::move(b));
    }
  }
  if (q.max_running_jobs) {
    if (*q.max_running_jobs < 1) e.fits_ever = false;
    if (usage.running_jobs >= *q.max_running_jobs) {
      e.fits_now = false;
      v1::Blocker b;
      b.set_kind(BlockerWord(BlockerKind::kQuota));
      b.set_resource("runningJobs");
      b.set_needed(1);
      b.set_in_use(usage.running_jobs);
      b.set_limit(*q.max_running_jobs);
      b.set_jobs(usage.running_jobs);
      b.set_message(absl::StrCat(BlockerWord(BlockerKind::kQuota), ": project ", project, " runs ",
                                 usage.running_jobs, " of ", *q.max_running_jobs,
                                 " jobs (maxRunningJobs)"));
      e.blockers.push_back(std::move(b));
    }
  }
  return e;
}

absl::Status ValidateQuota(const v1::Quota& q) {
  if (!IsDnsLabel(q.project(), 63)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quota.project must be 1..63 characters of a-z, 0-9 and '-'; got \"", q.project(), "\""));
  }
  if (q.has_gpus() && q.gpus() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("quota.gpus must be >= 0, got ", q.gpus()));
  }
  if (q.has_cpu() && !(q.cpu() >= 0 && std::isfinite(q.cpu()))) {
    return absl::InvalidArgumentError(absl::StrCat("quota.cpu must be >= 0, got ", q.cpu()));
  }
  if (q.has_memory_mb() && q.memory_mb() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota.memoryMb must be >= 0, got ", q.memory_mb()));
  }
  if (q.has_max_running_jobs() && q.max_running_jobs() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota.maxRunningJobs must be >= 0, got ", q.max_running_jobs()));
  }
  const v1::Resources& b = q.borrowing_limit();
  if (b.gpus() < 0 || b.memory_mb() < 0 || !(b.cpu() >= 0 && std::isfinite(b.cpu()))) {
    return absl::InvalidArgumentError("quota.borrowingLimit values must be >= 0");
  }
  if (!q.cohort().empty() && !IsDnsLabel(q.cohort(), 63)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quota.cohort must be 1..63 characters of a-z, 0-9 and '-'; got \"", q.cohort(), "\""));
  }
  if (!q.run_as_user().empty() && !IsUserName(q.run_as_user())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quota.runAsUser must be a user name of 1..32 letters, digits, '.', '_' and '-', not "
        "starting with '-'; got \"",
        q.run_as_user(), "\""));
  }
  // Agents look users up by name (getpwnam), and "0" would be root without saying so.
  if (!q.run_as_user().empty() &&
      q.run_as_user().find_first_not_of("0123456789") == std::string::npos) {
    const bool zero = q.run_as_user().find_first_not_of('0') == std::string::npos;
    return absl::InvalidArgumentError(absl::StrCat(
        "quota.runAsUser must be a user name, not a numeric id; got \"", q.run_as_user(), "\": ",
        zero ? "root is asked for with \"root\", and replicas run as root only on agents started "
               "with --allow-root-replicas"
             : "agents look users up by name"));
  }
  if (absl::Status s = ValidatePreemptionPolicy(q); !s.ok()) return s;
  if (q.has_weight() && !(q.weight() > 0 && q.weight() <= 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota.weight must be more than 0 and at most 1000000, got ", q.weight()));
  }
  return ValidateProtoDuration("quota.starvationLimit", q.starvation_limit(), 366LL * 86400);
}

}  // namespace trainctl::sched
