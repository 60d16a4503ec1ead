// Preemption through the core: a lender with `reclaim` takes its quota back from a borrower's
// job, a higher-priority job preempts its own project's (preemptWithinProject); the victim gets
// the notice, its attempt ends as PREEMPTED when its replicas exit, report a checkpoint or run
// past the grace period, and it waits in the queue in its own place, charged to no budget.
#include <catch2/catch.hpp>

#include "model/model_proto.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched::testing {
namespace {

std::vector<v1::NoticeReplica> Notices(const Effects& fx) {
  std::vector<v1::NoticeReplica> out;
  for (const sched::Command& c : fx.commands) {
    if (c.message.has_notice()) out.push_back(c.message.notice());
  }
  return out;
}

v1::JobSpec GpuJob(const std::string& project, int32_t priority, int gpus) {
  v1::JobSpec spec = Spec(0, 1, 100, gpus);
  spec.set_project(project);
  spec.set_priority(priority);
  return spec;
}

// One node with 4 GPUs; projects "lender" (4 GPUs, reclaim as given) and "borrower" (0 GPUs, may
// borrow 4) in cohort "research"; a fake clock.
struct Cluster {
  Core core{TestOptions(7)};
  absl::Time now = kT0;
  ~Cluster() { CheckUsageOnExit(core); }

  explicit Cluster(v1::ReclaimPolicy reclaim,
                   v1::WithinProjectPreemption within = v1::WITHIN_PROJECT_PREEMPTION_NEVER) {
    Effects fx;
    core.AgentRegistered(Reg("node-g", 16, 65536, 4), now, &fx);
    Quota lender;
    lender.project = "lender";
    lender.gpus = 4;
    lender.cohort = "research";
    lender.reclaim = reclaim;
    lender.preempt_within_project = within;
    Quota borrower;
    borrower.project = "borrower";
    borrower.gpus = 0;
    borrower.cohort = "research";
    borrower.borrowing_limit.gpus = 4;
    borrower.has_borrowing_limit = true;
    REQUIRE(core.SetQuota(lender, now, &fx).ok());
    REQUIRE(core.SetQuota(borrower, now, &fx).ok());
  }

  // Submits and schedules; returns the job id and what the turn did.
  std::string Submit(const v1::JobSpec& spec, Effects* fx) {
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, now, fx);
    REQUIRE(job.ok());
    const std::string id = (*job)->id;
    core.Schedule(now, fx);
    return id;
  }

  // Submits, schedules and confirms every launch: the job RUNNING.
  std::string Run(const v1::JobSpec& spec) {
    Effects fx;
    const std::string id = Submit(spec, &fx);
    for (const v1::LaunchReplica& l : Launches(fx)) {
      Effects started;
      core.ReplicaStarted("node-g", Started(l.run_id()), now, &started);
    }
    REQUIRE(core.FindJob(id)->state == v1::JOB_STATE_RUNNING);
    return id;
  }

  const Job& Get(const std::string& id) { return *core.FindJob(id); }

  // The replica's run exits with `code` now.
  Effects Exit(const std::string& id, const std::string& replica, int code) {
    Effects fx;
    const Job& job = Get(id);
    core.ReplicaExited("node-g", ExitedCode(job.RunIdOf(*job.FindReplica(replica)), code), now,
                       &fx);
    core.Schedule(now, &fx);
    return fx;
  }
};

