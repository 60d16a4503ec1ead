// Fair share: the ledger's accrual and decay, shares by weight and dominant resource, and the
// admission pass's order across projects (lowest share first, priority only within a project).
#include "scheduler/fair_share.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

std::map<std::string, ProjectUsage> Holding(const std::string& project, Res r) {
  std::map<std::string, ProjectUsage> held;
  held[project].used = r;
  return held;
}

TEST_CASE(
    "fair share: usage accrues while held, decays by its half-life, and is written once a "
    "minute") {
  FairShareOptions options;
  options.half_life = absl::Hours(1);
  FairShare fs(options);
  fs.Accrue({}, kT0);
  CHECK(fs.Find("a") == nullptr);
  // One GPU and 2 cores for an hour, each second decayed as it accrued: 3600 / ln 2 / 2 seconds.
  fs.Accrue(Holding("a", {2, 1024, 1}), kT0 + absl::Hours(1));
  const double hour = 3600 / std::log(2.0) * 0.5;
  REQUIRE(fs.Find("a") != nullptr);
  CHECK(fs.Find("a")->gpu_seconds == Approx(hour));
  CHECK(fs.Find("a")->cpu_seconds == Approx(2 * hour));
  CHECK(fs.Find("a")->memory_mb_seconds == Approx(1024 * hour));
  // An hour holding nothing halves it.
  fs.Accrue({}, kT0 + absl::Hours(2));
  CHECK(fs.Find("a")->gpu_seconds == Approx(hour / 2));

  // Written when first seen, then at most once a minute, and only when changed.
  std::vector<UsageLedger> due = fs.DueRows(kT0 + absl::Hours(2));
  REQUIRE(due.size() == 1);
  CHECK(due[0].project == "a");
  CHECK(due[0].as_of == kT0 + absl::Hours(2));
  fs.Accrue({}, kT0 + absl::Hours(2) + absl::Seconds(30));
  CHECK(fs.DueRows(kT0 + absl::Hours(2) + absl::Seconds(30)).empty());
  fs.Accrue({}, kT0 + absl::Hours(2) + absl::Minutes(1));
  CHECK(fs.DueRows(kT0 + absl::Hours(2) + absl::Minutes(1)).size() == 1);

  // Restored ledgers decay from their own time and are not due until they change.
  FairShare restored(options);
  restored.Restore({*fs.Find("a")});
  CHECK(restored.DueRows(kT0 + absl::Hours(2) + absl::Minutes(1)).empty());
  restored.Accrue({}, kT0 + absl::Hours(3) + absl::Minutes(1));
  CHECK(restored.Find("a")->gpu_seconds == Approx(fs.Find("a")->gpu_seconds / 2));
}

TEST_CASE("fair share: the share is the dominant usage over the cluster, divided by the weight") {
  FairShareOptions options;
  options.half_life = absl::Hours(1000);
  FairShare fs(options);
  fs.Accrue({}, kT0);
  std::map<std::string, ProjectUsage> held;
  held["gpu-team"].used = {1, 0, 2};   // 2 of 8 GPUs
  held["cpu-team"].used = {16, 0, 0};  // 16 of 64 cores
  fs.Accrue(held, kT0 + absl::Seconds(100));
  const Res capacity{64, 0, 8};
  // Both hold a quarter of their dominant resource for 100 s.
  CHECK(fs.Share("gpu-team", 1, capacity) == Approx(25).epsilon(0.01));
  CHECK(fs.Share("cpu-team", 1, capacity) == Approx(25).epsilon(0.01));
  CHECK(fs.Share("gpu-team", 2, capacity) == Approx(12.5).epsilon(0.01));
  CHECK(fs.Share("nobody", 1, capacity) == 0);
  CHECK(fs.AllocationShare({16, 0, 0}, 1, capacity) == Approx(0.25));
  // The resource weights: CPUs count a tenth as much.
  options.cpu_weight = 0.1;
  fs.set_options(options);
  CHECK(fs.Share("cpu-team", 1, capacity) == Approx(2.5).epsilon(0.01));
  // Off: every share is 0, and the queue's order is priority, then submission time.
  options.enabled = false;
  fs.set_options(options);
  CHECK(fs.Share("gpu-team", 1, capacity) == 0);
}

// A core with one node of 4 cpus, where each job takes the whole node.
struct OneNode {
  Core core;
  absl::Time now = kT0;
  explicit OneNode(bool fair_share) : core(Options(fair_share)) {
    Effects fx;
    core.AgentRegistered(Reg("node-a", 4), now, &fx);
  }
  static CoreOptions Options(bool fair_share) {
    CoreOptions o = TestOptions(7);
    o.fair_share.enabled = fair_share;
    return o;
  }
  std::string Submit(const std::string& project, int32_t priority = 0) {
    v1::JobSpec spec = Spec(0, 4);
    spec.set_project(project);
    spec.set_priority(priority);
    Effects fx;
    now += absl::Milliseconds(1);
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, now, &fx);
    REQUIRE(job.ok());
    return (*job)->id;
  }
  // Runs a pass; returns the job it started, or "".
  std::string Pass() {
    Effects fx;
    core.Schedule(now, &fx);
    std::vector<v1::LaunchReplica> launches = Launches(fx);
    if (launches.empty()) return "";
    for (const v1::LaunchReplica& l : launches) {
      Effects started;
      core.ReplicaStarted("node-a", Started(l.run_id()), now, &started);
    }
    return launches[0].job_id();
  }
  // The running job's primary exits 0 after `ran` (the turn accrues usage first, as trainctld's).
  void Finish(const std::string& id, absl::Duration ran) {
    now += ran;
    core.AccrueUsage(now);
    const Job* job = core.FindJob(id);
    Effects fx;
    core.ReplicaExited("node-a", ExitedCode(job->RunIdOf(job->replicas[0]), 0), now, &fx);
  }
};

