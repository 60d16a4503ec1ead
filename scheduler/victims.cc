#include "scheduler/victims.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"

namespace trainctl::sched {

namespace {

// Whether the taken victims hold at least `shortfall` in all.
bool Covers(const std::vector<const VictimCandidate*>& victims, const Res& shortfall) {
  Res sum;
  for (const VictimCandidate* v : victims) sum += v->holds;
  return sum.Fits(shortfall);
}

}  // namespace

namespace {

// Why a candidate may not be a victim, as a code: MayPreempt asks every active job of a few
// projects in every pass, and only WhyNotVictim needs the words.
enum class NotVictim {
  kMay,
  kItself,
  kNotPreemptible,
  kBeingPreempted,
  kMinRuntime,
  kWithinNever,
  kPriorityNotLower,
  kReclaimNever,
  kOtherCohort,
  kBorrowsNothing,
  kOverOwnQuota,
};

NotVictim Check(const Preemptor& p, const VictimCandidate& c, absl::Time now) {
  if (c.job_id == p.job_id) return NotVictim::kItself;
  if (!c.preemptible) return NotVictim::kNotPreemptible;
  if (c.being_preempted) return NotVictim::kBeingPreempted;
  if (now - c.started < c.min_runtime) return NotVictim::kMinRuntime;
  if (c.project == p.project) {
    if (p.within_project != v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY) {
      return NotVictim::kWithinNever;
    }
    return c.priority >= p.priority ? NotVictim::kPriorityNotLower : NotVictim::kMay;
  }
  if (p.reclaim != v1::RECLAIM_POLICY_LOWER_PRIORITY && p.reclaim != v1::RECLAIM_POLICY_ANY) {
    return NotVictim::kReclaimNever;
  }
  if (p.cohort.empty() || c.cohort != p.cohort) return NotVictim::kOtherCohort;
  if (!c.borrower) return NotVictim::kBorrowsNothing;
  if (!p.fits_own_quota) return NotVictim::kOverOwnQuota;
  if (p.reclaim == v1::RECLAIM_POLICY_LOWER_PRIORITY && c.priority >= p.priority) {
    return NotVictim::kPriorityNotLower;
  }
  return NotVictim::kMay;
}

}  // namespace

bool MayPreempt(const Preemptor& p, const VictimCandidate& c, absl::Time now) {
  return Check(p, c, now) == NotVictim::kMay;
}

std::string WhyNotVictim(const Preemptor& p, const VictimCandidate& c, absl::Time now) {
  switch (Check(p, c, now)) {
    case NotVictim::kMay:
      return "";
    case NotVictim::kItself:
      return "it is the waiting job";
    case NotVictim::kNotPreemptible:
      return "scheduling.preemptible is false";
    case NotVictim::kBeingPreempted:
      return "it is being preempted already";
    case NotVictim::kMinRuntime:
      return absl::StrCat("it has run ", FormatDuration(absl::ToInt64Milliseconds(now - c.started)),
                          " of its minRuntime ",
                          FormatDurationExact(absl::ToInt64Milliseconds(c.min_runtime)));
    case NotVictim::kWithinNever:
      return absl::StrCat("project ", p.project,
                          " does not preempt its own jobs (preemptWithinProject: never)");
    case NotVictim::kPriorityNotLower:
      return absl::StrCat("its priority ", c.priority, " is not lower than ", p.job_id, "'s ",
                          p.priority);
    case NotVictim::kReclaimNever:
      return absl::StrCat("project ", p.project, " does not reclaim what it lent (reclaim: never)");
    case NotVictim::kOtherCohort:
      return absl::StrCat("project ", c.project, " is not in ", p.project, "'s cohort");
    case NotVictim::kBorrowsNothing:
      return absl::StrCat("project ", c.project, " borrows nothing");
    case NotVictim::kOverOwnQuota:
      return absl::StrCat(p.job_id, " does not fit within project ", p.project,
                          "'s own quota, so there is nothing to reclaim for it");
  }
  return "";
}

bool VictimOrder(const VictimCandidate& a, const VictimCandidate& b) {
  // Borrowers first (true before false), those beyond their fair share of the cohort first,
  // lower priority, less work lost, started later, id. The start times trade places: the later
  // start goes first.
  return std::tie(b.borrower, b.beyond_fair_share, a.priority, a.gpu_seconds_lost,
                  a.cpu_seconds_lost, b.started,
                  a.job_id) < std::tie(a.borrower, a.beyond_fair_share, b.priority,
                                       b.gpu_seconds_lost, b.cpu_seconds_lost, a.started, b.job_id);
}

std::optional<std::vector<std::string>> ChooseVictims(
    const std::vector<VictimCandidate>& candidates, const FitsWithout& fits, const Res& shortfall) {
  std::vector<const VictimCandidate*> order;
  order.reserve(candidates.size());
  for (const VictimCandidate& c : candidates) order.push_back(&c);
  std::sort(order.begin(), order.end(),
            [](const VictimCandidate* a, const VictimCandidate* b) { return VictimOrder(*a, *b); });

  std::vector<const VictimCandidate*> taken;
  Res held;
  bool fit = false;
  for (const VictimCandidate* c : order) {
    taken.push_back(c);
    held += c->holds;
    if (!held.Fits(shortfall)) continue;
    if (fits(taken)) {
      fit = true;
      break;
    }
  }
  if (!fit) return std::nullopt;

  // The last victim taken is needed (without it the job did not fit); any other may not be
  // once later ones were taken. Dropping one only frees less, so one backward sweep suffices.
  for (int i = static_cast<int>(taken.size()) - 2; i >= 0; --i) {
    std::vector<const VictimCandidate*> without = taken;
    without.erase(without.begin() + i);
    if (Covers(without, shortfall) && fits(without)) taken = std::move(without);
  }
  std::vector<std::string> ids;
  ids.reserve(taken.size());
  for (const VictimCandidate* v : taken) ids.push_back(v->job_id);
  return ids;
}

}  // namespace trainctl::sched