TEST_CASE("preemption: a lender that reclaims takes its quota back from a borrower's job",
          "[preemption]") {
  Cluster c(v1::RECLAIM_POLICY_ANY);
  const std::string borrowed = c.Run(GpuJob("borrower", 0, 4));

  c.now += absl::Minutes(10);
  Effects fx;
  const std::string urgent = c.Submit(GpuJob("lender", 0, 4), &fx);
  // The borrower's running replica gets the notice, with the grace period's deadline.
  const std::vector<v1::NoticeReplica> notices = Notices(fx);
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].kind() == "preemption");
  CHECK(notices[0].preempting_job() == urgent);
  CHECK(notices[0].signal() == 15);
  CHECK(notices[0].deadline_ms() == absl::ToUnixMillis(c.now + absl::Minutes(5)));
  CHECK(HasEvent(fx, "JobPreempting", "preempted for job " + urgent));
  const Job& victim = c.Get(borrowed);
  REQUIRE(victim.preemption.has_value());
  CHECK(victim.preemption->by == urgent);
  CHECK(victim.state == v1::JOB_STATE_RUNNING);  // its replicas checkpoint first
  CHECK(c.Get(urgent).queue_reason.rfind("PREEMPTING: preempting " + borrowed, 0) == 0);
  REQUIRE(fx.tally.preempted.size() == 1);
  CHECK(fx.tally.preempted[0].reason == "reclaim");

  SECTION("a primary that exits 0 on the notice does not make its job SUCCEEDED") {
    c.now += absl::Seconds(20);
    Effects exited = c.Exit(borrowed, "chief-0", 0);
    const Job& after = c.Get(borrowed);
    CHECK(after.state == v1::JOB_STATE_QUEUED);
    CHECK(after.preemptions == 1);
    REQUIRE(after.attempts.size() == 1);
    CHECK(after.attempts[0].decision == Decision::kPreempt);
    CHECK(after.attempts[0].failure_class == FailureClass::kPreempted);
    CHECK(after.budgets_used == Budgets{});  // charged to no budget
    CHECK(HasEvent(exited, "JobPreempted", "every replica exited"));
    // The room is the lender's at once.
    CHECK(c.Get(urgent).state == v1::JOB_STATE_PENDING);
  }

  SECTION("a checkpoint reported after the notice ends the grace while the replicas run") {
    c.now += absl::Seconds(30);
    Effects reported;
    REQUIRE(
        c.core
            .ReportProgress(borrowed, "chief-0", /*step=*/0, /*checkpoint=*/true, c.now, &reported)
            .ok());
    CHECK(c.Get(borrowed).state == v1::JOB_STATE_QUEUED);
    const std::vector<v1::StopReplica> stops = Stops(reported);
    REQUIRE(stops.size() == 1);  // the usual stop: SIGTERM, stopGracePeriod, SIGKILL
    CHECK(stops[0].grace_period_ms() == 10'000);
    CHECK(HasEvent(reported, "JobPreempted", "a replica reported a checkpoint"));
  }

  SECTION("a replica that ignores the notice is stopped at the deadline") {
    c.now += absl::Minutes(4);
    Effects early;
    c.core.Tick(c.now, &early);
    CHECK(Stops(early).empty());
    c.now += absl::Minutes(1);
    Effects due;
    c.core.Tick(c.now, &due);
    CHECK(c.Get(borrowed).state == v1::JOB_STATE_QUEUED);
    CHECK(Stops(due).size() == 1);
    CHECK(HasEvent(due, "JobPreempted", "its grace period ended"));
    // Once the stop is confirmed, the lender starts.
    Effects confirmed = ConfirmStops(c.core, borrowed, due, absl::ToUnixMillis(c.now));
    c.core.Schedule(c.now, &confirmed);
    CHECK(c.Get(urgent).state == v1::JOB_STATE_PENDING);
    // The borrower waits again, in its own place, not as a retry.
    CHECK(c.Get(borrowed).queue_reason.find("PREEMPTED") == std::string::npos);
  }

  SECTION("a second waiting job does not preempt for the same room") {
    Effects more;
    const std::string second = c.Submit(GpuJob("lender", 0, 4), &more);
    CHECK(Notices(more).empty());
    CHECK(c.Get(second).queue_reason.rfind("PREEMPTING", 0) != 0);
  }
}

TEST_CASE("preemption: by default nobody is preempted", "[preemption]") {
  Cluster c(v1::RECLAIM_POLICY_UNSPECIFIED);
  const std::string borrowed = c.Run(GpuJob("borrower", 0, 4));
  Effects fx;
  const std::string urgent = c.Submit(GpuJob("lender", 10, 4), &fx);
  CHECK(Notices(fx).empty());
  CHECK_FALSE(c.Get(borrowed).preemption.has_value());
  CHECK(c.Get(urgent).queue_reason.rfind("CAPACITY", 0) == 0);
}

TEST_CASE("preemption: reclaim lower-priority spares a borrower's job of higher priority",
          "[preemption]") {
  Cluster c(v1::RECLAIM_POLICY_LOWER_PRIORITY);
  const std::string borrowed = c.Run(GpuJob("borrower", 10, 4));
  Effects fx;
  c.Submit(GpuJob("lender", 5, 4), &fx);
  CHECK(Notices(fx).empty());
  CHECK_FALSE(c.Get(borrowed).preemption.has_value());
}

TEST_CASE("preemption: preemptible false and minRuntime protect a job", "[preemption]") {
  Cluster c(v1::RECLAIM_POLICY_ANY);
  v1::JobSpec spec = GpuJob("borrower", 0, 4);
  SECTION("preemptible: false") { spec.mutable_scheduling()->set_preemptible(false); }
  SECTION("minRuntime not reached") {
    spec.mutable_scheduling()->mutable_min_runtime()->set_seconds(3600);
  }
  const std::string borrowed = c.Run(spec);
  c.now += absl::Minutes(10);
  Effects fx;
  c.Submit(GpuJob("lender", 0, 4), &fx);
  CHECK(Notices(fx).empty());
  CHECK_FALSE(c.Get(borrowed).preemption.has_value());
}