TEST_CASE("fair share: across projects the lowest share goes first, whatever the priority") {
  for (const bool on : {true, false}) {
    OneNode c(on);
    const std::string first = c.Submit("team-a");
    CHECK(c.Pass() == first);
    c.Finish(first, absl::Hours(1));  // team-a used the node for an hour
    const std::string a = c.Submit("team-a", /*priority=*/100);
    const std::string b = c.Submit("team-b");
    // On: team-b has no usage, so its job goes first despite team-a's priority. Off: priority.
    CHECK(c.Pass() == (on ? b : a));
  }
}

TEST_CASE("fair share: a weight divides the share, priority still orders a project's own jobs") {
  OneNode c(true);
  Quota heavy;
  heavy.project = "team-a";
  heavy.weight = 10;
  Effects fx;
  REQUIRE(c.core.SetQuota(heavy, c.now, &fx).ok());
  const std::string a1 = c.Submit("team-a");
  REQUIRE(c.Pass() == a1);
  c.Finish(a1, absl::Hours(1));
  const std::string b1 = c.Submit("team-b");
  REQUIRE(c.Pass() == b1);
  c.Finish(b1, absl::Minutes(30));
  // team-a used twice as much, but weighs ten times as much: its share is lower.
  const std::string a_low = c.Submit("team-a", 1);
  const std::string a_high = c.Submit("team-a", 5);
  c.Submit("team-b", 100);
  CHECK(c.Pass() == a_high);
  REQUIRE(c.core.ListProjects().size() == 2);
  const v1::Project a_view = c.core.ListProjects()[0];
  CHECK(a_view.name() == "team-a");
  CHECK(a_view.quota().weight() == 10);
  CHECK(a_view.usage().cpu_seconds() > 0);
  CHECK(a_view.usage().share() > 0);
  (void)a_low;
}

TEST_CASE("fair share: projects with no history take turns within one pass") {
  CoreOptions o = TestOptions(9);
  Core core(o);
  Effects fx;
  core.AgentRegistered(Reg("node-a", 4), kT0, &fx);
  core.AgentRegistered(Reg("node-b", 4), kT0, &fx);
  absl::Time now = kT0;
  std::vector<std::string> a, b;
  for (const std::string project : {"team-a", "team-b"}) {
    for (int i = 0; i < 4; ++i) {
      v1::JobSpec spec = Spec(0, 4);
      spec.set_project(project);
      now += absl::Milliseconds(1);
      absl::StatusOr<const Job*> job = core.SubmitJob(spec, now, &fx);
      REQUIRE(job.ok());
      (project == "team-a" ? a : b).push_back((*job)->id);
    }
  }
  Effects pass;
  core.Schedule(now, &pass);
  std::set<std::string> started;
  for (const v1::LaunchReplica& l : Launches(pass)) started.insert(l.job_id());
  // Room for two: one of each, not team-a's first two.
  CHECK(started == std::set<std::string>{a[0], b[0]});
}

TEST_CASE("fair share: a borrower beyond its weighted share of the cohort's nominal quota") {
  // Cohort "research": lender 8 GPUs, weight 2; b and c 0 GPUs, weight 1 each. Fair shares of
  // the 8 GPUs: lender 4, b 2, c 2.
  std::map<std::string, Quota> quotas;
  auto add = [&](const std::string& name, int32_t gpus, double weight) {
    Quota q;
    q.project = name;
    q.gpus = gpus;
    q.cohort = "research";
    q.weight = weight;
    quotas[name] = q;
  };
  add("lender", 8, 2);
  add("b", 0, 1);
  add("c", 0, 1);
  CHECK_FALSE(BeyondCohortShare("b", quotas.at("b"), quotas, Res{0, 0, 2}));
  CHECK(BeyondCohortShare("b", quotas.at("b"), quotas, Res{0, 0, 3}));
  CHECK_FALSE(BeyondCohortShare("lender", quotas.at("lender"), quotas, Res{0, 0, 4}));
  // A resource no member has quota of does not count; no cohort: never.
  CHECK_FALSE(BeyondCohortShare("c", quotas.at("c"), quotas, Res{64, 0, 1}));
  Quota alone;
  alone.project = "alone";
  CHECK_FALSE(BeyondCohortShare("alone", alone, quotas, Res{0, 0, 100}));
  // A project without a row of its own counts with the quota it has (the default's cohort).
  Quota joiner = quotas.at("c");
  joiner.project = "d";
  CHECK(BeyondCohortShare("d", joiner, quotas, Res{0, 0, 2}));  // 8 / 5 = 1.6 GPUs
}

}  // namespace
}  // namespace trainctl::sched
