// Quota-gated admission (R1, R17): quota arithmetic, order, gang fit, strict and best-effort
// FIFO, borrowing and reclaim, queue timeouts and the blockers a user sees. Fake clock.
#include "scheduler/admission.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

v1::Quota GpusQuota(const std::string& project, int gpus) {
  v1::Quota q;
  q.set_project(project);
  q.set_gpus(gpus);
  return q;
}

TEST_CASE("EvaluateQuota: fits, blocked, never fits, borrowing") {
  v1::Quota q = GpusQuota("team-a", 8);
  ProjectUsage in_use{{0, 0, 4}, 1};
  SECTION("fits within the quota") {
    QuotaEval e = EvaluateQuota("team-a", QuotaFromProto(q), in_use, {0, 0, 4}, {});
    CHECK(e.fits_now);
    CHECK(e.fits_ever);
  }
  SECTION("blocked by what is in use, with numbers and a sentence") {
    QuotaEval e = EvaluateQuota("team-a", QuotaFromProto(q), in_use, {0, 0, 8}, {});
    CHECK(!e.fits_now);
    CHECK(e.fits_ever);
    REQUIRE(e.blockers.size() == 1);
    CHECK(e.blockers[0].kind() == "QUOTA");
    CHECK(e.blockers[0].resource() == "gpus");
    CHECK(e.blockers[0].needed() == 8);
    CHECK(e.blockers[0].in_use() == 4);
    CHECK(e.blockers[0].limit() == 8);
    CHECK(e.blockers[0].message() == "QUOTA: project team-a needs 8 gpus, 4 of 8 in use by 1 job");
  }
  SECTION("larger than the quota itself never fits") {
    QuotaEval e = EvaluateQuota("team-a", QuotaFromProto(q), {}, {0, 0, 16}, {});
    CHECK(!e.fits_ever);
    CHECK(e.blockers[0].message().find("quota is 8 gpus") != std::string::npos);
  }
  SECTION("borrowing covers what is over the quota") {
    q.set_cohort("research");
    q.mutable_borrowing_limit()->set_gpus(4);
    QuotaEval e = EvaluateQuota("team-a", QuotaFromProto(q), in_use, {0, 0, 8}, {0, 0, 4});
    CHECK(e.fits_now);
    CHECK(e.borrows.gpus == 4);
    CHECK(EvaluateQuota("team-a", QuotaFromProto(q), in_use, {0, 0, 10}, {0, 0, 4}).fits_now ==
          false);
  }
  SECTION("max running jobs") {
    q.set_max_running_jobs(1);
    QuotaEval e = EvaluateQuota("team-a", QuotaFromProto(q), in_use, {0, 0, 1}, {});
    CHECK(!e.fits_now);
    CHECK(e.blockers[0].resource() == "runningJobs");
    CHECK(e.blockers[0].message() == "QUOTA: project team-a runs 1 of 1 jobs (maxRunningJobs)");
  }
  SECTION("unlimited resources never block") {
    v1::Quota open;
    open.set_project("x");
    CHECK(EvaluateQuota("x", QuotaFromProto(open), in_use, {1000, 1 << 20, 1000}, {}).fits_now);
  }
}