TEST_CASE("preemption: nobody is preempted for a job that would still not fit", "[preemption]") {
  Cluster c(v1::RECLAIM_POLICY_ANY);
  const std::string borrowed = c.Run(GpuJob("borrower", 0, 2));
  // The lender's own job holds 14 of the node's 16 cpus; the borrower's holds 1.
  v1::JobSpec cpus = GpuJob("lender", 0, 0);
  cpus.mutable_worker_pools(0)->mutable_resources()->set_cpu(14);
  c.Run(cpus);
  Effects fx;
  // Within the lender's quota (2 GPUs), but 4 cpus: with the borrower gone 2 are free.
  v1::JobSpec spec = GpuJob("lender", 0, 2);
  spec.mutable_worker_pools(0)->mutable_resources()->set_cpu(4);
  c.Submit(spec, &fx);
  CHECK(Notices(fx).empty());
  CHECK_FALSE(c.Get(borrowed).preemption.has_value());
}

TEST_CASE("preemption: within a project, a higher-priority job preempts a lower one",
          "[preemption]") {
  Cluster c(v1::RECLAIM_POLICY_NEVER, v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
  const std::string low = c.Run(GpuJob("lender", 1, 4));
  Effects fx;
  const std::string high = c.Submit(GpuJob("lender", 9, 4), &fx);
  REQUIRE(Notices(fx).size() == 1);
  CHECK(c.Get(low).preemption->by == high);
  REQUIRE(fx.tally.preempted.size() == 1);
  CHECK(fx.tally.preempted[0].reason == "priority");

  // Preempted, it waits in its own place and counts no queue timeout of a retry; once the
  // high-priority job is done, it runs again as attempt 2.
  Effects exited = c.Exit(low, "chief-0", 143);
  CHECK(c.Get(low).state == v1::JOB_STATE_QUEUED);
  CHECK_FALSE(AdmissionQueue::QueueTimeoutOf(c.Get(low)).has_value());
  CHECK(c.Get(high).state == v1::JOB_STATE_PENDING);
}

}  // namespace
}  // namespace trainctl::sched::testing

namespace trainctl::sched::testing {
namespace {

TEST_CASE(
    "preemption: a borrower beyond its fair share of the cohort is a victim before one "
    "within it",
    "[preemption]") {
  // 8 GPUs; lender (6 GPUs, reclaims any), wide and narrow (1 GPU each, may borrow 8), one cohort
  // of weight 1 each: fair shares of 8/3 GPUs.
  Core core{TestOptions(9)};
  absl::Time now = kT0;
  Effects fx;
  core.AgentRegistered(Reg("node-g", 16, 65536, 8), now, &fx);
  auto quota = [&](const std::string& project, int32_t gpus, v1::ReclaimPolicy reclaim) {
    Quota q;
    q.project = project;
    q.gpus = gpus;
    q.cohort = "research";
    q.reclaim = reclaim;
    q.borrowing_limit.gpus = 8;
    q.has_borrowing_limit = true;
    REQUIRE(core.SetQuota(q, now, &fx).ok());
  };
  quota("lender", 6, v1::RECLAIM_POLICY_ANY);
  quota("wide", 1, v1::RECLAIM_POLICY_NEVER);
  quota("narrow", 1, v1::RECLAIM_POLICY_NEVER);
  auto run = [&](const v1::JobSpec& spec) {
    Effects ran;
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, now, &ran);
    REQUIRE(job.ok());
    const std::string id = (*job)->id;
    core.Schedule(now, &ran);
    for (const v1::LaunchReplica& l : Launches(ran)) {
      Effects started;
      core.ReplicaStarted("node-g", Started(l.run_id()), now, &started);
    }
    return id;
  };
  // wide holds 4 GPUs (beyond 8/3), from earlier, with more work to lose; narrow holds 2 (within)
  // and started last: on priority, work lost and start alone it would go first.
  const std::string wide = run(GpuJob("wide", 0, 4));
  REQUIRE(core.FindJob(wide)->state == v1::JOB_STATE_RUNNING);
  now += absl::Minutes(30);
  const std::string narrow = run(GpuJob("narrow", 0, 2));
  REQUIRE(core.FindJob(narrow)->state == v1::JOB_STATE_RUNNING);
  now += absl::Minutes(1);
  Effects submitted;
  absl::StatusOr<const Job*> urgent = core.SubmitJob(GpuJob("lender", 0, 4), now, &submitted);
  REQUIRE(urgent.ok());
  core.Schedule(now, &submitted);
  // 2 GPUs are free: either victim would do. The one beyond its share goes.
  const std::vector<v1::NoticeReplica> notices = Notices(submitted);
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].run_id() == core.FindJob(wide)->RunIdOf(core.FindJob(wide)->replicas[0]));
  CHECK(core.FindJob(wide)->preemption.has_value());
  CHECK_FALSE(core.FindJob(narrow)->preemption.has_value());
}

}  // namespace
}  // namespace trainctl::sched::testing
