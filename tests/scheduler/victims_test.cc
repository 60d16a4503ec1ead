// Victim choice for preemption (scheduler/victims.h): who may be a victim, in which order, and
// the minimal set that lets a waiting job start.
#include "scheduler/victims.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

namespace trainctl::sched {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

VictimCandidate Candidate(const std::string& id, const std::string& project, int32_t priority,
                          int64_t gpus) {
  VictimCandidate c;
  c.job_id = id;
  c.project = project;
  c.cohort = "research";
  c.priority = priority;
  c.started = kNow - absl::Hours(1);
  c.holds = Res{0, 0, gpus};
  c.allocations = {{"node-" + id, ReplicaDemand{"worker-0", Res{0, 0, gpus}, 1}}};
  return c;
}

Preemptor Lender(int32_t priority = 0) {
  Preemptor p;
  p.job_id = "waiting";
  p.project = "lender";
  p.cohort = "research";
  p.priority = priority;
  p.reclaim = v1::RECLAIM_POLICY_ANY;
  p.fits_own_quota = true;
  return p;
}

// Fits when the victims give back at least `gpus` GPUs; records every question.
struct GpuRoom {
  int64_t gpus;
  std::vector<std::vector<std::string>> asked;
  bool operator()(const std::vector<const VictimCandidate*>& victims) {
    std::vector<std::string> ids;
    int64_t freed = 0;
    for (const VictimCandidate* v : victims) {
      ids.push_back(v->job_id);
      freed += v->holds.gpus;
    }
    asked.push_back(ids);
    return freed >= gpus;
  }
};

std::vector<std::string> Ids(const std::optional<std::vector<std::string>>& set) {
  return set.value_or(std::vector<std::string>{});
}

TEST_CASE("victims: borrowers go before lower priority, then least work lost, then latest start",
          "[victims]") {
  VictimCandidate borrower_high = Candidate("borrower-high", "b", 10, 1);
  borrower_high.borrower = true;
  VictimCandidate own_low = Candidate("own-low", "lender", 1, 1);
  VictimCandidate own_mid_much_lost = Candidate("own-mid-much", "lender", 5, 1);
  own_mid_much_lost.gpu_seconds_lost = 3600;
  VictimCandidate own_mid_little_lost = Candidate("own-mid-little", "lender", 5, 1);
  own_mid_little_lost.gpu_seconds_lost = 60;
  own_mid_little_lost.cpu_seconds_lost = 1e9;  // CPUs count only between equal GPU losses
  VictimCandidate own_mid_early = Candidate("own-mid-early", "lender", 5, 1);
  own_mid_early.gpu_seconds_lost = 3600;
  own_mid_early.started = kNow - absl::Hours(5);

  std::vector<VictimCandidate> all = {own_mid_early, own_low, own_mid_much_lost, borrower_high,
                                      own_mid_little_lost};
  std::sort(all.begin(), all.end(), VictimOrder);
  std::vector<std::string> order;
  for (const VictimCandidate& c : all) order.push_back(c.job_id);
  CHECK(order == std::vector<std::string>{"borrower-high", "own-low", "own-mid-little",
                                          "own-mid-much", "own-mid-early"});
}

TEST_CASE("victims: a borrower beyond its fair share of the cohort goes before one within it",
          "[victims]") {
  // Within its share, lower priority and less work lost: it would go first on those alone.
  VictimCandidate within = Candidate("within", "b", 0, 1);
  within.borrower = true;
  VictimCandidate beyond = Candidate("beyond", "c", 10, 4);
  beyond.borrower = true;
  beyond.beyond_fair_share = true;
  beyond.gpu_seconds_lost = 1e6;
  VictimCandidate own = Candidate("own", "lender", 0, 1);
  std::vector<VictimCandidate> all = {own, within, beyond};
  std::sort(all.begin(), all.end(), VictimOrder);
  std::vector<std::string> order;
  for (const VictimCandidate& c : all) order.push_back(c.job_id);
  CHECK(order == std::vector<std::string>{"beyond", "within", "own"});
  // So the job that needs one GPU takes the borrower beyond its share alone.
  GpuRoom room{1, {}};
  CHECK(Ids(ChooseVictims({within, beyond}, std::ref(room))) == std::vector<std::string>{"beyond"});
}

TEST_CASE("victims: the set is minimal, dropping the victims taken first that are not needed",
          "[victims]") {
  // In the order taken: two 1-GPU borrowers, then a 4-GPU one. The job needs 4 GPUs: after the
  // third it fits, and then neither of the first two is needed.
  VictimCandidate a = Candidate("a", "b", 0, 1), b = Candidate("b", "b", 1, 1),
                  c = Candidate("c", "b", 2, 4);
  for (VictimCandidate* v : {&a, &b, &c}) v->borrower = true;
  GpuRoom room{4, {}};
  auto set = ChooseVictims({c, b, a}, std::ref(room));
  CHECK(Ids(set) == std::vector<std::string>{"c"});

  // Needing 5: the 4-GPU job and one of the small ones; the later small one (b) is dropped.
  GpuRoom five{5, {}};
  CHECK(Ids(ChooseVictims({a, b, c}, std::ref(five))) == std::vector<std::string>{"a", "c"});
  // No more questions than twice the candidates.
  CHECK(five.asked.size() <= 6);
}

TEST_CASE("victims: nobody is preempted when the job would still not fit", "[victims]") {
  VictimCandidate a = Candidate("a", "b", 0, 2), b = Candidate("b", "b", 0, 2);
  a.borrower = b.borrower = true;
  GpuRoom room{8, {}};
  CHECK_FALSE(ChooseVictims({a, b}, std::ref(room)).has_value());
  GpuRoom none{1, {}};
  CHECK_FALSE(ChooseVictims({}, std::ref(none)).has_value());
}

TEST_CASE("victims: the fit is not asked before the victims hold the shortfall", "[victims]") {
  std::vector<VictimCandidate> small;
  for (int i = 0; i < 10; ++i) {
    small.push_back(Candidate("j" + std::to_string(i), "b", i, 1));
    small.back().borrower = true;
  }
  GpuRoom room{6, {}};
  auto set = ChooseVictims(small, std::ref(room), Res{0, 0, 6});
  REQUIRE(set.has_value());
  CHECK(set->size() == 6);
  // Asked first with six victims taken, then once per victim dropped in turn (none can be).
  REQUIRE_FALSE(room.asked.empty());
  CHECK(room.asked.front().size() == 6);
  for (const auto& question : room.asked) CHECK(question.size() >= 5);
}

TEST_CASE("victims: who may be a victim", "[victims]") {
  Preemptor lender = Lender(5);

  VictimCandidate borrowed = Candidate("borrowed", "b", 9, 1);
  borrowed.borrower = true;
  CHECK(MayPreempt(lender, borrowed, kNow));

  SECTION("preemptible: false is never a victim") {
    borrowed.preemptible = false;
    CHECK(WhyNotVictim(lender, borrowed, kNow) == "scheduling.preemptible is false");
  }
  SECTION("a job that ran less than its minRuntime is not a victim") {
    borrowed.min_runtime = absl::Hours(2);
    CHECK(WhyNotVictim(lender, borrowed, kNow) == "it has run 1h0m0s of its minRuntime 2h");
    borrowed.min_runtime = absl::Hours(1);
    CHECK(MayPreempt(lender, borrowed, kNow));
  }
  SECTION("a job being preempted for another waiting job is not a victim again") {
    borrowed.being_preempted = true;
    CHECK(WhyNotVictim(lender, borrowed, kNow) == "it is being preempted already");
  }
  SECTION("reclaim: never, lower-priority and any") {
    lender.reclaim = v1::RECLAIM_POLICY_NEVER;
    CHECK(WhyNotVictim(lender, borrowed, kNow) ==
          "project lender does not reclaim what it lent (reclaim: never)");
    lender.reclaim = v1::RECLAIM_POLICY_LOWER_PRIORITY;
    CHECK(WhyNotVictim(lender, borrowed, kNow) == "its priority 9 is not lower than waiting's 5");
    borrowed.priority = 4;
    CHECK(MayPreempt(lender, borrowed, kNow));
  }
  SECTION("only a borrowing project of the same cohort, for a job within its own quota") {
    VictimCandidate lent = Candidate("lent", "c", 0, 1);
    CHECK(WhyNotVictim(lender, lent, kNow) == "project c borrows nothing");
    borrowed.cohort = "other";
    CHECK(WhyNotVictim(lender, borrowed, kNow) == "project b is not in lender's cohort");
    borrowed.cohort = "research";
    lender.fits_own_quota = false;
    CHECK(WhyNotVictim(lender, borrowed, kNow) ==
          "waiting does not fit within project lender's own quota, so there is nothing to "
          "reclaim for it");
  }
  SECTION("within a project: only with preemptWithinProject, only lower priority") {
    VictimCandidate own = Candidate("own", "lender", 4, 1);
    CHECK(WhyNotVictim(lender, own, kNow) ==
          "project lender does not preempt its own jobs (preemptWithinProject: never)");
    lender.within_project = v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY;
    CHECK(MayPreempt(lender, own, kNow));
    own.priority = 5;
    CHECK(WhyNotVictim(lender, own, kNow) == "its priority 5 is not lower than waiting's 5");
    // A project's own jobs need no cohort and no borrowing.
    own.priority = 1;
    own.cohort = "";
    lender.fits_own_quota = false;
    CHECK(MayPreempt(lender, own, kNow));
  }
  SECTION("never the waiting job itself") {
    VictimCandidate self = Candidate("waiting", "lender", 0, 1);
    lender.within_project = v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY;
    CHECK(WhyNotVictim(lender, self, kNow) == "it is the waiting job");
  }
}

TEST_CASE("victims: two waiting jobs never preempt for the same room", "[victims]") {
  // One borrower's job holds the 4 GPUs both lenders' jobs need. The first takes it; the core
  // marks it being preempted, and the second then finds no victim.
  VictimCandidate borrowed = Candidate("borrowed", "b", 0, 4);
  borrowed.borrower = true;
  Preemptor first = Lender(), second = Lender();
  second.job_id = "second";

  std::vector<VictimCandidate> candidates;
  if (MayPreempt(first, borrowed, kNow)) candidates.push_back(borrowed);
  GpuRoom room{4, {}};
  REQUIRE(Ids(ChooseVictims(candidates, std::ref(room))) == std::vector<std::string>{"borrowed"});

  borrowed.being_preempted = true;
  candidates.clear();
  if (MayPreempt(second, borrowed, kNow)) candidates.push_back(borrowed);
  GpuRoom again{4, {}};
  CHECK_FALSE(ChooseVictims(candidates, std::ref(again)).has_value());
  CHECK(again.asked.empty());
}

TEST_CASE("victims: placement decides, not only the sums", "[victims]") {
  // A 4-GPU replica needs one node with 4 GPUs free. Two 2-GPU victims on different nodes free
  // 4 GPUs in all but no node with 4; the one 4-GPU victim does.
  VictimCandidate x = Candidate("x", "b", 0, 2), y = Candidate("y", "b", 0, 2),
                  z = Candidate("z", "b", 5, 4);
  x.allocations = {{"n1", ReplicaDemand{"worker-0", Res{0, 0, 2}, 1}}};
  y.allocations = {{"n2", ReplicaDemand{"worker-0", Res{0, 0, 2}, 1}}};
  z.allocations = {{"n3", ReplicaDemand{"worker-0", Res{0, 0, 4}, 1}}};
  for (VictimCandidate* v : {&x, &y, &z}) v->borrower = true;
  auto one_node_with_four = [](const std::vector<const VictimCandidate*>& victims) {
    std::map<std::string, int64_t> freed;
    for (const VictimCandidate* v : victims) {
      for (const Allocation& a : v->allocations) freed[a.node] += a.demand.need.gpus;
    }
    for (const auto& [node, gpus] : freed) {
      if (gpus >= 4) return true;
    }
    return false;
  };
  CHECK(Ids(ChooseVictims({x, y, z}, one_node_with_four)) == std::vector<std::string>{"z"});
}

}  // namespace
}  // namespace trainctl::sched