TEST_CASE("ValidateQuota names the field") {
  v1::Quota q = GpusQuota("team-a", -1);
  CHECK(ValidateQuota(q).message() == "quota.gpus must be >= 0, got -1");
  q.set_gpus(1);
  q.set_project("Team A");
  CHECK(ValidateQuota(q).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("ValidateQuota takes a portable user name as runAsUser") {
  struct Row {
    std::string user;
    bool valid;
  };
  const Row rows[] = {
      {"", true},  // the agent's default
      {"nobody", true},
      {"svc_train-01.a", true},
      {"root", true},  // the project's permission; agents still need --allow-root-replicas
      {std::string(32, 'a'), true},
      {std::string(33, 'a'), false},
      {"-rf", false},
      {"a b", false},
      {"user:1", false},
      {"ü", false},
      {"0", false},  // numeric ids: agents look users up by name
      {"00", false},
      {"1000", false},
      {"u1000", true},
  };
  for (const Row& row : rows) {
    v1::Quota q;
    q.set_project("team-a");
    q.set_run_as_user(row.user);
    INFO(row.user);
    CHECK(ValidateQuota(q).ok() == row.valid);
    if (!row.valid) CHECK(absl::StrContains(ValidateQuota(q).message(), "quota.runAsUser"));
  }
}

TEST_CASE("ValidateQuota refuses a numeric runAsUser, pointing uid 0 at \"root\"") {
  v1::Quota q;
  q.set_project("team-a");
  for (const char* zero : {"0", "00"}) {
    q.set_run_as_user(zero);
    CHECK(ValidateQuota(q).message() ==
          absl::StrCat("quota.runAsUser must be a user name, not a numeric id; got \"", zero,
                       "\": root is asked for with \"root\", and replicas run as root only on "
                       "agents started with --allow-root-replicas"));
  }
  q.set_run_as_user("1000");
  CHECK(ValidateQuota(q).message() ==
        "quota.runAsUser must be a user name, not a numeric id; got \"1000\": agents look users "
        "up by name");
}

// Nodes with 8 gpus each (two by default). Every launch is confirmed at once, as an agent would.
struct Cluster {
  Core core{TestOptions(3)};
  ~Cluster() { CheckUsageOnExit(core); }
  int64_t now = 1'000'000;
  explicit Cluster(int nodes = 2) {
    Effects fx;
    for (int i = 0; i < nodes; ++i) {
      core.AgentRegistered(Reg(std::string("node-") + char('a' + i), 64, 1 << 20, 8), FromMs(now),
                           &fx);
    }
  }
  std::string Submit(const std::string& project, int gpus, int priority = 0) {
    v1::JobSpec spec = Spec(0, 1, 100, gpus);
    spec.set_project(project);
    spec.set_priority(priority);
    Effects fx;
    now += 1;
    auto job = AsView(core.SubmitJob(spec, FromMs(now), &fx));
    REQUIRE(job.ok());
    return job->id();
  }
  void SetQuota(const v1::Quota& q) {
    Effects fx;
    REQUIRE(core.SetQuota(QuotaFromProto(q), FromMs(now), &fx).ok());
  }
  // Returns the launches sent.
  std::vector<v1::LaunchReplica> Schedule() {
    Effects fx;
    core.Tick(FromMs(now), &fx);
    core.Schedule(FromMs(now), &fx);
    for (const v1::LaunchReplica& l : Launches(fx)) {
      const v1::Job& job = View(core, l.job_id());
      Effects started;
      core.ReplicaStarted(job.replicas(0).node(), Started(l.run_id()), FromMs(now), &started);
    }
    return Launches(fx);
  }
  v1::JobState State(const std::string& id) { return View(core, id).state(); }
  // Ends a placed job as if its primary exited 0.
  void Finish(const std::string& id) {
    const v1::Job& job = View(core, id);
    Effects fx;
    std::string run = MakeRunId(id, job.attempts_size(), "chief-0", 0);
    core.ReplicaExited(job.replicas(0).node(), ExitedCode(run, 0), FromMs(now), &fx);
  }
  bool Queued(const std::string& id) { return State(id) == v1::JOB_STATE_QUEUED; }
};

TEST_CASE("a job is admitted only when its whole demand fits the quota (gang admission)") {
  Cluster c;
  c.SetQuota(GpusQuota("team-a", 8));
  std::string a = c.Submit("team-a", 6);
  std::string b = c.Submit("team-a", 4);  // 6 + 4 > 8
  c.Schedule();
  CHECK(c.State(a) == v1::JOB_STATE_RUNNING);
  CHECK(c.Queued(b));
  v1::Job view = c.core.View(*c.core.FindJob(b), FromMs(c.now));
  REQUIRE(view.queue_status().blockers_size() >= 1);
  CHECK(view.queue_status().blockers(0).message() ==
        "QUOTA: project team-a needs 4 gpus, 6 of 8 in use by 1 job");
  CHECK(view.queue_status().position() == 1);
  c.Finish(a);
  c.Schedule();
  CHECK(c.State(b) == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a launch carries the project and its quota's runAsUser as of the launch") {
  Cluster c;
  v1::Quota q = GpusQuota("team-a", 8);
  q.set_run_as_user("trainer");
  c.SetQuota(q);
  std::string a = c.Submit("team-a", 1);
  std::string b = c.Submit("team-b", 1);  // the default quota: no user
  std::vector<v1::LaunchReplica> launches = c.Schedule();
  REQUIRE(launches.size() == 2);
  for (const v1::LaunchReplica& l : launches) {
    CHECK(l.project() == (l.job_id() == a ? "team-a" : "team-b"));
    CHECK(l.run_as_user() == (l.job_id() == a ? "trainer" : ""));
  }
  q.set_run_as_user("other");
  c.SetQuota(q);
  c.Finish(a);
  std::string d = c.Submit("team-a", 1);
  launches = c.Schedule();
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].job_id() == d);
  CHECK(launches[0].run_as_user() == "other");
  c.Finish(b);
  c.Finish(d);
}

TEST_CASE("raising a quota admits waiting jobs at once, lowering it stops nothing") {
  Cluster c;
  c.SetQuota(GpusQuota("team-a", 2));
  std::string a = c.Submit("team-a", 2);
  std::string b = c.Submit("team-a", 2);
  c.Schedule();
  CHECK(c.Queued(b));
  c.SetQuota(GpusQuota("team-a", 4));
  c.Schedule();
  CHECK(c.State(b) == v1::JOB_STATE_RUNNING);
  c.SetQuota(GpusQuota("team-a", 0));
  c.Schedule();
  CHECK(c.State(a) == v1::JOB_STATE_RUNNING);
  CHECK(c.State(b) == v1::JOB_STATE_RUNNING);
}

TEST_CASE("order: retries first, then priority, then submission") {
  Cluster c;
  v1::Quota q;
  q.set_project("team-a");
  q.set_max_running_jobs(1);
  c.SetQuota(q);
  std::string running = c.Submit("team-a", 1);
  c.Schedule();
  std::string low = c.Submit("team-a", 1, 0);
  std::string high = c.Submit("team-a", 1, 5);
  std::vector<v1::Job> queue = c.core.ListQueue("", 100, FromMs(c.now));
  REQUIRE(queue.size() == 2);
  CHECK(queue[0].id() == high);
  CHECK(queue[1].id() == low);
  CHECK(queue[1].queue_status().position() == 2);
  CHECK(queue[1].queue_status().jobs_ahead_count() == 1);
  bool priority = false;
  for (const v1::Blocker& b : queue[1].queue_status().blockers()) {
    priority |= b.message() == "PRIORITY: 1 job ahead in team-a";
  }
  CHECK(priority);
  c.Finish(running);
  c.Schedule();
  CHECK(c.State(high) == v1::JOB_STATE_RUNNING);
  CHECK(c.Queued(low));
}

TEST_CASE("STRICT_FIFO: a blocked large job is never overtaken by small ones") {
  Cluster c;
  c.SetQuota(GpusQuota("team-a", 8));
  std::string first = c.Submit("team-a", 6);
  c.Schedule();
  std::string large = c.Submit("team-a", 8);  // waits for `first`
  std::string small = c.Submit("team-a", 1);  // would fit, but is behind `large`
  for (int i = 0; i < 5; ++i) {
    c.now += 60'000;
    c.Schedule();
  }
  CHECK(c.Queued(large));
  CHECK(c.Queued(small));
  c.Finish(first);
  c.Schedule();
  CHECK(c.State(large) == v1::JOB_STATE_RUNNING);
  CHECK(c.Queued(small));
}

TEST_CASE("a job larger than its quota waits without holding back the jobs behind it") {
  Cluster c;
  c.SetQuota(GpusQuota("team-a", 4));
  std::string huge = c.Submit("team-a", 8);
  std::string small = c.Submit("team-a", 1);
  c.Schedule();
  CHECK(c.Queued(huge));
  CHECK(View(c.core, huge).queue_reason().find("quota is 4 gpus") != std::string::npos);
  CHECK(c.State(small) == v1::JOB_STATE_RUNNING);
}

TEST_CASE("BEST_EFFORT_FIFO: small jobs go past a blocked one until its starvation limit") {
  Cluster c;
  v1::Quota q = GpusQuota("team-a", 8);
  q.set_queueing_strategy(v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  q.mutable_starvation_limit()->set_seconds(600);
  c.SetQuota(q);
  std::string first = c.Submit("team-a", 6);
  c.Schedule();
  std::string large = c.Submit("team-a", 8);
  std::string small1 = c.Submit("team-a", 1);
  c.Schedule();
  CHECK(c.State(small1) == v1::JOB_STATE_RUNNING);  // backfilled
  c.now += 601'000;  // `large` has been overtaken for its starvation limit
  std::string small2 = c.Submit("team-a", 1);
  c.Schedule();
  CHECK(c.Queued(small2));  // the project is strict again until `large` runs
  c.Finish(first);
  c.Finish(small1);
  c.Schedule();
  CHECK(c.State(large) == v1::JOB_STATE_RUNNING);
}

TEST_CASE("cohorts: a project borrows unused quota, and the owner reclaims it without preemption") {
  Cluster c(1);  // 8 gpus: exactly the cohort's quota
  v1::Quota a = GpusQuota("team-a", 4);
  a.set_cohort("research");
  a.mutable_borrowing_limit()->set_gpus(4);
  v1::Quota b = GpusQuota("team-b", 4);
  b.set_cohort("research");
  c.SetQuota(a);
  c.SetQuota(b);
  std::string borrower = c.Submit("team-a", 8);  // 4 own + 4 borrowed from team-b
  c.Schedule();
  CHECK(c.State(borrower) == v1::JOB_STATE_RUNNING);
  auto projects = c.core.ListProjects();
  REQUIRE(projects.size() == 2);
  CHECK(projects[0].borrowed().gpus() == 4);

  std::string owner = c.Submit("team-b", 4);
  std::string more = c.Submit("team-a", 1);
  c.Schedule();
  CHECK(c.State(borrower) == v1::JOB_STATE_RUNNING);  // no preemption
  CHECK(c.Queued(owner));                             // waits for its quota to come back
  CHECK(c.Queued(more));                              // and nobody borrows it meanwhile
  c.Finish(borrower);
  c.Schedule();
  CHECK(c.State(owner) == v1::JOB_STATE_RUNNING);
  CHECK(c.State(more) == v1::JOB_STATE_RUNNING);
}

TEST_CASE("queueTimeout fails a job that waited too long, saying for what") {
  Cluster c;
  c.SetQuota(GpusQuota("team-a", 1));
  std::string running = c.Submit("team-a", 1);
  v1::JobSpec spec = Spec(0, 1, 100, 1);
  spec.set_project("team-a");
  spec.mutable_scheduling()->mutable_queue_timeout()->set_seconds(60);
  Effects fx;
  std::string id = AsView(c.core.SubmitJob(spec, FromMs(c.now), &fx))->id();
  c.Schedule();
  CHECK(c.State(running) == v1::JOB_STATE_RUNNING);
  c.now += 59'000;
  c.Schedule();
  CHECK(c.Queued(id));
  c.now += 2'000;
  c.Schedule();
  const v1::Job& job = View(c.core, id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 4);
  CHECK(job.error().message().find("Job waited 1m1s in the queue (queueTimeout 1m0s)") == 0);
  CHECK(job.error().message().find("QUOTA: project team-a needs 1 gpus, 1 of 1 in use by 1 job") !=
        std::string::npos);
  CHECK(c.State(running) == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a retrying job gives up after 30 minutes in the queue (R17)") {
  Cluster c;
  v1::JobSpec spec = Spec(0, 1, 100, 1);
  spec.mutable_scheduling()->mutable_placement_timeout()->set_seconds(3600);  // no stockout
  Effects submit;
  std::string id = AsView(c.core.SubmitJob(spec, FromMs(c.now), &submit))->id();
  c.Schedule();
  const v1::Job& placed = View(c.core, id);
  std::string run = MakeRunId(id, 1, "chief-0", 0);
  std::string node = placed.replicas(0).node();
  Effects fx;
  c.core.ReplicaStarted(node, Started(run), FromMs(c.now), &fx);
  c.core.AgentDisconnected("node-a", FromMs(c.now), &fx);
  c.core.AgentDisconnected("node-b", FromMs(c.now), &fx);
  // The agent comes back without the run: internal error, retry; but no node is connected now.
  v1::Register reg = Reg(node, 64, 1 << 20, 8);
  reg.set_agent_instance("new");
  c.core.AgentRegistered(reg, FromMs(c.now), &fx);
  c.core.AgentDisconnected(node, FromMs(c.now), &fx);
  CHECK(c.Queued(id));
  c.now += 29 * 60'000;
  c.Schedule();
  CHECK(c.Queued(id));
  c.now += 2 * 60'000;
  c.Schedule();
  CHECK(c.State(id) == v1::JOB_STATE_FAILED);
  CHECK(View(c.core, id).error().message().find("for a retry") != std::string::npos);
}

}  // namespace
}  // namespace trainctl::sched
